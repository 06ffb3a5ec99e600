package tools

import (
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
)

// exclusionOracle recovers the value of a string field of one record
// through preview_selection's exclusion counts: a rule "field lt v" on an
// explicit selection of that record counts 1 exactly when the value sorts
// before v, so a binary search per character reads the value out. It
// returns the recovered value and the previews it took, or the number of
// previews made before airlock refused one (recovered false).
func exclusionOracle(h *harness, resource, id, field string, action map[string]any) (value string, previews int, recovered bool) {
	h.t.Helper()
	below := func(v string) (bool, bool) {
		previews++
		r := h.call("preview_selection", map[string]any{"resource": resource, "ids": []any{id}, "action": action,
			"exclude": []any{map[string]any{"field": field, "op": "lt", "value": v, "reason": "probe the value"}}})
		if r.env.Problem != nil {
			return false, false
		}
		counts := r.data["counts"].(map[string]any)
		return counts["excluded"].(float64) == 1, true
	}
	prefix := ""
	for len(prefix) < 80 {
		// value == prefix when it sorts before prefix + the smallest
		// printable character (it is known not to sort before prefix).
		done, ok := below(prefix + " ")
		if !ok {
			return prefix, previews, false
		}
		if done {
			return prefix, previews, true
		}
		lo, hi := 0x20, 0x7e // the next character is in [lo, hi]
		for lo < hi {
			mid := (lo + hi + 1) / 2
			b, ok := below(prefix + string(rune(mid)))
			if !ok {
				return prefix, previews, false
			}
			if b {
				hi = mid - 1
			} else {
				lo = mid
			}
		}
		prefix += string(rune(lo))
	}
	return prefix, previews, true
}

// demoWith is the demo configuration with edits (old, new pairs).
func demoWith(edits ...string) harnessOpt {
	return withConfig(func(url string) []byte {
		y := string(fixtures.DemoConfig(url))
		for i := 0; i+1 < len(edits); i += 2 {
			if !strings.Contains(y, edits[i]) {
				panic("demo configuration edit does not apply: " + edits[i])
			}
			y = strings.Replace(y, edits[i], edits[i+1], 1)
		}
		return []byte(y)
	})
}

// emailFilter declares a filter on the sensitive email field.
var emailFilter = []string{"      disabled: {param: disabled}\n", "      disabled: {param: disabled}\n      email: {}\n"}

var emailRule = map[string]any{"field": "email", "op": "lt", "value": "m", "reason": "probe the value"}

// refusedAsSensitive fails unless r is INVALID_ARGUMENTS naming exactly
// the paths given as sensitive queries, and the upstream saw no request.
func refusedAsSensitive(t *testing.T, h *harness, r result, before int, paths ...string) {
	t.Helper()
	p := r.env.Problem
	if p == nil || p.Code != envelope.ProblemInvalidArguments {
		t.Fatalf("want INVALID_ARGUMENTS, got %+v (%s)", p, r.raw)
	}
	got := fieldsOf(p)
	for _, path := range paths {
		if got[path] != envelope.FieldSensitiveQuery {
			t.Fatalf("want %s refused as %s, got %v", path, envelope.FieldSensitiveQuery, got)
		}
	}
	if n := len(h.api.Requests()); n != before {
		t.Fatalf("a refused query reached the upstream (%d requests)", n-before)
	}
}

// TestSensitiveField_ExclusionCountOracleIsRefused: the binary search over
// exclusion counts that read an e-mail address out of an explicit preview
// is refused at its first preview, naming the field, and nothing is read.
func TestSensitiveField_ExclusionCountOracleIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withEnv(testEnv))
	before := len(h.api.Requests())
	value, previews, recovered := exclusionOracle(h, "service_accounts", "sa_00002", "email", assignOwner)
	if recovered || previews != 1 || value != "" {
		t.Fatalf("the oracle recovered %q in %d previews (recovered %v)", value, previews, recovered)
	}
	r := h.call("preview_selection", map[string]any{"resource": "service_accounts", "ids": []any{"sa_00002"}, "action": assignOwner,
		"exclude": []any{emailRule}})
	refusedAsSensitive(t, h, r, before, "exclude[0].field")
}

// TestSensitiveField_EveryQueryPathIsRefused: a filter, an exclusion rule
// (on a scope or on named ids), a group_by and a manifest group that name
// a sensitive field are refused, every offending argument at once, before
// anything is read.
func TestSensitiveField_EveryQueryPathIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withEnv(testEnv), demoWith(emailFilter...))
	before := len(h.api.Requests())
	t.Run("search_all filter", func(t *testing.T) {
		r := h.call("search_all", map[string]any{"resource": "service_accounts", "filter": map[string]any{"email": "ci-bot-001@iam.example.com"}, "max_items": 0})
		refusedAsSensitive(t, h, r, before, "filter.email")
	})
	t.Run("search_all group_by", func(t *testing.T) {
		r := h.call("search_all", map[string]any{"resource": "service_accounts", "group_by": []any{"email"}, "max_items": 0})
		if fieldsOf(r.env.Problem)["group_by[0]"] != envelope.FieldSensitive {
			t.Fatalf("want group_by[0] refused as sensitive, got %+v", r.env.Problem)
		}
	})
	t.Run("preview filter", func(t *testing.T) {
		r := h.call("preview_selection", map[string]any{"resource": "service_accounts", "filter": map[string]any{"email": []any{"a@iam.example.com", "b@iam.example.com"}}, "action": assignOwner})
		refusedAsSensitive(t, h, r, before, "filter.email")
	})
	t.Run("preview exclusion on a scope", func(t *testing.T) {
		r := h.call("preview_selection", map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": nil}, "action": assignOwner,
			"exclude": []any{map[string]any{"field": "project", "op": "eq", "value": "proj_0001", "reason": "kept"}, emailRule}})
		refusedAsSensitive(t, h, r, before, "exclude[1].field")
		if _, ok := fieldsOf(r.env.Problem)["exclude[0].field"]; ok {
			t.Fatal("a rule on an ordinary field is not refused")
		}
	})
	t.Run("preview of named ids, every offending argument at once", func(t *testing.T) {
		r := h.call("preview_selection", map[string]any{"resource": "service_accounts", "ids": []any{"sa_00002"}, "action": assignOwner,
			"filter": map[string]any{"email": "x@iam.example.com"}, "exclude": []any{emailRule, emailRule}})
		refusedAsSensitive(t, h, r, before, "filter.email", "exclude[0].field", "exclude[1].field")
	})
	t.Run("get_selection group", func(t *testing.T) {
		p := h.call("preview_selection", map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": nil}, "action": assignOwner})
		if p.env.Problem != nil {
			t.Fatalf("preview: %+v", p.env.Problem)
		}
		n := len(h.api.Requests())
		r := h.call("get_selection", map[string]any{"selection_id": p.data["selection_id"], "group": map[string]any{"email": "ci-bot-001@iam.example.com"}})
		refusedAsSensitive(t, h, r, n, "group.email")
	})
}

// TestSensitiveField_MarkedQueryable_AnswersCountsButNeverValues: an
// operator who marks a sensitive field queryable accepts that counts
// disclose it: filters and exclusion rules on it are answered, while its
// values still never leave (fields and group_by stay refused).
func TestSensitiveField_MarkedQueryable_AnswersCountsButNeverValues(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withEnv(testEnv), demoWith(append(emailFilter,
		"email: {type: string, sensitive: true,", "email: {type: string, sensitive: true, queryable: true,")...))
	all := h.call("search_all", map[string]any{"resource": "service_accounts", "max_items": 1})
	rec, ok := h.api.Collection(fixtures.DatasetServiceAccounts).Get(all.ids()[0])
	if !ok {
		t.Fatal("the fixture lost a record")
	}
	email := rec["email"].(string)
	r := h.call("search_all", map[string]any{"resource": "service_accounts", "filter": map[string]any{"email": email}})
	if r.env.Problem != nil || r.totalMatched() != 1 {
		t.Fatalf("a queryable field filters: %+v, total %d", r.env.Problem, r.totalMatched())
	}
	for _, it := range r.items() {
		if _, ok := it["email"]; ok {
			t.Fatal("the value of a queryable sensitive field left airlock")
		}
	}
	p := h.call("preview_selection", map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": nil}, "action": assignOwner,
		"exclude": []any{emailRule}})
	if p.env.Problem != nil {
		t.Fatalf("a queryable field takes exclusion rules: %+v", p.env.Problem)
	}
	for arg, val := range map[string]any{"fields": []any{"id", "email"}, "group_by": []any{"email"}} {
		r := h.call("search_all", map[string]any{"resource": "service_accounts", arg: val})
		if r.env.Problem == nil || !strings.Contains(string(r.raw), string(envelope.FieldSensitive)) {
			t.Fatalf("%s naming a queryable sensitive field must stay refused: %s", arg, r.raw)
		}
	}
	describe := h.call("describe_resources", map[string]any{"resource": "service_accounts"})
	if !strings.Contains(string(describe.raw), `"queryable":true`) {
		t.Fatal("describe_resources says the field is queryable")
	}
}

// BenchmarkSensitiveOracle counts the previews the exclusion-count oracle
// needs to read one e-mail address out (previews-to-recover), or makes
// before airlock refuses it (refused-after-previews).
func BenchmarkSensitiveOracle(b *testing.B) {
	for b.Loop() {
		h := newHarness(b, withEnv(testEnv))
		_, n, ok := exclusionOracle(h, "service_accounts", "sa_00002", "email", assignOwner)
		if ok {
			b.ReportMetric(float64(n), "previews-to-recover")
		} else {
			b.ReportMetric(float64(n), "refused-after-previews")
		}
	}
}
