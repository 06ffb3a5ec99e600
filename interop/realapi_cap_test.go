package interop

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/probe"
)

// TestCAP_ODataExpressionsAndServerDrivenPaging runs airlock against SAP
// CAP's OData V4 service (testdata/cap.yaml): every filter goes as one
// $filter expression, each value one literal (hostile names included);
// pages are capped by the server below the size asked for and continued by
// relative @odata.nextLink; a PATCH with a stale If-Match is a conflict,
// and the compensation puts every status back. Every row is compared with
// the accounts CAP's unpaged truth service holds.
func TestCAP_ODataExpressionsAndServerDrivenPaging(t *testing.T) {
	started := time.Now()
	c := upstreams.StartCAP(t)
	truth := c.Accounts(t)
	t.Run("upstream_facts", func(t *testing.T) { checkCAPFacts(t, c, truth) })
	al := startAirlock(t, "cap.yaml", c.URL, nil)
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "SAP CAP", config: "cap.yaml", base: c.URL, resource: "accounts", filter: map[string]any{"status": "archived"}})
	})
	status := func(vs ...any) func(upstreams.Record) bool { return valueIn("status", vs...) }
	cases := []upstreamCase{
		{name: "every_account", resource: "accounts", correct: true},
		{name: "one_status", resource: "accounts", filter: map[string]any{"status": "archived"}, keep: status("archived"), correct: true},
		{name: "any_of_statuses", resource: "accounts", filter: map[string]any{"status": []any{"active", "disabled"}}, keep: status("active", "disabled"), correct: true},
		{name: "null_owner", resource: "accounts", filter: map[string]any{"owner": nil},
			keep: func(r upstreams.Record) bool { return r["owner"] == nil }, correct: true},
		{name: "status_and_owner", resource: "accounts", filter: map[string]any{"status": "disabled", "owner": "team-1"},
			keep: func(r upstreams.Record) bool { return status("disabled")(r) && valueIn("owner", "team-1")(r) }, correct: true},
		{name: "owner_null_or_one", resource: "accounts", filter: map[string]any{"owner": []any{nil, "team-2"}},
			keep: func(r upstreams.Record) bool { return r["owner"] == nil || r["owner"] == "team-2" }, correct: true},
	}
	since := "2026-06-01T00:00:00Z"
	cases = append(cases,
		upstreamCase{name: "id_above", resource: "accounts", filter: map[string]any{"id_above": 2000},
			keep: func(r upstreams.Record) bool { return r["ID"].(float64) > 2000 }, correct: true},
		upstreamCase{name: "modified_since", resource: "accounts", filter: map[string]any{"modified_since": since},
			keep: func(r upstreams.Record) bool { return modifiedAt(r).Compare(mustTime(since)) >= 0 }, correct: true},
		upstreamCase{name: "id_above_and_status", resource: "accounts", filter: map[string]any{"id_above": 1000, "status": "archived"},
			keep: func(r upstreams.Record) bool { return r["ID"].(float64) > 1000 && r["status"] == "archived" }, correct: true})
	// $top taken for a page size cuts the list: never claimed complete.
	cases = append(cases, upstreamCase{name: "top_as_page_size", resource: "accounts_top"},
		upstreamCase{name: "top_as_page_size_filtered", resource: "accounts_top", filter: map[string]any{"status": "active"}, keep: status("active")})
	for _, name := range upstreams.CAPHostileNames {
		cases = append(cases, upstreamCase{name: "hostile_" + safeName(name), resource: "accounts", filter: map[string]any{"name": name},
			keep: valueIn("name", name), correct: true})
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) { runCase(t, al, cs, truth, "ID", "status") })
	}
	t.Run("expression_sent_as_one_request", func(t *testing.T) { checkCAPOneRequest(t, al, truth) })
	t.Run("described_to_the_agent", func(t *testing.T) {
		d := al.tool(t, "describe_resources", map[string]any{"resource": "accounts"})
		b, _ := json.Marshal(d["data"])
		if !strings.Contains(string(b), `"expression":"odata"`) {
			t.Errorf("describe_resources accounts: %s; want the filters' expression language", b)
		}
	})
	t.Run("probe_finds_nothing_wrong", func(t *testing.T) {
		rep := probe.CheckAssumptions(t.Context(), al.runtime.Resources["accounts"], probe.Options{MaxRequests: 60})
		for _, c := range rep.Checks {
			if c.Status == probe.Wrong {
				t.Errorf("probe: %s is wrong: %s (%s)", c.Check, c.Evidence, c.Hint)
			}
		}
	})
	t.Run("continued_scan_claims_no_snapshot", func(t *testing.T) { checkCAPContinued(t, c, al) })
	t.Run("if_match_conflict_and_compensation", func(t *testing.T) { checkCAPWrites(t, c) })
	t.Run("write_evidence_mutation", func(t *testing.T) {
		pool := upstreams.IDs(c.Accounts(t), func(r upstreams.Record) bool { return r["status"] == "disabled" && r["owner"] == "team-2" })
		checkWriteEvidence(t, writeEvidenceCase{upstream: "SAP CAP 10.1", config: "cap.yaml", base: c.URL, action: "archive", pool: pool,
			target: pathTarget(`^/odata/v4/crm/Accounts\((\d+)\)$`), applied: archivedIn(func() []upstreams.Record { return c.Accounts(t) })})
	})
	t.Logf("CAP suite: %.1fs", time.Since(started).Seconds())
}

// checkCAPFacts pins what testdata/cap.yaml assumes of CAP.
func checkCAPFacts(t *testing.T, c *upstreams.CAP, truth []upstreams.Record) {
	var page struct {
		Value    []map[string]any `json:"value"`
		Count    *int             `json:"@odata.count"`
		NextLink string           `json:"@odata.nextLink"`
	}
	r := c.Get(t, "/odata/v4/crm/Accounts?$count=true&$orderby=ID")
	r.JSON(t, &page)
	if len(page.Value) != upstreams.CAPDefaultPage || page.Count == nil || *page.Count != len(truth) || !strings.HasPrefix(page.NextLink, "Accounts?") {
		t.Errorf("no $top: %d accounts, count %v, next %q; want %d (the server's page), the total and a next link relative to the page",
			len(page.Value), page.Count, page.NextLink, upstreams.CAPDefaultPage)
	}
	// $top limits the whole result: pages of the cap, then no next link.
	seen, pages := 0, 0
	for next := "/odata/v4/crm/Accounts?$top=500&$orderby=ID"; next != "" && pages < 10; pages++ {
		page.NextLink = ""
		c.Get(t, next).JSON(t, &page)
		if pages == 0 && len(page.Value) != upstreams.CAPMaxPage {
			t.Errorf("$top=500: a first page of %d; want the server's cap, %d", len(page.Value), upstreams.CAPMaxPage)
		}
		seen += len(page.Value)
		next = ""
		if page.NextLink != "" {
			next = "/odata/v4/crm/" + page.NextLink
		}
	}
	if seen != 500 {
		t.Errorf("$top=500 followed to its end: %d accounts in %d pages; want 500 (a result limit, not a page size)", seen, pages)
	}
	if len(page.Value) > 0 && page.Value[0]["@odata.etag"] == nil {
		t.Errorf("an account without @odata.etag: %v", page.Value[0])
	}
	if r := c.Get(t, "/odata/v4/crm/Accounts?$filter=status+eq+'active'"); r.Status != 400 {
		t.Errorf("a + for a space: status %d; want 400 (CAP reads + as a plus)", r.Status)
	}
	q := url.PathEscape("name eq 'O''Brien'")
	r = c.Get(t, "/odata/v4/crm/Accounts?$filter="+q)
	r.JSON(t, &page)
	if len(page.Value) != 1 || page.Value[0]["name"] != "O'Brien" {
		t.Errorf("name eq 'O''Brien': %v; want the one account", page.Value)
	}
}

// checkCAPOneRequest: a counts-only question whose filters all go in the
// expression reads only the matching accounts (pages of the match, not of
// the collection).
func checkCAPOneRequest(t *testing.T, al *airlock, truth []upstreams.Record) {
	want := upstreams.IDs(truth, valueIn("name", "O'Brien"))
	ans := al.search(t, map[string]any{"resource": "accounts", "filter": map[string]any{"name": "O'Brien"}, "max_items": 0, "deadline_ms": deadlineMS})
	if !ans.Complete || ans.Data.TotalMatched != len(want) || ans.Coverage == nil || ans.Coverage.Pages != 1 || ans.Coverage.ItemsScanned != len(want) {
		t.Errorf("name eq 'O''Brien', counts only: %s; want complete from one page holding only the match", ans)
	}
}

// checkCAPContinued: a walk through CAP's relative next links, budgeted to
// a few pages per call and continued by cursor, delivers every account
// once; CAP's paging is by offset, and the scope says it promises no
// snapshot.
func checkCAPContinued(t *testing.T, c *upstreams.CAP, al *airlock) {
	args := map[string]any{"resource": "accounts", "max_items": 1000, "max_pages": 2, "fields": []string{"ID"}, "deadline_ms": deadlineMS}
	first := al.tool(t, "search_all", args)
	scope, _ := first["scope"].(map[string]any)
	if scope["consistency"] != "none" {
		t.Errorf("scope %v: CAP pages by offset, so no snapshot or keyset is promised", scope)
	}
	last, ids := al.walk(t, args, "ID")
	checkItems(t, "continued walk", last, ids, upstreams.IDs(c.Accounts(t), nil))
	if !last.Complete {
		t.Errorf("the continued walk: %s; want complete", last)
	}
}

// checkCAPWrites previews archive on the disabled accounts of team-1, lets
// another writer change one of them (its ETag moves), and checks CAP:
// every other target is archived, the changed one is untouched by airlock
// (412, skipped), nothing else moved; the compensation puts every status
// back.
func checkCAPWrites(t *testing.T, c *upstreams.CAP) {
	before := map[string]upstreams.Record{}
	var targets []string
	for _, r := range c.Accounts(t) {
		before[r.ID()] = r
		if r["status"] == "disabled" && r["owner"] == "team-1" {
			targets = append(targets, r.ID())
		}
	}
	if len(targets) < 50 {
		t.Fatalf("%d disabled accounts of team-1; the row needs 50 or more", len(targets))
	}
	wa := withStore(t, startAirlock(t, "cap.yaml", c.URL, nil))
	prev := wa.tool(t, "preview_selection", map[string]any{"resource": "accounts", "filter": map[string]any{"status": "disabled", "owner": "team-1"},
		"action": map[string]any{"type": "archive"}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true || data["counts"].(map[string]any)["members"] != float64(len(targets)) {
		t.Fatalf("preview: committable %v, counts %v; want %d members", data["committable"], data["counts"], len(targets))
	}
	moved := targets[len(targets)/2]
	c.Patch(t, moved, map[string]any{"name": "renamed by another writer"})

	op, counts := commitCounts(t, wa, data)
	if counts["succeeded"] != float64(len(targets)-1) || counts["skipped"] != float64(1) {
		t.Errorf("operation %s: counts %v; want %d succeeded and the changed account skipped", op, counts, len(targets)-1)
	}
	for _, r := range c.Accounts(t) {
		want := before[r.ID()]["status"]
		if slices.Contains(targets, r.ID()) && r.ID() != moved {
			want = "archived"
		}
		if r["status"] != want {
			t.Errorf("account %s: status %v after the commit; want %v", r.ID(), r["status"], want)
		}
	}

	comp := wa.tool(t, "preview_selection", map[string]any{"compensate": op, "deadline_ms": deadlineMS})
	cdata := comp["data"].(map[string]any)
	if cdata["counts"].(map[string]any)["members"] != float64(len(targets)-1) {
		t.Fatalf("compensation preview: counts %v; want %d members", cdata["counts"], len(targets)-1)
	}
	if _, cc := commitCounts(t, wa, cdata); cc["succeeded"] != float64(len(targets)-1) {
		t.Errorf("compensation: counts %v; want %d succeeded", cc, len(targets)-1)
	}
	for _, r := range c.Accounts(t) {
		if r["status"] != before[r.ID()]["status"] {
			t.Errorf("account %s: status %v after the compensation; it had %v", r.ID(), r["status"], before[r.ID()]["status"])
		}
	}
	t.Logf("archive on %d accounts: %d succeeded, %s skipped by its stale If-Match; compensated", len(targets), len(targets)-1, moved)
}

func modifiedAt(r upstreams.Record) time.Time { s, _ := r["modifiedAt"].(string); return mustTime(s) }

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}
