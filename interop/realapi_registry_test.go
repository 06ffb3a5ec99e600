package interop

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// TestRegistry_CompleteOnlyWithTheCatalogsExactNames runs airlock against
// docker-registry 2.8.2's catalog (testdata/registry.yaml), a Link-paged
// list of plain strings. With the correct configuration the walk is
// complete and holds exactly the catalog's names; with a page size the
// registry refuses, airlock must not claim anything.
func TestRegistry_CompleteOnlyWithTheCatalogsExactNames(t *testing.T) {
	reg := upstreams.StartRegistry(t)
	var truth []upstreams.Record
	for _, name := range reg.Repositories(t) {
		truth = append(truth, upstreams.Record{"id": name})
	}
	al := startAirlock(t, "registry.yaml", reg.URL, nil)
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "docker-registry", config: "registry.yaml", base: reg.URL, resource: "repositories", pageSize: 10})
	})
	t.Run("upstream_pages_with_relative_links_and_refuses_large_pages", func(t *testing.T) {
		checkRegistryFacts(t, reg)
	})
	cases := []upstreamCase{
		{name: "every_repository", resource: "repositories", correct: true},
		{name: "page_size_above_maximum", resource: "repositories_oversized_page"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "name", "") })
	}
	t.Run("refusal_quotes_the_registry", func(t *testing.T) {
		// The registry's own words reach the agent, marked as the API's.
		ans := al.search(t, map[string]any{"resource": "repositories_oversized_page", "deadline_ms": deadlineMS})
		if ans.Problem == nil || ans.Problem.Code != "UPSTREAM_REJECTED_REQUEST" || !strings.Contains(ans.Problem.UpstreamMessage, "invalid number of results requested") {
			t.Errorf("an oversized page: %s; upstream_message %+v", ans, ans.Problem)
		}
	})
	if got := upstreams.IDs(truth, nil); !slices.Equal(got, reg.Pushed) {
		t.Errorf("the catalog lists %d names, %d were pushed", len(got), len(reg.Pushed))
	}
}

// checkRegistryFacts pins what testdata/registry.yaml's resources assume of
// the registry, so that a change of the registry fails here first.
func checkRegistryFacts(t *testing.T, reg *upstreams.Registry) {
	var res struct {
		Repositories []any `json:"repositories"`
	}
	r := reg.Get(t, "/v2/_catalog?n=100")
	r.JSON(t, &res)
	if next := r.NextLink(); len(res.Repositories) != 100 || !strings.HasPrefix(next, "/v2/_catalog?") || !strings.Contains(next, "last=") {
		t.Errorf("n=100: %d names, Link %q; want 100 and a relative next link with last=", len(res.Repositories), r.Header.Get("Link"))
	}
	if len(res.Repositories) > 0 {
		if _, ok := res.Repositories[0].(string); !ok {
			t.Errorf("catalog items are %T; want plain strings", res.Repositories[0])
		}
	}
	if r := reg.Get(t, "/v2/_catalog?n=2000"); r.Status != http.StatusBadRequest {
		t.Errorf("n=2000: status %d; want 400", r.Status)
	}
}
