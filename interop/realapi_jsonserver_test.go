package interop

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// TestJSONServer_CompleteOnlyWithTheUpstreamsExactRecords runs airlock
// against json-server 0.17.4 (testdata/json-server.yaml). With the correct
// configuration, counts and continuation walks are complete and hold
// exactly json-server's records; with a misconfiguration, airlock may fall
// short but must never claim complete with another total.
func TestJSONServer_CompleteOnlyWithTheUpstreamsExactRecords(t *testing.T) {
	js := upstreams.StartJSONServer(t)
	truth := js.Accounts(t)
	al := startAirlock(t, "json-server.yaml", js.URL, nil)
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "json-server", config: "json-server.yaml", base: js.URL, resource: "accounts",
			filter: map[string]any{"status": "disabled"}, pageSize: 40})
	})
	t.Run("upstream_pages_with_links_only_when_asked_for_a_page", func(t *testing.T) {
		checkJSONServerFacts(t, js, truth)
	})

	field := func(name string, want ...any) func(upstreams.Record) bool {
		return func(r upstreams.Record) bool {
			v, ok := r[name]
			return ok && slices.Contains(want, v)
		}
	}
	cases := []upstreamCase{
		{name: "every_account", resource: "accounts", correct: true},
		{name: "status_sent_upstream", resource: "accounts", filter: map[string]any{"status": "disabled"},
			keep: field("status", "disabled"), correct: true},
		{name: "status_and_team_sent_upstream", resource: "accounts", filter: map[string]any{"status": "active", "team": "team-infra"},
			keep: func(r upstreams.Record) bool { return field("status", "active")(r) && field("team", "team-infra")(r) }, correct: true},
		{name: "empty_owner_sent_upstream", resource: "accounts", filter: map[string]any{"owner": ""},
			keep: field("owner", ""), correct: true},
		{name: "null_owner_matches_null_or_missing", resource: "accounts", filter: map[string]any{"owner": nil},
			keep: func(r upstreams.Record) bool { return r["owner"] == nil }, correct: true},
		{name: "tag_applied_by_airlock", resource: "accounts", filter: map[string]any{"tags": "pci"},
			keep: func(r upstreams.Record) bool { tags, _ := r["tags"].([]any); return slices.Contains(tags, any("pci")) }, correct: true},
		{name: "any_of_statuses_sent_comma_joined", resource: "accounts", filter: map[string]any{"status": []any{"active", "archived"}},
			keep: field("status", "active", "archived"), correct: true},
		{name: "without_page_param", resource: "accounts_without_page"},
		{name: "without_page_param_filtered", resource: "accounts_without_page", filter: map[string]any{"status": "archived"},
			keep: field("status", "archived")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "id", "status") })
	}
}

// checkJSONServerFacts pins what testdata/json-server.yaml's resources
// assume of json-server, so that a change of json-server fails here first.
func checkJSONServerFacts(t *testing.T, js *upstreams.JSONServer, truth []upstreams.Record) {
	var page []any
	r := js.Get(t, "/accounts?_page=1&_limit=100")
	r.JSON(t, &page)
	if r.Status != http.StatusOK || len(page) != 100 || r.NextLink() == "" || r.Header.Get("X-Total-Count") != fmt.Sprint(len(truth)) {
		t.Errorf("_page=1&_limit=100: status %d, %d items, Link %q, X-Total-Count %q; want 100 items, a next link and the total",
			r.Status, len(page), r.Header.Get("Link"), r.Header.Get("X-Total-Count"))
	}
	r = js.Get(t, fmt.Sprintf("/accounts?_page=%d&_limit=100", upstreams.JSONServerAccounts/100))
	r.JSON(t, &page)
	if len(page) != 100 || r.NextLink() != "" {
		t.Errorf("the last page: %d items, Link %q; want a full page without a next link", len(page), r.Header.Get("Link"))
	}
	r = js.Get(t, "/accounts?_limit=100")
	r.JSON(t, &page)
	if len(page) != 100 || r.Header.Get("Link") != "" {
		t.Errorf("_limit=100 without _page: %d items, Link %q; want 100 items and no Link header", len(page), r.Header.Get("Link"))
	}
	count := func(field string, values ...any) int {
		return len(upstreams.IDs(truth, func(r upstreams.Record) bool { v, ok := r[field]; return ok && slices.Contains(values, v) }))
	}
	js.Get(t, "/accounts?status=active&status=archived").JSON(t, &page)
	if want := count("status", "active", "archived"); len(page) != want {
		t.Errorf("status repeated: %d accounts; want any of the two, %d", len(page), want)
	}
	js.Get(t, "/accounts?status=active,archived").JSON(t, &page)
	if len(page) != 0 {
		t.Errorf("status=active,archived: %d accounts; want none (an exact match of the whole value)", len(page))
	}
	js.Get(t, "/accounts?owner=").JSON(t, &page)
	if want := count("owner", ""); len(page) != want || want == 0 {
		t.Errorf("owner=: %d accounts; want exactly the %d with an empty owner", len(page), want)
	}
}
