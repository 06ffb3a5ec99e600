package interop

import (
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// drfProbeConfig is one DRF resource with the team filter declared as
// given.
func drfProbeConfig(base, team string) string {
	return `environment: interop
upstreams:
  drf: {base_url: "` + base + `", timeout: 10s}
resources:
  accounts:
    upstream: drf
    list: {path: /api/page/accounts/, items: results}
    pagination: {dialect: next_url, total: count, page_size_param: page_size, page_size: 500}
    id_field: id
    fields:
      id: {type: integer}
      status: {type: string}
      team: {type: string}
      owner: {type: string, nullable: true}
    filters:
      team: ` + team + `
      owner: {is_null: {param: owner__isnull, value: "true"}}   # owner= (empty) filters nothing on DRF
`
}

// TestInitProbe_DjangoRESTFramework: a draft from a live DRF page reads
// the next_url dialect and passes probe; probe sends a team holding a
// comma when the data has one, passes the declarations that carry it
// intact (an exact parameter, or a comma list that leaves it to airlock),
// and names the one that does not (team__in declared as one value), with
// advice that fits an API that does read comma lists.
func TestInitProbe_DjangoRESTFramework(t *testing.T) {
	upstreams.Enabled(t)
	d := upstreams.StartDRF(t)
	bin := buildAirlock(t)
	draft := initDraft(t, bin, nil, "--sample", d.URL+"/api/page/accounts/?page=1&page_size=50")
	for _, want := range []string{"dialect: next_url", "total: count", "items: results"} {
		if !strings.Contains(draft, want) {
			t.Errorf("the draft lacks %q:\n%s", want, draft)
		}
	}
	code, res := probeConfig(t, bin, draft, nil)
	wantClean(t, code, res)

	for _, team := range []string{`{param: team, multi: comma, multi_param: team__in}`, `{param: team__in, multi: comma}`} {
		code, res := probeConfig(t, bin, drfProbeConfig(d.URL, team), nil)
		wantClean(t, code, res)
		if !hasCheck(res, "filters.team.separator") {
			t.Errorf("probe of %s sent no team holding a comma", team)
		}
	}
	code, res = probeConfig(t, bin, drfProbeConfig(d.URL, `{param: team__in}`), nil)
	wantWrong(t, code, res, "filters.team.separator")
	for _, r := range res.Resources {
		for _, c := range r.Checks {
			if c.Check == "filters.team.separator" && !strings.Contains(c.Hint, "multi: comma") {
				t.Errorf("the advice %q does not say to declare the comma list", c.Hint)
			}
		}
	}
}

func hasCheck(res probeResult, check string) bool {
	for _, r := range res.Resources {
		for _, c := range r.Checks {
			if c.Check == check {
				return true
			}
		}
	}
	return false
}
