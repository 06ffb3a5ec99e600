package config

import (
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

// Values of the wrong type, and what yaml cannot read, are reported in
// airlock's words at the value's line and column, by their key path.
func TestParseConfig_WrongTypesAreReportedWhereTheyAreWritten(t *testing.T) {
	upstream := append([]string(nil), configtest.MinimalUpstream...)
	for _, tc := range []struct {
		name  string
		lines []string
		want  []wantErr
		col   int
	}{
		{"block list where a mapping belongs", []string{"    backoff:", "      - 1s"},
			[]wantErr{{6, "upstreams.api.backoff", "wrong type: a list where a mapping is expected"}}, 7},
		{"mapping where a duration belongs", []string{"    timeout: {s: 5}"},
			[]wantErr{{5, "upstreams.api.timeout", "wrong type: a mapping where a duration such as 10s or 250ms is expected"}}, 14},
		{"a long value is cut short", []string{"    concurrency: twelve-and-a-half"},
			[]wantErr{{5, "upstreams.api.concurrency", "wrong type: a string (twelve-...) where an integer is expected"}}, 18},
		{"a tagged value that does not fit", []string{"    retries: !!float x"},
			[]wantErr{{5, "upstreams.api.retries", "wrong type: a value tagged !!float (x) where an integer is expected"}}, 14},
		{"a list item of the wrong type", []string{"    headers: {a: [b]}"},
			[]wantErr{{5, "upstreams.api.headers.a", "wrong type: a list where a string is expected"}}, 18},
		{"a key that is a list", []string{"    headers: {[a]: b}"},
			[]wantErr{{5, "upstreams.api.headers", "a key must be a name or a number, not a list"}}, 15},
		{"an alias of its own mapping where a string belongs", []string{"    headers: &h {a: *h}"},
			[]wantErr{{5, "upstreams.api.headers.a", "wrong type: a mapping where a string is expected"}}, 14},
		{"a merge of a list item", []string{"    headers: {<<: [x]}"},
			[]wantErr{{5, "upstreams.api.headers.<<", "a merge (<<) takes a mapping"}}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErrors(t, configtest.Lines(append(append([]string(nil), upstream...), tc.lines...)...))
			// The resource is missing: required, on line 1.
			want := append([]wantErr{{1, "resources", "required"}}, tc.want...)
			checkErrors(t, got, want)
			if len(got) == len(want) && got[len(got)-1].Column != tc.col {
				t.Errorf("column %d, want %d", got[len(got)-1].Column, tc.col)
			}
		})
	}
}

// A value reached through an alias is decoded where the alias is, and a
// wrong type in it is reported once, where it is written.
func TestParseConfig_AliasesAndMergesDecodeLikeWrittenValues(t *testing.T) {
	lines := append([]string{"x-defaults: &d {timeout: 5s, retries: 2, concurrency: lots}"}, configtest.MinimalUpstream...)
	lines = append(lines, "    <<: *d", "    retries: 3", "  other:", "    base_url: http://127.0.0.1:2", "    <<: *d")
	got := parseErrors(t, configtest.Lines(lines...))
	// (What validation finds on line 1, the missing resources, is left
	// out: that line already has its errors.)
	checkErrors(t, got, []wantErr{
		{1, "x-defaults", "unknown key"},
		{1, "upstreams.api.concurrency", "wrong type: a string (lots) where an integer is expected"},
	})
}

// A free-form value yaml cannot read says why, where the cause is
// written.
func TestParseConfig_UnreadableFreeFormValueSaysWhy(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines, "    default_filter: &f {a: {b: *f}}")
	got := parseErrors(t, configtest.Lines(lines...))
	checkErrors(t, got, []wantErr{{13, "resources.items.default_filter.a", "the alias *f refers to a value that contains it"}})
	if len(got) == 1 && got[0].Column != 32 {
		t.Errorf("column %d, want 32 (the alias)", got[0].Column)
	}
}
