package interop

import (
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/draft"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/probe"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestCouchDB_AllDocsAndMangoCountWhatTheDatabaseHolds reads PouchDB
// Server's CouchDB API through testdata/couchdb.yaml: _all_docs by skip
// and total_rows, and _find with the selector airlock builds from the
// typed filter, every count and every walk held to the database's own
// documents. A null owner is the documents whose owner is null or absent,
// as airlock's null means, though Mango's bare null is only the first; a
// value written in Mango's operator syntax is a value. _find paged by
// bookmark is never complete on PouchDB, which hands out none.
func TestCouchDB_AllDocsAndMangoCountWhatTheDatabaseHolds(t *testing.T) {
	p := upstreams.StartPouchDB(t)
	truth := p.Docs(t)
	al := startAirlock(t, "couchdb.yaml", p.URL, nil)
	status := func(s ...string) func(upstreams.Record) bool {
		return func(r upstreams.Record) bool { return slices.Contains(s, r["status"].(string)) }
	}
	nullOwner := func(r upstreams.Record) bool { v, ok := r["owner"]; return !ok || v == nil }
	name := ""
	for _, d := range truth {
		if n := d["name"].(string); len(n) > 4 && n[:4] == "$eq " {
			name = n
			break
		}
	}
	if name == "" {
		t.Fatal("the seed holds no name in Mango's operator syntax")
	}
	cases := []upstreamCase{
		{name: "all_docs_by_status", resource: "all_docs", filter: map[string]any{"status": "past_due"}, keep: status("past_due"), correct: true},
		// The design document is a row without an owner, so the null owner
		// is asked of past_due documents only.
		{name: "all_docs_null_owner", resource: "all_docs", filter: map[string]any{"owner": nil, "status": "past_due"},
			keep: func(r upstreams.Record) bool { return nullOwner(r) && r["status"] == "past_due" }, correct: true},
		// PouchDB's _find with a selector its _id index serves counts the
		// design document in skip (skip 2 of d1..d6 and _design/x answers
		// d2, d3): the overlap item shows every page after the first one
		// early, and airlock never claims the list (INCONSISTENT_SNAPSHOT).
		// _all_docs lists every document.
		{name: "find_every_document_is_shifted_by_the_design_document", resource: "accounts"},
		{name: "find_by_status", resource: "accounts", filter: map[string]any{"status": "past_due"}, keep: status("past_due"), correct: true},
		{name: "find_any_of_statuses", resource: "accounts", filter: map[string]any{"status": []any{"past_due", "disabled"}}, keep: status("past_due", "disabled"), correct: true},
		{name: "find_null_owner_is_null_or_absent", resource: "accounts", filter: map[string]any{"owner": nil}, keep: nullOwner, correct: true},
		{name: "find_empty_owner_is_empty_only", resource: "accounts", filter: map[string]any{"owner": ""},
			keep: func(r upstreams.Record) bool { return r["owner"] == "" }, correct: true},
		{name: "find_owner_any_of_with_null", resource: "accounts", filter: map[string]any{"owner": []any{"bea@example.com", nil}},
			keep: func(r upstreams.Record) bool { return nullOwner(r) || r["owner"] == "bea@example.com" }, correct: true},
		{name: "find_team_and_null_owner", resource: "accounts", filter: map[string]any{"team": "R&D, Labs", "owner": nil},
			keep: func(r upstreams.Record) bool { return r["team"] == "R&D, Labs" && nullOwner(r) }, correct: true},
		{name: "find_tag_contains", resource: "accounts", filter: map[string]any{"tag": "pci"},
			keep: func(r upstreams.Record) bool { return slices.Contains(r["tags"].([]any), any("pci")) }, correct: true},
		{name: "find_operator_syntax_is_a_value", resource: "accounts", filter: map[string]any{"name": name},
			keep: func(r upstreams.Record) bool { return r["name"] == name }, correct: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "_id", "") })
	}

	t.Run("all_docs_every_row_is_total_rows", func(t *testing.T) {
		ans := al.search(t, map[string]any{"resource": "all_docs", "max_items": 0, "deadline_ms": deadlineMS})
		t.Logf("all rows: %s", ans)
		if !ans.Complete || ans.Data.TotalMatched != len(truth)+1 {
			t.Errorf("all rows: %s; want complete with %d (every document and the index's design document)", ans, len(truth)+1)
		}
	})
	t.Run("null_owner_is_selected_by_the_database", func(t *testing.T) {
		// The selector was sent, not left to airlock: the database served
		// only the null and absent owners (and one overlap item a page).
		ans := al.search(t, map[string]any{"resource": "accounts", "filter": map[string]any{"owner": nil}, "max_items": 0, "deadline_ms": deadlineMS})
		want := len(upstreams.IDs(truth, nullOwner))
		if !ans.Complete || ans.Coverage == nil || ans.Coverage.ItemsScanned > want+ans.Coverage.Pages {
			t.Errorf("null owner: %s, %+v scanned; want complete, at most %d scanned (the database's own selection)", ans, ans.Coverage, want+ans.Coverage.Pages)
		}
	})
	t.Run("init_sample_and_probe_fix_reach_all_docs_end", func(t *testing.T) {
		// init --sample on _all_docs drafts offset with total_rows and
		// leaves the parameter a TODO (the answer's offset does not name
		// it); probe --fix finds skip on the live server.
		d, err := draft.FromSample(t.Context(), p.URL+"/accounts/_all_docs?include_docs=true&limit=10", draft.SampleOptions{Options: draft.Options{Environment: "interop"}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(d.YAML), "total: total_rows") || len(d.TODOs) != 1 {
			t.Fatalf("the draft: TODOs %q\n%s", d.TODOs, d.YAML)
		}
		res, err := probe.Fix(t.Context(), d.YAML, probe.FixOptions{MaxRequests: 60})
		if err != nil || len(res.Left) > 0 || !strings.Contains(string(res.YAML), "offset_param: skip") {
			t.Fatalf("probe --fix: %v, left %q\n%s", err, res.Left, res.YAML)
		}
		cfg, err := config.Parse(res.YAML)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep := probe.CheckAssumptions(t.Context(), rt.Resources[rt.ResourceNames()[0]], probe.Options{MaxRequests: 60})
		for _, c := range rep.Checks {
			if c.Check == "pagination.end" || c.Status == probe.Wrong {
				t.Logf("probe of the fixed file: %s %s: %s", c.Check, c.Status, c.Evidence)
			}
		}
		if rep.Wrong() > 0 {
			t.Errorf("probe of the fixed file finds %d wrong", rep.Wrong())
		}
	})
	t.Run("init_sample_of_a_find_post_reaches_its_end", func(t *testing.T) {
		// A POST sample of _find with its body drafts a POST list; on
		// PouchDB (no bookmark) the body's skip drafts the offset dialect,
		// which probe walks to a proven end.
		d, err := draft.FromSample(t.Context(), p.URL+"/accounts/_find", draft.SampleOptions{Options: draft.Options{Environment: "interop"},
			Body: []byte(`{"selector": {"status": "past_due"}, "limit": 10, "skip": 0}`)})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(d.YAML)
		if err != nil || !strings.Contains(string(d.YAML), "dialect: offset, offset_param: skip") {
			t.Fatalf("the draft: %v\n%s", err, d.YAML)
		}
		rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep := probe.CheckAssumptions(t.Context(), rt.Resources[rt.ResourceNames()[0]], probe.Options{MaxRequests: 60})
		end := ""
		for _, c := range rep.Checks {
			if c.Check == "pagination.end" {
				end = c.Status
				t.Logf("probe of the drafted _find: %s %s: %s", c.Check, c.Status, c.Evidence)
			}
		}
		if end != probe.OK {
			t.Errorf("pagination.end %q; want ok: %+v", end, rep.Checks)
		}
	})
	t.Run("bookmark_on_pouchdb_is_never_complete", func(t *testing.T) {
		ans := al.search(t, map[string]any{"resource": "bookmarked", "max_items": 0, "deadline_ms": deadlineMS})
		t.Logf("bookmark dialect on PouchDB: %s", ans)
		if ans.Complete || !hasSignal(ans, "END_NOT_PROVEN", "next_signal_not_seen") {
			t.Errorf("bookmark dialect on PouchDB: %s; want END_NOT_PROVEN next_signal_not_seen (PouchDB hands out no bookmark)", ans)
		}
	})
}
