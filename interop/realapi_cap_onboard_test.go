package interop

import (
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/draft"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/probe"
)

// TestCAP_OwnDocumentAndSampleDraftListsThatCountExactly: a CAP user's two
// ways in. CAP's own OpenAPI document (compiled by @cap-js/openapi from the
// model) documents $top, which OData V4 reads as a cap on the whole result:
// the draft leaves it a TODO, never a fact, and probe --fix settles it on
// the live service; the fixed draft counts every account and one status as
// CAP holds them, complete. A sample of the live list drafts next_url with
// @odata.count as its total, its relative next link read.
func TestCAP_OwnDocumentAndSampleDraftListsThatCountExactly(t *testing.T) {
	c := upstreams.StartCAP(t)
	truth := c.Accounts(t)
	archived := 0
	for _, r := range truth {
		if r["status"] == "archived" {
			archived++
		}
	}
	count := func(t *testing.T, name string, yaml []byte) {
		t.Helper()
		// A filter on status, as the user adds one (airlock's own).
		al := startAirlockYAML(t, name, yaml, nil, func(cfg *config.Config) {
			for _, r := range cfg.Resources {
				if r.Filters == nil {
					r.Filters = map[string]*config.FilterConfig{}
				}
				r.Filters["status"] = &config.FilterConfig{}
			}
		})
		res := al.runtime.ResourceNames()
		if len(res) != 1 {
			t.Fatalf("%s: resources %v", name, res)
		}
		all := al.search(t, map[string]any{"resource": res[0], "max_items": 0, "deadline_ms": deadlineMS})
		one := al.search(t, map[string]any{"resource": res[0], "filter": map[string]any{"status": "archived"}, "max_items": 0, "deadline_ms": deadlineMS})
		if !all.Complete || all.Data.TotalMatched != len(truth) || !one.Complete || one.Data.TotalMatched != archived {
			t.Fatalf("%s: every account %s (CAP holds %d); archived %s (CAP holds %d)", name, all, len(truth), one, archived)
		}
		t.Logf("%s: %d of %d accounts, %d of %d archived, complete", name, all.Data.TotalMatched, len(truth), one.Data.TotalMatched, archived)
	}
	t.Run("its_own_document", func(t *testing.T) {
		d, err := draft.FromOpenAPI(c.OpenAPI(t), draft.Options{Environment: "cap", Resources: []string{"/Accounts"}})
		if err != nil {
			t.Fatal(err)
		}
		y := string(d.YAML)
		if !strings.Contains(y, "dialect: next_url") || !strings.Contains(y, "page_size_param: \"TODO(") {
			t.Fatalf("want next_url with $top left a TODO:\n%s", y)
		}
		res, err := probe.Fix(t.Context(), d.YAML, probe.FixOptions{MaxRequests: 80})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range res.Fixed {
			t.Logf("probe --fix wrote %+v", f)
		}
		if len(res.Left) > 0 {
			t.Fatalf("probe --fix left %q:\n%s", res.Left, res.YAML)
		}
		if _, err := config.Parse(res.YAML); err != nil {
			t.Fatalf("the fixed draft: %v\n%s", err, res.YAML)
		}
		count(t, "the fixed draft of CAP's document", res.YAML)
	})
	t.Run("a_sample", func(t *testing.T) {
		d, err := draft.FromSample(t.Context(), c.URL+"/odata/v4/crm/Accounts?$count=true", draft.SampleOptions{Options: draft.Options{Environment: "cap"}})
		if err != nil {
			t.Fatal(err)
		}
		y := string(d.YAML)
		if !strings.Contains(y, "dialect: next_url") || !strings.Contains(y, `total: "@odata.count"`) {
			t.Fatalf("want next_url with @odata.count:\n%s", y)
		}
		fixed := y
		if len(d.TODOs) > 0 {
			res, err := probe.Fix(t.Context(), d.YAML, probe.FixOptions{MaxRequests: 80})
			if err != nil || len(res.Left) > 0 {
				t.Fatalf("probe --fix: %v, left %q\n%s", err, res.Left, res.YAML)
			}
			fixed = string(res.YAML)
		}
		count(t, "the draft of CAP's sample", []byte(fixed))
	})
}
