package interop

// The real-upstream suite: airlock, in process, against json-server,
// PocketBase, a Docker registry, Django REST Framework, PostGraphile and
// WordPress started by interop/upstreams, configured by the files in
// testdata/ as a user would write them. Every answer is checked against
// the upstream's own data, read directly over HTTP or from its database.
//
// It runs only with AIRLOCK_TEST_REAL_UPSTREAMS=1 (CI sets it).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

func TestMain(m *testing.M) {
	code := m.Run()
	upstreams.Cleanup()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// airlock calls the tool handlers in process, checking every result
// against the tool's output schema.
type airlock struct {
	runtime *upstream.Runtime
	specs   map[string]tools.Spec
	schemas map[string]*envelope.Validator
}

// startAirlock loads testdata/<config> with base_url filled in; env holds
// the credentials the configuration names.
func startAirlock(t testing.TB, config, baseURL string, env map[string]string) *airlock {
	t.Helper()
	return startAirlockWith(t, config, baseURL, env, nil)
}

// startAirlockWith is startAirlock with the parsed configuration changed
// by edit (when not nil) before airlock starts.
func startAirlockWith(t testing.TB, config, baseURL string, env map[string]string, edit func(*configpkg.Config)) *airlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", config))
	if err != nil {
		t.Fatal(err)
	}
	return startAirlockYAML(t, "testdata/"+config, []byte(strings.ReplaceAll(string(b), "{{BASE_URL}}", baseURL)), env, edit)
}

// startAirlockYAML is startAirlockWith for a configuration in hand (a
// draft), named name in failures.
func startAirlockYAML(t testing.TB, name string, yaml []byte, env map[string]string, edit func(*configpkg.Config)) *airlock {
	t.Helper()
	cfg, err := configpkg.Parse(yaml)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if edit != nil {
		edit(cfg)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatalf("initialize %s: %v", name, err)
	}
	a := &airlock{runtime: rt, specs: map[string]tools.Spec{}, schemas: map[string]*envelope.Validator{}}
	for _, s := range mustDeps(t, tools.Config{Runtime: rt}).Specs() {
		v, err := envelope.CompileSchema(s.Name, s.OutputSchema())
		if err != nil {
			t.Fatal(err)
		}
		a.specs[s.Name], a.schemas[s.Name] = s, v
	}
	return a
}

// answer is the part of a search_all result the suite reads.
type answer struct {
	Status            string `json:"status"`
	Complete          bool   `json:"complete"`
	IncompleteReasons []struct {
		Code        string `json:"code"`
		Limit       *int   `json:"limit"`
		LimitSource string `json:"limit_source"`
		Signal      string `json:"signal"`
	} `json:"incomplete_reasons"`
	Continuation struct {
		Kind   string `json:"kind"`
		Cursor string `json:"cursor"`
	} `json:"continuation"`
	Warnings []struct {
		Code   string   `json:"code"`
		Fields []string `json:"fields"`
	} `json:"warnings"`
	Coverage *struct {
		Pages        int `json:"pages"`
		ItemsScanned int `json:"items_scanned"`
	} `json:"coverage"`
	Data struct {
		Items         []map[string]any `json:"items"`
		TotalMatched  int              `json:"total_matched"`
		TotalRelation string           `json:"total_relation"`
		Groups        map[string][]struct {
			Value any `json:"value"`
			Count int `json:"count"`
		} `json:"groups"`
	} `json:"data"`
	Problem *struct {
		Code            string `json:"code"`
		Detail          string `json:"detail"`
		UpstreamMessage string `json:"upstream_message"`
	} `json:"problem"`
}

// String is the answer in a line, for failure messages.
func (a answer) String() string {
	if a.Problem != nil {
		return fmt.Sprintf("status %s, problem %s (%s)", a.Status, a.Problem.Code, a.Problem.Detail)
	}
	var reasons []string
	for _, r := range a.IncompleteReasons {
		s := r.Code
		if r.Limit != nil {
			s += fmt.Sprintf(" limit %d/%s", *r.Limit, r.LimitSource)
		}
		if r.Signal != "" {
			s += " " + r.Signal
		}
		reasons = append(reasons, s)
	}
	var warnings []string
	for _, w := range a.Warnings {
		s := w.Code
		if len(w.Fields) > 0 {
			s += " " + strings.Join(w.Fields, ",")
		}
		warnings = append(warnings, s)
	}
	pages := 0
	if a.Coverage != nil {
		pages = a.Coverage.Pages
	}
	return fmt.Sprintf("complete %t, total_matched %d (%s), %d pages, reasons [%s], continuation %s, warnings [%s]",
		a.Complete, a.Data.TotalMatched, a.Data.TotalRelation, pages, strings.Join(reasons, "; "), a.Continuation.Kind, strings.Join(warnings, "; "))
}

// search calls search_all.
func (a *airlock) search(t *testing.T, args map[string]any) answer {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	env := a.specs["search_all"].Handler(t.Context(), &tools.Call{RequestID: "interop", Raw: raw})
	env.Finish()
	b := env.Marshal()
	if err := a.schemas["search_all"].Validate(b); err != nil {
		t.Fatalf("search_all result breaks its output schema: %v\n%s", err, b)
	}
	var ans answer
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatalf("decode search_all result: %v", err)
	}
	return ans
}

// walk calls search_all and follows continuation.cursor until the answer
// offers none, collecting the idField of every delivered item. It returns
// the last answer.
func (a *airlock) walk(t *testing.T, args map[string]any, idField string) (answer, []string) {
	t.Helper()
	args = clone(args)
	var ids []string
	for calls := 1; ; calls++ {
		ans := a.search(t, args)
		for _, it := range ans.Data.Items {
			ids = append(ids, idOf(it[idField]))
		}
		if ans.Continuation.Kind != envelope.ContinueNextCursor {
			return ans, ids
		}
		if calls == 500 {
			t.Fatalf("the continuation did not end within 500 calls: %s", ans)
		}
		args["cursor"] = ans.Continuation.Cursor
	}
}

// idOf is an id as a string: a string as it is, a number in decimal.
func idOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkClaim is the assertion every case makes, correct configuration or
// not: an exact total (complete: true always carries one) is the upstream's
// true count, and a lower bound does not exceed it.
func checkClaim(t *testing.T, what string, ans answer, truth int) {
	t.Helper()
	if ans.Complete && ans.Data.TotalRelation != envelope.RelationEq {
		t.Errorf("%s: complete with a %q total: %s", what, ans.Data.TotalRelation, ans)
	}
	switch ans.Data.TotalRelation {
	case envelope.RelationEq:
		if ans.Data.TotalMatched != truth {
			t.Errorf("%s: %s; the upstream holds %d", what, ans, truth)
		}
	case envelope.RelationGte:
		if ans.Data.TotalMatched > truth {
			t.Errorf("%s: a lower bound above the truth: %s; the upstream holds %d", what, ans, truth)
		}
	}
}

// checkItems: a complete walk delivered exactly the upstream's records,
// each once.
func checkItems(t *testing.T, what string, ans answer, got, want []string) {
	t.Helper()
	if !ans.Complete {
		return
	}
	sorted := slices.Sorted(slices.Values(got))
	if slices.Equal(sorted, want) {
		return
	}
	missing, extra := diff(want, sorted)
	t.Errorf("%s: complete, but delivered %d ids for the upstream's %d: %d missing (e.g. %v), %d unexpected or repeated (e.g. %v)",
		what, len(got), len(want), len(missing), head(missing), len(extra), head(extra))
}

// diff returns what want has that got lacks, and what got has beyond want
// (repeats included). Both are sorted.
func diff(want, got []string) (missing, extra []string) {
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || i < len(want) && want[i] < got[j]:
			missing = append(missing, want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			extra = append(extra, got[j])
			j++
		default:
			i++
			j++
		}
	}
	return missing, extra
}

func head(s []string) []string { return s[:min(len(s), 3)] }

// checkGroups: complete group counts are the upstream's counts.
func checkGroups(t *testing.T, what string, ans answer, field string, truth map[string]int) {
	t.Helper()
	if !ans.Complete {
		return
	}
	got := map[string]int{}
	for _, g := range ans.Data.Groups[field] {
		got[fmt.Sprint(g.Value)] = g.Count
	}
	if fmt.Sprint(got) != fmt.Sprint(truth) {
		t.Errorf("%s: complete, with %s counts %v; the upstream holds %v", what, field, got, truth)
	}
}

// upstreamCase is one resource and filter of a real upstream, with the
// upstream's own records that the filter selects.
type upstreamCase struct {
	name     string
	resource string
	filter   map[string]any
	keep     func(upstreams.Record) bool
	// correct marks a configuration that fits the upstream: airlock must
	// then reach complete: true. A misconfiguration must only never claim
	// what is not so.
	correct bool
}

// deadlineMS is every call's time budget: generous, so that on a busy
// machine only the upstream and the configuration decide the answer.
const deadlineMS = 60000

// runCase checks one case two ways: counts only, with group counts by
// groupBy when it is set, and a walk of every item through continuation
// cursors, reading idField of each.
func runCase(t *testing.T, al *airlock, c upstreamCase, truth []upstreams.Record, idField, groupBy string) {
	want := upstreams.IDs(truth, c.keep)
	args := map[string]any{"resource": c.resource, "deadline_ms": deadlineMS}
	if c.filter != nil {
		args["filter"] = c.filter
	}

	counts := clone(args)
	counts["max_items"] = 0
	if groupBy != "" {
		counts["group_by"] = []string{groupBy}
	}
	ans := al.search(t, counts)
	t.Logf("counts only: %s; the upstream holds %d", ans, len(want))
	checkClaim(t, "counts only", ans, len(want))
	if groupBy != "" {
		groups := map[string]int{}
		for _, r := range truth {
			if c.keep == nil || c.keep(r) {
				groups[fmt.Sprint(r[groupBy])]++
			}
		}
		checkGroups(t, "counts only", ans, groupBy, groups)
	}
	if c.correct && !ans.Complete {
		t.Errorf("counts only: a correct configuration should cover the scope: %s", ans)
	}

	items := clone(args)
	items["max_items"] = 1000
	items["fields"] = []string{idField}
	last, ids := al.walk(t, items, idField)
	t.Logf("continuation walk: %d ids delivered, last answer %s", len(ids), last)
	checkClaim(t, "continuation walk", last, len(want))
	checkItems(t, "continuation walk", last, ids, want)
	if c.correct && !last.Complete {
		t.Errorf("continuation walk: a correct configuration should deliver the whole scope: %s", last)
	}
}

func mustDeps(t testing.TB, c tools.Config) *tools.Deps {
	t.Helper()
	d, err := tools.New(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
