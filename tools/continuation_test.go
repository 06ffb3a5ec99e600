package tools

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
)

// TestPreviewManifestCursor_ContinuesInGetSelection follows the path an
// agent takes: the manifest cursor preview_selection hands out is given,
// as it is, to get_selection, whose own cursors are followed until none is
// left. Every member arrives once, and the first page is not repeated.
func TestPreviewManifestCursor_ContinuesInGetSelection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(map[string]any{"page_size": 7}))
	if p.env.Problem != nil {
		t.Fatalf("preview: %+v", p.env.Problem)
	}
	manifest := p.data["manifest"].(map[string]any)
	cursor, _ := manifest["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("the preview's manifest has no next_cursor: %v", manifest)
	}
	seen := map[string]int{}
	for _, it := range manifest["items"].([]any) {
		seen[it.(map[string]any)["id"].(string)]++
	}
	for hop := 0; cursor != ""; hop++ {
		if hop > 500 {
			t.Fatal("get_selection never ended")
		}
		g := h.call("get_selection", map[string]any{"selection_id": p.data["selection_id"], "cursor": cursor})
		if g.env.Problem != nil {
			t.Fatalf("get_selection refused the cursor %s handed out: %+v %+v", map[bool]string{true: "preview_selection", false: "get_selection"}[hop == 0], g.env.Problem, g.env.Problem.Errors)
		}
		for _, id := range g.ids() {
			seen[id]++
		}
		cursor = ""
		if g.env.Continuation.Kind == envelope.ContinueNextCursor {
			cursor = g.env.Continuation.Cursor
		}
	}
	members := h.members(p.data["selection_id"])
	if len(seen) != len(members) {
		t.Fatalf("followed cursors delivered %d members, the selection has %d", len(seen), len(members))
	}
	for _, id := range members {
		if seen[id] != 1 {
			t.Fatalf("member %s delivered %d times", id, seen[id])
		}
	}
}

// replicaOn is one airlock process in a continuation trial: its own runtime
// and deps over the store every replica shares, with the same secret.
func replicaOn(t fataler, yaml []byte, storePath string, secret []byte) *direct {
	t.Helper()
	store, err := sqlitestore.Open(context.Background(), storePath)
	if err != nil {
		t.Fatal(err)
	}
	d := newDirect(t, yaml, func(c *Config) { c.Store, c.Secret = store, secret })
	d.closers = append(d.closers, func() { store.Close() })
	return d
}

// TestPropertyEveryContinuation_IsAcceptedWhereItIsNamed follows, as an
// agent does, every cursor a tool hands out into the tool it names, on
// whichever of two replicas (sharing a store and a secret) a balancer
// picks: search_all's continuation (and a restart, which begins again),
// preview_selection's manifest cursor into get_selection and on, and
// get_operation's pages. Every cursor is accepted, and each set arrives
// whole and once.
func TestPropertyEveryContinuation_IsAcceptedWhereItIsNamed(t *testing.T) {
	t.Parallel()
	checks := map[string]int{}
	var mu sync.Mutex
	count := func(what string) { mu.Lock(); checks[what]++; mu.Unlock() }
	rapid.Check(t, func(rt *rapid.T) {
		srv := &fixtures.Server{Token: canaryToken, AdminToken: canaryAdmin}
		var f fixtures.Faults
		fault := rapid.IntRange(0, 4).Draw(rt, "fault")
		mutates := fault == 2 || fault == 4
		switch fault {
		case 1:
			f.MaxPageSize = rapid.IntRange(3, 40).Draw(rt, "max_page_size")
		case 2, 4:
			// Records deleted between pages: a scan that sees it restarts.
			f.MaxPageSize = 10
			f.Mutate = func(n int, c *fixtures.Collection) {
				if n == 3 && len(c.All()) > 0 {
					c.Delete(c.All()[0].ID())
				}
			}
		case 3:
			f.ResultCap = rapid.IntRange(5, 120).Draw(rt, "result_cap")
		}
		for _, ds := range []string{fixtures.DatasetSubscriptions, fixtures.DatasetServiceAccounts, fixtures.DatasetProjects} {
			// A prefix of each data set keeps a trial to a few hundred
			// calls: enough records for several pages of every cursor,
			// and, in subscriptions (the preview's), for a manifest that
			// outlasts its first page and get_selection's next one (50).
			all := srv.Collection(ds).All()
			sizes := []int{0, 5, 40, 90}
			if ds == fixtures.DatasetSubscriptions {
				sizes = []int{0, 5, 90, 250}
			}
			n := rapid.SampledFrom(sizes).Draw(rt, "records")
			if mutates && ds == fixtures.DatasetSubscriptions {
				n = 60 // six pages of ten: the deletes fall between two
			}
			srv.SetCollection(ds, fixtures.NewCollection(all[:min(len(all), n)]))
			srv.SetFaults(ds, f)
		}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		dir, err := os.MkdirTemp("", "airlock-continuation-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		yaml := fixtures.DemoConfig(ts.URL)
		secret := []byte("continuation trial secret, 32+ characters long")
		replicas := []*direct{replicaOn(rt, yaml, filepath.Join(dir, "airlock.db"), secret), replicaOn(rt, yaml, filepath.Join(dir, "airlock.db"), secret)}
		defer func() {
			for _, r := range replicas {
				r.close()
			}
		}()
		pick := func() *direct { return replicas[rapid.IntRange(0, 1).Draw(rt, "replica")] }
		accepted := func(tool string, env *envelope.Envelope) {
			if env.Problem != nil {
				rt.Fatalf("%s refused a continuation it was handed: %+v %+v", tool, env.Problem, env.Problem.Errors)
			}
		}

		// search_all: every next_cursor continues the same scan; a restart
		// begins a new one.
		resource := rapid.SampledFrom([]string{"subscriptions", "service_accounts", "projects"}).Draw(rt, "resource")
		maxPages := rapid.SampledFrom([]int{1, 2, 50}).Draw(rt, "max_pages")
		if mutates {
			// The offset dialect sees a delete between its pages.
			resource, maxPages = "subscriptions", 50
		}
		args := map[string]any{"resource": resource, "max_items": rapid.SampledFrom([]int{3, 9, 60}).Draw(rt, "max_items"),
			"max_pages": maxPages, "fields": []any{"id"}}
		if resource == "subscriptions" && rapid.Bool().Draw(rt, "filtered") {
			args["filter"] = map[string]any{"region": rapid.SampledFrom([]string{"eu", "us", "apac"}).Draw(rt, "region")}
		}
		seen, restarts := map[string]bool{}, 0
		for hop := 0; ; hop++ {
			if hop > 2000 {
				rt.Fatal("search_all never ended")
			}
			env, data := pick().call("search_all", args)
			accepted("search_all", env)
			for _, id := range dataIDs(data) {
				if seen[id] {
					rt.Fatalf("%s delivered twice over one scan's continuation", id)
				}
				seen[id] = true
			}
			if env.Complete {
				if total := int(data["total_matched"].(float64)); total != len(seen) {
					rt.Fatalf("complete after %d hop(s) with %d items delivered, total_matched %d", hop, len(seen), total)
				}
				count("search complete")
				break
			}
			switch env.Continuation.Kind {
			case envelope.ContinueNextCursor:
				args["cursor"] = env.Continuation.Cursor
				count("search cursor")
				continue
			case envelope.ContinueRestart:
				if restarts++; restarts <= 2 {
					delete(args, "cursor")
					seen = map[string]bool{}
					count("search restart")
					continue
				}
			}
			count("search partial")
			break
		}

		// preview_selection → get_selection: the manifest's own cursor,
		// given alone, continues the manifest it came from.
		region := rapid.SampledFrom([]string{"eu", "us", "apac"}).Draw(rt, "preview_region")
		preview := map[string]any{"resource": "subscriptions", "filter": map[string]any{"region": region},
			"action":    map[string]any{"type": "add_tag", "params": map[string]any{"tag": "reviewed"}},
			"page_size": rapid.IntRange(1, 30).Draw(rt, "page_size"), "max_pages": 500}
		if rapid.Bool().Draw(rt, "review_fields") {
			preview["fields"] = []any{"id", "region"}
		}
		env, data := pick().call("preview_selection", preview)
		accepted("preview_selection", env)
		manifest := data["manifest"].(map[string]any)
		members := map[string]int{}
		for _, it := range manifest["items"].([]any) {
			members[it.(map[string]any)["id"].(string)]++
		}
		cursor, _ := manifest["next_cursor"].(string)
		for hop := 0; cursor != ""; hop++ {
			if hop > 2000 {
				rt.Fatal("get_selection never ended")
			}
			g, gd := pick().call("get_selection", map[string]any{"selection_id": data["selection_id"], "cursor": cursor})
			accepted("get_selection", g)
			for _, it := range gd["items"].([]any) {
				members[it.(map[string]any)["id"].(string)]++
			}
			cursor = ""
			if g.Continuation.Kind == envelope.ContinueNextCursor {
				cursor = g.Continuation.Cursor
				count("manifest cursor")
			}
		}
		want := int(data["counts"].(map[string]any)["members"].(float64))
		if len(members) != want {
			rt.Fatalf("the manifest's cursors delivered %d members, the selection has %d", len(members), want)
		}
		for id, n := range members {
			if n != 1 {
				rt.Fatalf("member %s delivered %d times", id, n)
			}
		}

		// commit_bulk_action → get_operation: every page of the targets.
		if data["committable"] != true || want == 0 {
			return
		}
		c, cd := pick().call("commit_bulk_action", map[string]any{"selection_id": data["selection_id"], "expected_digest": data["digest"],
			"action": preview["action"], "mode": rapid.SampledFrom([]string{"dry_run", "execute"}).Draw(rt, "mode"), "wait_ms": 30000})
		accepted("commit_bulk_action", c)
		opArgs := map[string]any{"operation_id": cd["operation_id"], "page_size": rapid.IntRange(1, 40).Draw(rt, "op_page_size")}
		targets := map[string]int{}
		for hop := 0; ; hop++ {
			if hop > 2000 {
				rt.Fatal("get_operation never ended")
			}
			o, od := pick().call("get_operation", opArgs)
			accepted("get_operation", o)
			if od["status"] == "running" {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			for _, r := range od["results"].([]any) {
				targets[r.(map[string]any)["id"].(string)]++
			}
			if o.Continuation.Kind != envelope.ContinueNextCursor {
				break
			}
			opArgs["cursor"] = o.Continuation.Cursor
			count("operation cursor")
		}
		if len(targets) != want {
			rt.Fatalf("get_operation's cursors delivered %d targets, the operation has %d", len(targets), want)
		}
		for id, n := range targets {
			if n != 1 {
				rt.Fatalf("target %s delivered %d times", id, n)
			}
		}
	})
	t.Logf("continuations followed: %v", checks)
	for _, what := range []string{"search cursor", "search restart", "manifest cursor", "operation cursor"} {
		if checks[what] == 0 {
			t.Errorf("no %s was followed: the property checked nothing there", what)
		}
	}
}
