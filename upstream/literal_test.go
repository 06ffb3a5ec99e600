package upstream

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// redmineTeams are the teams the fake Redmine holds: names that start with
// each operator Redmine reads, one holding its list separator, a plain one
// that a misread operator would match, and "" (no team, written Redmine's
// way).
var redmineTeams = []string{"^beta", "beta", "!ops", "ops", "~core", "core", "*star", "a|b", "=eq", "$end", "équipe", ""}

// fakeRedmine answers GET /issues.json as Redmine 5.0 does
// (app/models/query.rb, add_short_filter): a value's leading operator is
// the longest of the filter type's operators it starts with, else "=";
// what follows is split at every "|". cf_2 is a string custom field,
// updated_on a date filter; offset, limit and total_count page the list.
type fakeRedmine struct {
	issues []map[string]any
	// queries are the raw query strings it was sent.
	queries []string
}

func newFakeRedmine(n int) *fakeRedmine {
	f := &fakeRedmine{}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		team := any(redmineTeams[i%len(redmineTeams)])
		if i%13 == 0 {
			team = nil // no value at all
		}
		f.issues = append(f.issues, map[string]any{
			"id": i,
			"custom_fields": []any{
				map[string]any{"id": 1, "name": "region", "value": "eu"},
				map[string]any{"id": 2, "name": "team", "value": team},
			},
			"updated_on": start.Add(time.Duration(i%17) * 24 * time.Hour).Format(time.RFC3339),
		})
	}
	return f
}

func (f *fakeRedmine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.queries = append(f.queries, r.URL.RawQuery)
	matched := []map[string]any{} // [] when none: null is no list
	for _, is := range f.issues {
		team := is["custom_fields"].([]any)[1].(map[string]any)["value"]
		ts, _ := team.(string)
		ok := true
		if expr, set := q["cf_2"]; set {
			ok = ok && redmineMatch(expr[0], []string{"~", "=", "!~", "!", "^", "$", "!*", "*"}, func(op, v string) bool {
				switch op {
				case "=":
					return ts == v
				case "!":
					return ts != v
				case "~":
					return strings.Contains(ts, v)
				case "!~":
					return !strings.Contains(ts, v)
				case "^":
					return strings.HasPrefix(ts, v)
				case "$":
					return strings.HasSuffix(ts, v)
				case "*":
					return ts != ""
				}
				return ts == "" // !*
			})
		}
		if expr, set := q["updated_on"]; set {
			got, _ := time.Parse(time.RFC3339, is["updated_on"].(string))
			ok = ok && redmineMatch(expr[0], []string{"=", ">=", "<=", "!*", "*"}, func(op, v string) bool {
				want, err := time.Parse(time.RFC3339, v)
				switch {
				case err != nil:
					return false
				case op == ">=":
					return !got.Before(want)
				case op == "<=":
					return !got.After(want)
				}
				return got.Equal(want)
			})
		}
		if ok {
			matched = append(matched, is)
		}
	}
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	page := matched[min(offset, len(matched)):min(offset+limit, len(matched))]
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"issues": page, "total_count": len(matched), "offset": offset, "limit": limit})
}

// redmineMatch reads expr as Redmine does: the operators tried in reverse
// sorted order, the first that is a prefix wins, the rest split at "|";
// with none, "=" and the whole value split. A record matches when the
// operator holds for any of the values ("!" and "!~" for all of them).
func redmineMatch(expr string, ops []string, holds func(op, v string) bool) bool {
	sorted := slices.Clone(ops)
	sort.Sort(sort.Reverse(sort.StringSlice(sorted)))
	op, rest := "=", expr
	for _, o := range sorted {
		if strings.HasPrefix(expr, o) {
			op, rest = o, expr[len(o):]
			break
		}
	}
	values := strings.Split(rest, "|")
	if op == "!" || op == "!~" {
		for _, v := range values {
			if !holds(op, v) {
				return false
			}
		}
		return true
	}
	for _, v := range values {
		if holds(op, v) {
			return true
		}
	}
	return false
}

// redmineConfig declares the fake Redmine as docs/config.md says to, or
// without the literal and the comparison's operator (bare) as a
// configuration that trusted the API to read every value as itself would.
func redmineConfig(base string, declared bool) []byte {
	literal, operator := `, literal: {operators: ["=", "!", "~", "^", "$", "*"], escape: "=", split: ["|"]}`, `operator: ">="`
	if !declared {
		literal, operator = "", "param_compares: true"
	}
	return listConfig(base, `  issues:
    upstream: api
    list: {path: /issues.json, items: issues}
    pagination: {dialect: offset, offset_param: offset, page_size_param: limit, page_size: 25, total: total_count}
    id_field: id
    fields:
      id: {type: integer}
      team: {type: string, path: custom_fields.1.value, nullable: true, null_values: [""]}
      updated_on: {type: timestamp}
    filters:
      team: {param: cf_2, multi: comma, separator: "|", null_param: "!*"`+literal+`}
      updated_since: {field: updated_on, op: gte, param: updated_on, `+operator+`}
`)
}

// TestLiteral_ValuesRedmineReadsAsOperatorsAreEscapedOrLeftToAirlock: a
// team that starts with an operator goes as =team, a list is escaped once
// at its start, and a value that holds | (which Redmine splits at
// anywhere) or is empty is never sent: airlock applies it alone, and a
// count is then never taken from the API's total.
func TestLiteral_ValuesRedmineReadsAsOperatorsAreEscapedOrLeftToAirlock(t *testing.T) {
	r := runtimeFor(t, redmineConfig("http://redmine.test", true)).Resources["issues"]
	r.Pagination.TotalExact = true // so that CountFromTotal says whether every filter was sent
	for _, c := range []filterCase{
		{"a plain team", map[string]any{"team": "beta"}, "cf_2=beta", true},
		{"a team starting with ^", map[string]any{"team": "^beta"}, "cf_2=%3D%5Ebeta", true},
		{"a team starting with !", map[string]any{"team": "!ops"}, "cf_2=%3D%21ops", true},
		{"a team starting with =", map[string]any{"team": "=eq"}, "cf_2=%3D%3Deq", true},
		{"a team starting with *", map[string]any{"team": "*star"}, "cf_2=%3D%2Astar", true},
		{"a team holding |", map[string]any{"team": "a|b"}, "", false},
		{"an empty team", map[string]any{"team": []any{"", "beta"}}, "", false},
		{"a list starting with an operator", map[string]any{"team": []any{"~core", "beta"}}, "cf_2=%3D~core%7Cbeta", true},
		{"a list with an operator inside", map[string]any{"team": []any{"beta", "!ops"}}, "cf_2=beta%7C%21ops", true},
		{"a list with a member holding |", map[string]any{"team": []any{"beta", "a|b"}}, "", false},
		{"null, in Redmine's own words", map[string]any{"team": nil}, "cf_2=%21%2A", true},
		{"a comparison, with its operator", map[string]any{"updated_since": "2025-01-05T00:00:00Z"}, "updated_on=%3E%3D2025-01-05T00%3A00%3A00Z", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			typed, errs := r.TypedFilter(c.filter)
			if len(errs) > 0 {
				t.Fatalf("filter refused: %v", errs)
			}
			p := &dialect.Params{Kind: config.ListQuery, Query: url.Values{}}
			r.SendFilters(p, typed)
			if got := p.Query.Encode(); got != c.want {
				t.Errorf("sent %q, want %q", got, c.want)
			}
			if got := r.CountFromTotal(typed, nil); got != c.exact {
				t.Errorf("CountFromTotal = %v, want %v", got, c.exact)
			}
		})
	}
}

// TestLiteral_OperatorLadenTeamsCountExactlyOnAFakeRedmine: against a
// server that reads values as Redmine does, every team, whatever its first
// character, a list of them, null, and an updated_on comparison are each
// answered complete with exactly the records that hold them.
func TestLiteral_OperatorLadenTeamsCountExactlyOnAFakeRedmine(t *testing.T) {
	f := newFakeRedmine(120)
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	truth := func(keep func(map[string]any) bool) []string {
		var ids []string
		for _, is := range f.issues {
			if keep(is) {
				ids = append(ids, strconv.Itoa(is["id"].(int)))
			}
		}
		sort.Strings(ids)
		return ids
	}
	teamOf := func(is map[string]any) any { return is["custom_fields"].([]any)[1].(map[string]any)["value"] }
	type tc struct {
		name   string
		filter map[string]any
		keep   func(map[string]any) bool
	}
	var cases []tc
	for _, team := range redmineTeams[:len(redmineTeams)-1] {
		cases = append(cases, tc{"team " + team, map[string]any{"team": team}, func(is map[string]any) bool { return teamOf(is) == team }})
	}
	cases = append(cases,
		tc{"no team", map[string]any{"team": nil}, func(is map[string]any) bool { return teamOf(is) == nil || teamOf(is) == "" }},
		tc{"teams ^beta or !ops", map[string]any{"team": []any{"^beta", "!ops"}}, func(is map[string]any) bool { return teamOf(is) == "^beta" || teamOf(is) == "!ops" }},
		tc{"updated since", map[string]any{"updated_since": "2025-01-09T00:00:00Z"}, func(is map[string]any) bool { return is["updated_on"].(string) >= "2025-01-09T00:00:00Z" }},
	)
	r := runtimeFor(t, redmineConfig(ts.URL, true)).Resources["issues"]
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := truth(c.keep)
			typed, errs := r.TypedFilter(c.filter)
			if len(errs) > 0 {
				t.Fatalf("filter refused: %v", errs)
			}
			sink, out, err := scanAll(t, r, typed, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(slices.Values(sink.ids))
			if !out.ScanComplete || !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("complete %t, %d ids; want complete with the %d that hold it (last query %q)", out.ScanComplete, len(got), len(want), f.queries[len(f.queries)-1])
			}
		})
	}
	// The fake misreads as Redmine does: sent bare, ^beta asks for the
	// teams that start with "beta", which airlock's own check rejects.
	bare := runtimeFor(t, redmineConfig(ts.URL, false)).Resources["issues"]
	if _, out, _ := scanAll(t, bare, map[string]any{"team": "^beta"}, Budget{}); out.ScanComplete || reasonOf(out, envelope.ConflictingEvidence) == nil {
		t.Errorf("^beta sent bare: complete %t; want doubt (CONFLICTING_EVIDENCE): the fake should read an operator", out.ScanComplete)
	}
}
