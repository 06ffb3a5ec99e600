package probe

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
)

// operatorAPI is a fake peer whose team and updated parameters read a
// value as Redmine reads it when operators is set (a leading =, !, ^, ~, $
// or * is an operator, >= and <= compare, the rest is split at |; without
// one, "=" and a bare instant is "at that instant"), and as the exact value
// otherwise; as Redmine, it refuses a team whose first value is blank
// (|beta). It lists with offset, limit and total_count.
func operatorAPI(t *testing.T, operators bool) *httptest.Server {
	t.Helper()
	teams := []string{"beta", "beta", "ops", "^beta", "core", "a|b"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []map[string]any
	for i := range 48 {
		all = append(all, map[string]any{"id": i + 1, "team": teams[i%len(teams)], "updated": start.Add(time.Duration(i%8) * 24 * time.Hour).Format(time.RFC3339)})
	}
	read := func(expr string) (string, []string) {
		if !operators {
			return "=", []string{expr}
		}
		for _, op := range []string{"~", "^", "=", "<=", ">=", "$", "*", "!"} {
			if strings.HasPrefix(expr, op) {
				return op, strings.Split(expr[len(op):], "|")
			}
		}
		return "=", strings.Split(expr, "|")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if expr, set := q["team"]; set && operators {
			// Redmine refuses a filter whose first value is blank (|beta).
			if op, vs := read(expr[0]); op != "*" && vs[0] == "" {
				w.WriteHeader(http.StatusUnprocessableEntity)
				_, _ = w.Write([]byte(`{"errors": ["team cannot be blank"]}`))
				return
			}
		}
		sel := []map[string]any{} // [] when none: null is no list
		for _, it := range all {
			ok := true
			if expr, set := q["team"]; set {
				op, vs := read(expr[0])
				team := it["team"].(string)
				hit := false
				for _, v := range vs {
					switch op {
					case "=":
						hit = hit || team == v
					case "!":
						hit = hit || team != v
					case "^":
						hit = hit || strings.HasPrefix(team, v)
					case "$":
						hit = hit || strings.HasSuffix(team, v)
					case "~":
						hit = hit || strings.Contains(team, v)
					case "*":
						hit = true
					}
				}
				ok = hit
			}
			if expr, set := q["updated"]; set {
				op, vs := read(expr[0])
				got := it["updated"].(string)
				switch op {
				case ">=":
					ok = ok && got >= vs[0]
				case "<=":
					ok = ok && got <= vs[0]
				default:
					ok = ok && got == vs[0]
				}
			}
			if ok {
				sel = append(sel, it)
			}
		}
		offset, _ := strconv.Atoi(q.Get("offset"))
		limit, _ := strconv.Atoi(q.Get("limit"))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issues": sel[min(offset, len(sel)):min(offset+limit, len(sel))], "total_count": len(sel)})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func probeIssues(t *testing.T, base, filters string) *Report {
	t.Helper()
	cfg, err := config.Parse([]byte(`environment: test
upstreams: {api: {base_url: "` + base + `"}}
resources:
  issues:
    upstream: api
    list: {path: /issues.json, items: issues}
    pagination: {dialect: offset, page_size: 20, total: total_count}
    id_field: id
    fields: {id: {type: integer}, team: {type: string}, updated: {type: timestamp}}
    filters:
` + filters + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return CheckAssumptions(t.Context(), rt.Resources["issues"], Options{MaxRequests: 200})
}

// TestProbe_NamesAParameterWhoseAnswerChangesMeaning: on an API that reads a
// leading ^ or ! as an operator and splits at |, a team filter declared
// without a literal is wrong, naming the characters, and so is a comparison
// whose parameter is said to compare but reads a bare instant as "equals";
// declared as the API reads them (the escape, the split, the operator
// text) both are ok. On an API that reads every value as itself, the
// undeclared filter is ok.
func TestProbe_NamesAParameterWhoseAnswerChangesMeaning(t *testing.T) {
	redmine := operatorAPI(t, true)
	naive := probeIssues(t, redmine.URL, `      team: {param: team}
      since: {field: updated, op: gte, param: updated, param_compares: true}`)
	lit := checkOf(naive, "filters.team.literal")
	if lit.Status != Wrong || !strings.Contains(lit.Evidence, `"^"`) || !strings.Contains(lit.Evidence, `"!"`) || !strings.Contains(lit.Evidence, `"|"`) || !strings.Contains(lit.Hint, "literal") {
		t.Errorf("filters.team.literal = %+v; want wrong, naming ^, ! and |, with a hint to declare literal", lit)
	}
	if c := checkOf(naive, "filters.since.param"); c.Status != Wrong || !strings.Contains(c.Hint, `operator: ">="`) {
		t.Errorf("filters.since.param = %+v; want wrong, hinting at the operator text", c)
	}

	declared := probeIssues(t, redmine.URL, `      team: {param: team, literal: {operators: ["=", "!", "~", "^", "$", "*", "<=", ">="], escape: "=", split: ["|"]}}
      since: {field: updated, op: gte, param: updated, operator: ">="}`)
	for _, name := range []string{"filters.team.literal", "filters.team.param", "filters.since.param"} {
		if c := checkOf(declared, name); c.Status != OK {
			t.Errorf("declared as the API reads it, %s = %+v; want ok", name, c)
		}
	}
	if c := checkOf(declared, "filters.team.literal"); !strings.Contains(c.Evidence, `values starting with "|" are applied by airlock alone`) {
		t.Errorf("filters.team.literal evidence %q does not say | is left to airlock", c.Evidence)
	}

	// An escape the API does not read as "equals" is no escape.
	badEscape := probeIssues(t, redmine.URL, `      team: {param: team, literal: {operators: ["!", "^", "~", "$", "*", "="], escape: "!", split: ["|"]}}`)
	if c := checkOf(badEscape, "filters.team.literal"); c.Status != Wrong || !strings.Contains(c.Hint, "escape") {
		t.Errorf("escaped by !, filters.team.literal = %+v; want wrong about the escape", c)
	}

	exact := probeIssues(t, operatorAPI(t, false).URL, `      team: {param: team}`)
	if c := checkOf(exact, "filters.team.literal"); c.Status != OK {
		t.Errorf("on an API that reads values as themselves, filters.team.literal = %+v; want ok", c)
	}
}

// TestFix_DeclaresTheOperatorsAnAPIWasShownToMisread: probe --fix writes
// the literal the probe proved (the leading operators, and | as a string
// the API splits at), after which no value the API would misread is sent
// and the probe passes; a comparison the API does not read as declared is
// left to airlock, its operator declaration with it.
func TestFix_DeclaresTheOperatorsAnAPIWasShownToMisread(t *testing.T) {
	srv := operatorAPI(t, true)
	file := []byte(`environment: test
upstreams: {api: {base_url: "` + srv.URL + `"}}
resources:
  issues:
    upstream: api
    list: {path: /issues.json, items: issues}
    pagination: {dialect: offset, page_size: 20, total: total_count}
    id_field: id
    fields: {id: {type: integer}, team: {type: string}, updated: {type: timestamp}}
    filters:
      team: {param: team}
      since: {field: updated, op: gte, param: updated, param_compares: true}
`)
	res, err := Fix(t.Context(), file, FixOptions{MaxRequests: 200})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(res.YAML)
	if err != nil {
		t.Fatalf("the fixed file does not parse: %v\n%s", err, res.YAML)
	}
	team := cfg.Resources["issues"].Filters["team"]
	if team.Param != "team" || team.Literal == nil || team.Literal.Escape != "" ||
		!slices.Contains(team.Literal.Operators, "^") || !slices.Contains(team.Literal.Operators, "!") || !slices.Equal(team.Literal.Split, []string{"|"}) {
		t.Errorf("team after --fix = %+v (literal %+v); want param kept, ^ and ! among operators, | split, no escape\n%s", team, team.Literal, res.YAML)
	}
	if since := cfg.Resources["issues"].Filters["since"]; since.Param != "" || since.ParamCompares {
		t.Errorf("since after --fix = %+v; want it left to airlock", since)
	}
	for _, rep := range res.Reports {
		for _, c := range rep.Checks {
			if c.Status == Wrong {
				t.Errorf("after --fix, %s is wrong: %s", c.Check, c.Evidence)
			}
		}
	}
}
