package config

import (
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

// A misspelled key is reported with the key that was meant, and the
// required key it leaves missing is reported with it: one pass fixes both.
func TestParseConfig_MisspelledKeySuggestsTheKeyAndReportsItMissing(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines[3] = "    base_ulr: http://127.0.0.1:1"
	got := parseErrors(t, configtest.Lines(lines...))
	checkErrors(t, got, []wantErr{
		{3, "upstreams.api.base_url", "required"},
		{4, "upstreams.api.base_ulr", `unknown key; did you mean "base_url"?`},
	})
}

// A value of the wrong type names its key and what it should be, never
// "value" or a Go type.
func TestParseConfig_WrongTypeNamesTheKey(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines, "    limits: {max_items: {default: lots, cap: 10}}")
	got := parseErrors(t, configtest.Lines(lines...))
	checkErrors(t, got, []wantErr{{13, "resources.items.limits.max_items.default", "wrong type: a string (lots) where an integer is expected"}})
	if strings.Contains(got.Error(), "value:") || strings.Contains(got.Error(), "int") && !strings.Contains(got.Error(), "integer") {
		t.Errorf("the error names a placeholder or a Go type: %v", got)
	}
}

// yaml.v3 reports its parser's problems on the line before: an unclosed
// list is reported where it opens.
func TestParseConfig_UnclosedListIsReportedOnItsOwnLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		line int
		yaml []byte
	}{
		{"list", 4, configtest.Lines("environment: test", "upstreams:", "  api:", "    base_url: [unclosed", "resources: {}")},
		{"mapping", 4, configtest.Lines("environment: test", "upstreams:", "  api:", "    headers: {Accept: x", "resources: {}")},
		{"list on the first line", 1, configtest.Lines("environment: [unclosed", "upstreams: {}")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErrors(t, tc.yaml)
			if len(got) != 1 || got[0].Line != tc.line || !strings.Contains(got[0].Msg, "not closed") {
				t.Errorf("errors = %v, want one on line %d saying what is not closed", got, tc.line)
			}
		})
	}
}

// A file holding a second YAML document is refused at its separator: the
// second half of a configuration is never silently ignored.
func TestParseConfig_RefusesASecondDocument(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines, "---", "environment: other")
	got := parseErrors(t, configtest.Lines(lines...))
	checkErrors(t, got, []wantErr{{13, "config", "a second YAML document"}})

	// A document that opens with --- is one document.
	if _, err := Parse(configtest.Lines(append([]string{"---"}, append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)...)...)); err != nil {
		t.Errorf("a leading --- is refused: %v", err)
	}
}

// A key written twice is reported, and the rest of its mapping is still
// read and checked: the duplicate does not hide the other errors.
func TestParseConfig_DuplicateFieldIsReportedWithTheOtherErrors(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines, "      reactions_1: {type: integer}", "      reactions_1: {type: integer}", "      extra: {type: strng}")
	got := parseErrors(t, configtest.Lines(lines...))
	checkErrors(t, got, []wantErr{
		{14, "resources.items.fields.reactions_1", `duplicate key: "reactions_1" is already defined at line 13`},
		{15, "resources.items.fields.extra.type", "type must be one of"},
	})
}
