package config

import (
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

// literalResource is the minimal configuration with a timestamp field
// (line 13) and one filter, id or since (line 15).
func literalResource(filter string) []byte {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	return configtest.Lines(append(lines, "      updated: {type: timestamp}", "    filters:", "      "+filter)...)
}

// A value the API would read as an operator, and a comparison the API
// would read as another, are declared once, checked with their lines:
// a comparison sent as a parameter that says nothing of how the API reads
// it is refused, naming both ways to say it.
func TestParseConfig_LiteralsAndComparisonFormsAreCheckedWithLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter string
		want   []wantErr
	}{
		{"a comparison sent without saying how the API reads it", "since: {field: updated, op: gte, param: updated_on}",
			[]wantErr{{15, "resources.items.filters.since.param", `a comparison sent as "updated_on" must say how the API reads it: operator: ">="`}}},
		{"both ways at once", `since: {field: updated, op: gte, param: updated_on, operator: ">=", param_compares: true}`,
			[]wantErr{{15, "resources.items.filters.since.operator", "set one of operator"}}},
		{"an operator with nothing sent", `since: {field: updated, op: gte, operator: ">="}`,
			[]wantErr{{15, "resources.items.filters.since.operator", "nothing is sent: set param, or remove operator"}}},
		{"param_compares with nothing sent", `since: {field: updated, op: gte, param_compares: true}`,
			[]wantErr{{15, "resources.items.filters.since.param_compares", "nothing is sent: set param, or remove param_compares"}}},
		{"an operator on an equality", `id: {param: id, operator: "="}`,
			[]wantErr{{15, "resources.items.filters.id.operator", "only op gt, gte, lt or lte takes one"}}},
		{"param_compares on an equality", `id: {param: id, param_compares: true}`,
			[]wantErr{{15, "resources.items.filters.id.param_compares", "only op gt, gte, lt or lte takes it"}}},
		{"a literal on a filter airlock applies alone", `id: {literal: {operators: ["!"], escape: "!"}}`,
			[]wantErr{{15, "resources.items.filters.id.literal", "set param"}}},
		{"a literal that declares nothing", `id: {param: id, literal: {escape: "="}}`,
			[]wantErr{
				{15, "resources.items.filters.id.literal", "declare the operators the API reads at a value's start"},
				{15, "resources.items.filters.id.literal.escape", `a value that starts with the escape "=" would be read as escaped: list it among operators`},
			}},
		{"an escape that is not itself an operator", `id: {param: id, literal: {operators: ["^", "!"], escape: "="}}`,
			[]wantErr{{15, "resources.items.filters.id.literal.escape", `list it among operators`}}},
		{"an escape holding a split string", `id: {param: id, literal: {operators: ["=|"], escape: "=|", split: ["|"]}}`,
			[]wantErr{{15, "resources.items.filters.id.literal.escape", `the escape holds "|"`}}},
		{"an empty operator", `id: {param: id, literal: {operators: [""]}}`,
			[]wantErr{{15, "resources.items.filters.id.literal.operators.0", "an operator is at least one character"}}},
		{"an empty split string", `id: {param: id, literal: {split: [""]}}`,
			[]wantErr{{15, "resources.items.filters.id.literal.split.0", "a split string is at least one character"}}},
		{"a literal on a search", `id: {param: q, search: true, literal: {operators: ["!"]}}`,
			[]wantErr{{15, "resources.items.filters.id.literal", "literal does not apply"}}},
		{"an unknown literal key", `id: {param: id, literal: {operators: ["!"], escapes: "!"}}`,
			[]wantErr{{15, "resources.items.filters.id.literal.escapes", `unknown key; did you mean "escape"?`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, literalResource(tc.filter)), tc.want)
		})
	}
	// And the forms the docs show parse as written: Redmine's, and a
	// parameter that compares by itself.
	for _, f := range []string{
		`id: {param: cf_2, multi: comma, separator: "|", null_param: "!*", literal: {operators: ["=", "!", "~", "^", "$", "*"], escape: "=", split: ["|"]}}`,
		`since: {field: updated, op: gte, param: updated_on, operator: ">="}`,
		`since: {field: updated, op: gte, param: updated_after, param_compares: true}`,
		`since: {field: updated, op: gte}`,
	} {
		if _, err := Parse(literalResource(f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Redmine's reading of a filter value, as declared: a leading operator is
// escaped by =, an empty value or one holding | cannot be carried, and
// without an escape a leading operator keeps the value from the API.
func TestLiteral_WritesWhatTheAPIReadsAsTheValueOrSaysWhyNot(t *testing.T) {
	redmine := &LiteralConfig{Operators: []string{"=", "!", "~", "^", "$", "*"}, Escape: "=", Split: []string{"|"}}
	noEscape := &LiteralConfig{Operators: []string{"!"}}
	for _, tc := range []struct {
		lit  *LiteralConfig
		in   string
		want string
		ok   bool
	}{
		{redmine, "beta", "beta", true},
		{redmine, "^beta", "=^beta", true},
		{redmine, "!ops", "=!ops", true},
		{redmine, "=eq", "==eq", true},
		{redmine, "*star", "=*star", true},
		{redmine, "team ^x", "team ^x", true},
		{redmine, "a|b", "", false},
		{redmine, "", "", false},
		{noEscape, "!ops", "", false},
		{noEscape, "ops!", "ops!", true},
		{nil, "!ops", "!ops", true},
	} {
		got, why, ok := tc.lit.Literal(tc.in)
		if got != tc.want || ok != tc.ok || ok == (why != "") {
			t.Errorf("Literal(%q) = %q, %q, %t; want %q, %t", tc.in, got, why, ok, tc.want, tc.ok)
		}
	}
}
