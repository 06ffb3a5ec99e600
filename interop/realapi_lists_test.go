package interop

// airlock against the lists real APIs have, on real servers: Django REST
// Framework (next URLs in the body, with and without a count, an opaque
// cursor inside next, django-filter's __in and __isnull) and PostGraphile
// (GraphQL connections, conditions, mutations). Every answer is checked
// against the server's own rows, read from its database.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/draft"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// withStore gives the airlock of startAirlock a SQLite store, so that its
// write tools work.
func withStore(t *testing.T, a *airlock) *airlock {
	t.Helper()
	rt := a.runtime
	store, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	d := mustDeps(t, tools.Config{Runtime: rt, Store: store})
	t.Cleanup(d.Engine.Wait)
	for _, s := range d.Specs() {
		v, err := envelope.CompileSchema(s.Name, s.OutputSchema())
		if err != nil {
			t.Fatal(err)
		}
		a.specs[s.Name], a.schemas[s.Name] = s, v
	}
	return a
}

// tool calls any tool and returns its envelope decoded.
func (a *airlock) tool(t *testing.T, name string, args map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	env := a.specs[name].Handler(t.Context(), &tools.Call{RequestID: "interop", Raw: raw})
	env.Finish()
	b := env.Marshal()
	if err := a.schemas[name].Validate(b); err != nil {
		t.Fatalf("%s result breaks its output schema: %v\n%s", name, err, b)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if p, ok := out["problem"].(map[string]any); ok {
		t.Fatalf("%s: problem %v: %v", name, p["code"], p["detail"])
	}
	return out
}

// listCases is the table every list style of both servers runs: counts,
// ids, any-of (with a value holding a comma), null, "" and a team holding
// the separator alone.
func listCases(resource string, correct bool) []upstreamCase {
	team := func(teams ...any) func(upstreams.Record) bool { return valueIn("team", teams...) }
	return []upstreamCase{
		{name: "every_account", resource: resource, correct: correct},
		{name: "one_status", resource: resource, filter: map[string]any{"status": "archived"}, keep: valueIn("status", "archived"), correct: correct},
		{name: "any_of_statuses", resource: resource, filter: map[string]any{"status": []any{"active", "disabled"}},
			keep: valueIn("status", "active", "disabled"), correct: correct},
		{name: "the_comma_team_alone", resource: resource, filter: map[string]any{"team": upstreams.CommaTeam}, keep: team(upstreams.CommaTeam), correct: correct},
		{name: "any_of_teams_with_the_comma_team", resource: resource, filter: map[string]any{"team": []any{"payments", upstreams.CommaTeam}},
			keep: team("payments", upstreams.CommaTeam), correct: correct},
		{name: "any_of_teams_without_a_comma", resource: resource, filter: map[string]any{"team": []any{"payments", "platform"}},
			keep: team("payments", "platform"), correct: correct},
		{name: "no_owner_null", resource: resource, filter: map[string]any{"owner": nil}, keep: func(r upstreams.Record) bool { return r["owner"] == nil }, correct: correct},
		{name: "owner_empty_string", resource: resource, filter: map[string]any{"owner": ""}, keep: valueIn("owner", ""), correct: correct},
		{name: "active_in_the_comma_team", resource: resource, filter: map[string]any{"status": "active", "team": upstreams.CommaTeam},
			keep: func(r upstreams.Record) bool { return r["status"] == "active" && r["team"] == upstreams.CommaTeam }, correct: correct},
	}
}

// TestDRF_EveryListStyleCompleteOnlyWithTheServersRecords runs airlock
// against Django REST Framework's three paginations
// (testdata/drf.yaml): counts and continuation walks are complete and
// hold exactly the server's rows, whatever the filter, including a team
// that holds the comma django-filter splits lists on.
func TestDRF_EveryListStyleCompleteOnlyWithTheServersRecords(t *testing.T) {
	upstreams.Enabled(t)
	d := upstreams.StartDRF(t)
	truth := d.Accounts(t)
	al := startAirlock(t, "drf.yaml", d.URL, nil)
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "Django REST Framework", config: "drf.yaml", base: d.URL, resource: "accounts", filter: map[string]any{"status": "archived"}, pageSize: 40})
		checkEvidence(t, evidenceCase{upstream: "Django REST Framework (cursor)", config: "drf.yaml", base: d.URL, resource: "accounts_cursor", filter: map[string]any{"status": "archived"}, pageSize: 40})
	})
	for _, resource := range []string{"accounts", "accounts_offset", "accounts_cursor"} {
		for _, c := range listCases(resource, true) {
			t.Run(resource+"/"+c.name, func(t *testing.T) { runCase(t, al, c, truth, "id", "status") })
		}
	}
	// team__in declared as one value: django-filter splits it anyway, and
	// a team with a comma then goes to airlock alone.
	for _, c := range listCases("accounts_misdeclared", true)[3:6] {
		t.Run("accounts_misdeclared/"+c.name, func(t *testing.T) { runCase(t, al, c, truth, "id", "status") })
	}
	t.Run("continued_scan", func(t *testing.T) { continuedScan(t, al, "accounts_cursor", truth) })
	t.Run("cursor_expired_410", func(t *testing.T) {
		expiredCursor(t, al, "accounts_cursor", truth, func(on bool) { d.SetFaults(t, upstreams.DRFFaults{ExpireCursors: on}) })
	})
	t.Run("cursor_expired_400", func(t *testing.T) {
		expiredCursor(t, al, "accounts_cursor_400", truth, func(on bool) {
			d.SetFaults(t, upstreams.DRFFaults{ExpireCursors: on, ExpiredStatus: 400})
		})
	})
	t.Run("commit_and_compensation", func(t *testing.T) {
		w := withStore(t, startAirlock(t, "drf.yaml", d.URL, nil))
		commitAndCompensate(t, w, "support", func() []upstreams.Record { return d.Accounts(t) })
	})
	t.Run("write_evidence_mutation", func(t *testing.T) {
		checkWriteEvidence(t, writeEvidenceCase{upstream: "Django REST Framework 3.14", config: "drf.yaml", base: d.URL, action: "archive",
			pool: activeOf(d.Accounts(t), "payments"), target: pathTarget(`^/api/page/accounts/(\d+)/$`), applied: archivedIn(func() []upstreams.Record { return d.Accounts(t) })})
	})
}

// activeOf is the ids of a team's active accounts, sorted.
func activeOf(accounts []upstreams.Record, team string) []string {
	var out []string
	for _, r := range accounts {
		if r["status"] == "active" && r["team"] == team {
			out = append(out, r.ID())
		}
	}
	slices.Sort(out)
	return out
}

// archivedIn reads which accounts the store holds archived.
func archivedIn(accounts func() []upstreams.Record) func(*testing.T, []string) map[string]bool {
	return func(_ *testing.T, ids []string) map[string]bool {
		out := map[string]bool{}
		for _, r := range accounts() {
			if slices.Contains(ids, r.ID()) {
				out[r.ID()] = r["status"] == "archived"
			}
		}
		return out
	}
}

// graphqlTarget reads the target of a GraphQL request by its id variable:
// a mutation writes it, a query reads it (a list names no id).
func graphqlTarget(r proxied) (string, bool) {
	var b struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if r.Method != http.MethodPost || !jsonBody(r, &b) {
		return "", false
	}
	id, ok := b.Variables["id"]
	if !ok {
		return "", false
	}
	return fmt.Sprint(id), strings.HasPrefix(strings.TrimSpace(b.Query), "mutation")
}

// TestPostGraphile_ConnectionsCompleteOnlyWithTheServersRecords runs
// airlock against PostGraphile's Relay connections
// (testdata/postgraphile.yaml) behind a fault proxy: complete answers hold
// exactly the database's rows; an expired cursor, errors beside data and
// a missing pageInfo are never complete.
func TestPostGraphile_ConnectionsCompleteOnlyWithTheServersRecords(t *testing.T) {
	upstreams.Enabled(t)
	pg := upstreams.StartPostGraphile(t)
	truth := pg.Accounts(t)
	al := startAirlock(t, "postgraphile.yaml", pg.URL, nil)
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "PostGraphile", config: "postgraphile.yaml", base: pg.URL, resource: "accounts", filter: map[string]any{"status": "archived"}, pageSize: 40})
	})
	for _, c := range listCases("accounts", true) {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "id", "status") })
	}
	t.Run("counts_from_the_exact_total", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{})
		ans := al.search(t, map[string]any{"resource": "accounts", "max_items": 0, "filter": map[string]any{"owner": nil}, "deadline_ms": deadlineMS})
		want := len(upstreams.IDs(truth, func(r upstreams.Record) bool { return r["owner"] == nil }))
		checkClaim(t, "owner null, counted", ans, want)
		if stats := pg.ProxyStats(); !ans.Complete || stats.Requests != 1 {
			t.Errorf("%s with %d requests; want complete from the first page's totalCount", ans, stats.Requests)
		}
	})
	t.Run("continued_scan", func(t *testing.T) { continuedScan(t, al, "accounts", truth) })
	t.Run("cursor_expired", func(t *testing.T) {
		expiredCursor(t, al, "accounts", truth, func(on bool) {
			pg.SetFaults(upstreams.GraphQLFaults{ExpireCursors: on, CursorVariable: "after"})
		})
	})
	t.Run("errors_beside_data", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{ErrorPages: []int{1, 2}})
		defer pg.SetFaults(upstreams.GraphQLFaults{})
		ans := al.search(t, map[string]any{"resource": "accounts", "max_items": 0, "deadline_ms": deadlineMS})
		checkClaim(t, "errors beside data", ans, len(truth))
		if ans.Complete || !hasSignal(ans, string(envelope.UpstreamReportedIncomplete), "graphql_errors") {
			t.Errorf("%s; want partial with UPSTREAM_REPORTED_INCOMPLETE graphql_errors", ans)
		}
		if pg.ProxyStats().Errored == 0 {
			t.Error("the proxy added no error: the case checked nothing")
		}
	})
	t.Run("page_info_dropped", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{DropPageInfoPages: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}})
		defer pg.SetFaults(upstreams.GraphQLFaults{})
		// Any of two statuses is airlock's alone: the pages must be read.
		ans := al.search(t, map[string]any{"resource": "accounts", "max_items": 0, "deadline_ms": deadlineMS,
			"filter": map[string]any{"status": []any{"archived", "disabled"}}})
		checkClaim(t, "pageInfo dropped", ans, len(upstreams.IDs(truth, valueIn("status", "archived", "disabled"))))
		// A whole page without pageInfo, asked for again one item
		// smaller, still says nothing.
		if ans.Complete || !hasSignal(ans, string(envelope.EndNotProven), SignalMissingForTest) {
			t.Errorf("%s; want END_NOT_PROVEN next_signal_missing: no page said whether more follow", ans)
		}
	})
	t.Run("init_from_introspection", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{})
		d, err := draft.FromSample(t.Context(), pg.URL+"/graphql", draft.SampleOptions{Options: draft.Options{Environment: "interop"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.TODOs) != 0 {
			t.Fatalf("the draft holds TODOs %v:\n%s", d.TODOs, d.YAML)
		}
		cfg, err := config.Parse(d.YAML)
		if err != nil {
			t.Fatalf("the draft does not parse: %v\n%s", err, d.YAML)
		}
		rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := rt.Resources["all_accounts"]
		if r == nil {
			t.Fatalf("no resource all_accounts in the draft:\n%s", d.YAML)
		}
		s := r.NewScan(upstream.ScanSpec{RequestID: "interop"})
		if err := s.Run(t.Context(), upstream.Budget{MaxPages: 100, Deadline: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if o := s.Outcome(); !o.ScanComplete || o.Matched != len(truth) {
			t.Errorf("the drafted connection read complete %v, %d of %d accounts; reasons %+v", o.ScanComplete, o.Matched, len(truth), o.Reasons)
		}
	})
	t.Run("commit_and_compensation", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{})
		w := withStore(t, startAirlock(t, "postgraphile.yaml", pg.URL, nil))
		commitAndCompensate(t, w, "support", func() []upstreams.Record { return pg.Accounts(t) })
	})
	t.Run("write_evidence_mutation", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{})
		checkWriteEvidence(t, writeEvidenceCase{upstream: "PostGraphile 4.14", config: "postgraphile.yaml", base: pg.URL, action: "archive",
			pool: activeOf(pg.Accounts(t), "payments"), target: graphqlTarget, applied: archivedIn(func() []upstreams.Record { return pg.Accounts(t) })})
	})
}

// SignalMissingForTest is dialect.SignalMissingOnFull, spelled out: the
// test reads what the agent reads.
const SignalMissingForTest = "next_signal_missing"

func hasSignal(a answer, code, signal string) bool {
	for _, r := range a.IncompleteReasons {
		if r.Code == code && r.Signal == signal {
			return true
		}
	}
	return false
}

// continuedScan reads the list two pages per call: each call continues the
// same upstream scan, and the walk ends complete with every row once.
func continuedScan(t *testing.T, al *airlock, resource string, truth []upstreams.Record) {
	args := map[string]any{"resource": resource, "fields": []string{"id"}, "max_items": 1000, "max_pages": 2, "deadline_ms": deadlineMS}
	last, ids := al.walk(t, args, "id")
	want := upstreams.IDs(truth, nil)
	checkClaim(t, "continued scan", last, len(want))
	checkItems(t, "continued scan", last, ids, want)
	if !last.Complete {
		t.Errorf("the continued scan ended %s", last)
	}
}

// expiredCursor pages through a scan one upstream page per call, turns
// expiry on, and continues: the answer is CURSOR_EXPIRED with a restart,
// nothing was delivered twice, and a restart delivers every row once.
func expiredCursor(t *testing.T, al *airlock, resource string, truth []upstreams.Record, expire func(on bool)) {
	expire(false)
	args := map[string]any{"resource": resource, "fields": []string{"id"}, "max_items": 100, "max_pages": 1, "deadline_ms": deadlineMS}
	first := al.search(t, args)
	if first.Continuation.Kind != envelope.ContinueNextCursor {
		t.Fatalf("the first page: %s; want more to continue", first)
	}
	var ids []string
	for _, it := range first.Data.Items {
		ids = append(ids, idOf(it["id"]))
	}
	expire(true)
	args["cursor"] = first.Continuation.Cursor
	var last answer
	for range 20 {
		last = al.search(t, args)
		if last.Problem != nil {
			t.Fatalf("after the expiry: %s; an expired cursor is no refusal", last)
		}
		for _, it := range last.Data.Items {
			ids = append(ids, idOf(it["id"]))
		}
		if last.Continuation.Kind != envelope.ContinueNextCursor {
			break
		}
		args["cursor"] = last.Continuation.Cursor
	}
	if last.Complete || last.Continuation.Kind != envelope.ContinueRestart || !hasSignal(last, string(envelope.CursorExpired), "") {
		t.Fatalf("after the expiry: %s; want CURSOR_EXPIRED with restart", last)
	}
	sorted := slices.Sorted(slices.Values(ids))
	if len(slices.Compact(sorted)) != len(ids) {
		t.Errorf("%d ids delivered before the restart, some twice", len(ids))
	}
	expire(false)
	restart := map[string]any{"resource": resource, "fields": []string{"id"}, "max_items": 1000, "deadline_ms": deadlineMS}
	ans, all := al.walk(t, restart, "id")
	want := upstreams.IDs(truth, nil)
	checkItems(t, "restart", ans, all, want)
	if !ans.Complete {
		t.Errorf("the restart ended %s", ans)
	}
}

// commitAndCompensate archives the active accounts of a team, checks the
// server holds exactly that, then undoes it through a compensation and
// checks every account is back.
func commitAndCompensate(t *testing.T, w *airlock, team string, accounts func() []upstreams.Record) {
	before := accounts()
	targets := upstreams.IDs(before, func(r upstreams.Record) bool { return r["team"] == team && r["status"] == "active" })
	if len(targets) == 0 {
		t.Fatalf("no active account in team %q", team)
	}
	prev := w.tool(t, "preview_selection", map[string]any{"resource": "accounts", "filter": map[string]any{"team": team},
		"action": map[string]any{"type": "archive"}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	counts := data["counts"].(map[string]any)
	if data["committable"] != true || int(counts["members"].(float64)) != len(targets) {
		t.Fatalf("preview: committable %v, counts %v; want %d members", data["committable"], counts, len(targets))
	}
	op := commitAndWait(t, w, data)
	after := accounts()
	byID := map[string]upstreams.Record{}
	for _, r := range after {
		byID[r.ID()] = r
	}
	for _, id := range targets {
		if byID[id]["status"] != "archived" {
			t.Errorf("account %s is %v after the commit; want archived", id, byID[id]["status"])
		}
	}
	for _, r := range before {
		if r["team"] != team || r["status"] != "active" {
			if byID[r.ID()]["status"] != r["status"] {
				t.Errorf("account %s outside the selection changed from %v to %v", r.ID(), r["status"], byID[r.ID()]["status"])
			}
		}
	}
	comp := w.tool(t, "preview_selection", map[string]any{"compensate": op})
	cdata := comp["data"].(map[string]any)
	if cc := cdata["counts"].(map[string]any); int(cc["members"].(float64)) != len(targets) {
		t.Fatalf("compensation preview counts %v; want %d members", cc, len(targets))
	}
	commitAndWait(t, w, cdata)
	restored := accounts()
	for _, r := range restored {
		for _, b := range before {
			if b.ID() == r.ID() && b["status"] != r["status"] {
				t.Errorf("account %s is %v after the compensation; it was %v", r.ID(), r["status"], b["status"])
			}
		}
	}
	t.Logf("archived and restored %d accounts of team %q", len(targets), team)
}

// commitAndWait commits a previewed selection and waits for every target
// to succeed; it returns the operation id.
func commitAndWait(t *testing.T, w *airlock, sel map[string]any) string {
	t.Helper()
	res := w.tool(t, "commit_bulk_action", map[string]any{"selection_id": sel["selection_id"], "expected_digest": sel["digest"],
		"action": sel["action"], "mode": "execute", "wait_ms": 60000})
	data := res["data"].(map[string]any)
	op := data["operation_id"].(string)
	for i := 0; data["status"] == "running" && i < 120; i++ {
		time.Sleep(500 * time.Millisecond)
		data = w.tool(t, "get_operation", map[string]any{"operation_id": op})["data"].(map[string]any)
	}
	counts, _ := data["counts"].(map[string]any)
	settled := true
	for outcome, n := range counts {
		settled = settled && (outcome == "succeeded" || n == float64(0))
	}
	if data["status"] != "completed" || !settled {
		t.Fatalf("operation %s: status %v, counts %v; want completed, every target succeeded: %s", op, data["status"], counts, unsettled(journalOf(t, w, op)))
	}
	return op
}
