package interop

import (
	"net/http"
	"testing"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// TestPocketBase_CompleteOnlyWithTheUpstreamsExactRecords runs airlock
// against PocketBase v0.36.8 (testdata/pocketbase.yaml), authenticated
// with a superuser token. With the correct configuration, counts and
// continuation walks are complete and hold exactly PocketBase's records;
// with skipTotal (totalItems -1) or pages above PocketBase's maximum,
// airlock must never claim complete with another total.
func TestPocketBase_CompleteOnlyWithTheUpstreamsExactRecords(t *testing.T) {
	pb := upstreams.StartPocketBase(t)
	truth := pb.Accounts(t)
	al := startAirlock(t, "pocketbase.yaml", pb.URL, map[string]string{"POCKETBASE_TOKEN": pb.Token})
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "PocketBase", config: "pocketbase.yaml", base: pb.URL, env: map[string]string{"POCKETBASE_TOKEN": pb.Token},
			resource: "accounts", filter: map[string]any{"status": "archived"}, pageSize: 40})
	})
	t.Run("upstream_skips_its_total_and_caps_its_pages", func(t *testing.T) {
		checkPocketBaseFacts(t, pb, truth)
	})

	text := func(name, want string) func(upstreams.Record) bool {
		return func(r upstreams.Record) bool { return r[name] == want }
	}
	cases := []upstreamCase{
		{name: "every_account", resource: "accounts", correct: true},
		{name: "status", resource: "accounts", filter: map[string]any{"status": "archived"},
			keep: text("status", "archived"), correct: true},
		{name: "status_and_team", resource: "accounts", filter: map[string]any{"status": "active", "team": "team-payments"},
			keep: func(r upstreams.Record) bool { return text("status", "active")(r) && text("team", "team-payments")(r) }, correct: true},
		{name: "empty_owner", resource: "accounts", filter: map[string]any{"owner": ""},
			keep: text("owner", ""), correct: true},
		{name: "any_of_statuses", resource: "accounts", filter: map[string]any{"status": []any{"disabled", "archived"}},
			keep: func(r upstreams.Record) bool { return text("status", "disabled")(r) || text("status", "archived")(r) }, correct: true},
		{name: "skip_total", resource: "accounts_skip_total"},
		{name: "skip_total_filtered", resource: "accounts_skip_total", filter: map[string]any{"status": "disabled"},
			keep: text("status", "disabled")},
		{name: "page_size_above_maximum", resource: "accounts_oversized_page"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "id", "team") })
	}
}

// checkPocketBaseFacts pins what testdata/pocketbase.yaml's resources
// assume of PocketBase, so that a change of PocketBase fails here first.
func checkPocketBaseFacts(t *testing.T, pb *upstreams.PocketBase, truth []upstreams.Record) {
	const list = "/api/collections/accounts/records"
	var res struct {
		PerPage    int   `json:"perPage"`
		TotalItems int   `json:"totalItems"`
		TotalPages int   `json:"totalPages"`
		Items      []any `json:"items"`
	}
	pb.Get(t, list+"?page=1&perPage=100", false).JSON(t, &res)
	if res.TotalItems != len(truth) || len(res.Items) != 100 {
		t.Errorf("page=1&perPage=100: totalItems %d, %d items; want %d and 100", res.TotalItems, len(res.Items), len(truth))
	}
	pb.Get(t, list+"?page=1&perPage=100&skipTotal=1", false).JSON(t, &res)
	if res.TotalItems != -1 || res.TotalPages != -1 || len(res.Items) != 100 {
		t.Errorf("skipTotal=1: totalItems %d, totalPages %d, %d items; want -1, -1 and a full page", res.TotalItems, res.TotalPages, len(res.Items))
	}
	pb.Get(t, list+"?page=1&perPage=2000", false).JSON(t, &res)
	if res.PerPage != 1000 || len(res.Items) != 1000 {
		t.Errorf("perPage=2000: perPage %d, %d items; want 1000 of each", res.PerPage, len(res.Items))
	}
	if r := pb.Get(t, list, true); r.Status != http.StatusForbidden {
		t.Errorf("the list without a token: status %d; want 403 (superusers only)", r.Status)
	}
	for _, r := range truth {
		if _, ok := r["owner"].(string); !ok {
			t.Fatalf("account %s has owner %#v; PocketBase stores a missing text as \"\"", r.ID(), r["owner"])
		}
	}
}
