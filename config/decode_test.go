package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"go.yaml.in/yaml/v3"
)

// FuzzDecodeConfig_AgreesWithYAML: airlock's walk decodes a document to
// what yaml's own decoder makes of it, and finds a value of the wrong
// type exactly when yaml does, so that its errors replace yaml's without
// losing or inventing any.
func FuzzDecodeConfig_AgreesWithYAML(f *testing.F) {
	f.Add(fixtures.DemoConfig("http://127.0.0.1:1"))
	f.Add([]byte("environment: x\nupstreams: {a: {base_url: 'http://h', retries: 2, timeout: 5s, credential: {env: T}}}\nresources: {r: {upstream: a, list: {path: /x, body: {a: [1, {b: c}]}}, fields: {id: ~}, default_fields: [a, [b], c]}}\n"))
	f.Add([]byte("upstreams: {a: {timeout: 1e99s, retries: many, backoff: [1]}}\nresources: {r: {limits: {max_items: {default: -1, cap: x}}}}"))
	f.Add([]byte("d: &d {timeout: 5s, retries: 1}\nupstreams: {a: {<<: *d, retries: 2}, b: {<<: [*d, {concurrency: 3}]}}"))
	f.Add([]byte("upstreams: {a: {headers: {1: x, ~: y, [z]: w}}}"))
	f.Add([]byte("upstreams: {a: {retries: !!float 1.5, first: !!str 3, concurrency: 2.0, max_body_bytes: 0x10}}"))
	f.Add([]byte("*a: &a [*a]"))
	f.Add([]byte("upstreams: {a: {credential: {env: [x], file: y, query: {q: 1}}}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 16<<10 {
			t.Skip()
		}
		var root yaml.Node
		if yaml.Unmarshal(b, &root) != nil {
			return
		}
		dropDuplicateKeys(&root)
		var byYAML Config
		yerr := root.Decode(&byYAML)
		var te *yaml.TypeError
		if yerr != nil && !errors.As(yerr, &te) {
			return // yaml gave up (aliases, an unreadable key); the walk reports it in its own words
		}
		var ours Config
		var typeErrs Errors
		for _, e := range decodeConfig(&root, &ours) {
			if !strings.HasPrefix(e.Msg, "unknown key") && !strings.Contains(e.Msg, "read as null") {
				typeErrs = append(typeErrs, e)
			}
		}
		ours.keyLines = nil // the walk's own record of where keys are set
		switch {
		case yerr == nil && len(typeErrs) > 0:
			t.Fatalf("the walk refuses what yaml decodes: %v", typeErrs)
		case yerr != nil && len(typeErrs) == 0:
			t.Fatalf("yaml refuses what the walk decodes: %v", yerr)
		case yerr == nil && !reflect.DeepEqual(byYAML, ours):
			t.Fatalf("the walk decodes\n%+v\nwhere yaml decodes\n%+v", ours, byYAML)
		}
	})
}

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

// The one function that reads the YAML parser's wording: the line of a
// scanner's problem is the parser's, a parser's problem is reported one
// line early and moved down, and an unclosed flow collection is moved to
// the line that opens it.
func TestSyntaxError_ReadsTheParsersLineAndProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want Error
	}{
		{"scanner: a tab where indentation belongs", "environment: test\n\tupstreams: {}\n",
			Error{Line: 2, Path: "config", Msg: "found a tab character that violates indentation"}},
		{"scanner: on the first line, yaml names no line", "environment: a: b\n",
			Error{Path: "config", Msg: "mapping values are not allowed in this context"}},
		{"parser: a key indented differently, reported a line early", "upstreams:\n  api: {}\n bad: 1\n",
			Error{Line: 3, Path: "config", Msg: "a line below this one is indented differently from its mapping (did not find expected key)"}},
		{"parser: an unclosed list", "environment: test\nupstreams: [a,\n  b\nresources: {}\n",
			Error{Line: 2, Path: "config", Msg: "a [list] that opens on this line is not closed, or its items are not separated by commas (did not find expected ',' or ']')"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			err := yaml.Unmarshal([]byte(tc.yaml), &n)
			if err == nil {
				t.Fatal("the YAML parsed")
			}
			if got := syntaxError([]byte(tc.yaml), err); got != tc.want {
				t.Errorf("syntaxError(%q) = %+v, want %+v", err, got, tc.want)
			}
		})
	}
}
