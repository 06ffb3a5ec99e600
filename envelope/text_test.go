package envelope

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestText_LeavesOutDefaultsAndExpandPutsThemBack: the text mirror of each
// of the four states drops exactly the members that hold their defaults,
// keeps complete and every non-default member, and Expand restores the
// structured content.
func TestText_LeavesOutDefaultsAndExpandPutsThemBack(t *testing.T) {
	snap := "rv-1"
	scope := func(s *string) *Scope {
		return &Scope{Resource: "projects", Environment: "demo", Upstream: "api.example", Filter: map[string]any{},
			Visibility: DefaultVisibility, Snapshot: s, Consistency: "none"}
	}
	one := func(status, end string) *Coverage {
		return &Coverage{Pages: 2, ItemsScanned: 150, TotalRelation: RelationEq,
			Sources: []SourceCoverage{{Name: "projects", Status: status, Pages: 2, ItemsScanned: 150, End: end, EndSignal: "has_more_false"}}}
	}
	more := NewReason(MorePagesAvailable)
	cases := []struct {
		name   string
		env    Envelope
		absent []string
		kept   []string
	}{
		{"complete_empty", Envelope{Scope: scope(nil), Coverage: one(SourceComplete, EndProven), Data: map[string]any{"items": []any{}}},
			[]string{`"incomplete_reasons"`, `"warnings"`, `"continuation"`, `"snapshot"`, `"visibility"`, `"consistency"`, `"filter"`, `"name"`, `"status"`,
				`"total_relation"`},
			[]string{`"complete":true`, `"end":"proven"`, `"items":[]`}},
		{"complete_items", Envelope{Scope: scope(&snap), Coverage: one(SourceComplete, EndProven), Data: map[string]any{"items": []any{map[string]any{"id": "p1"}}}},
			[]string{`"incomplete_reasons"`, `"continuation"`},
			[]string{`"complete":true`, `"snapshot":"rv-1"`, `"id":"p1"`}},
		{"partial_items", Envelope{Scope: scope(nil), Coverage: one(SourcePartial, ""), IncompleteReasons: []Reason{more},
			Continuation: Continuation{Kind: ContinueNextCursor, Cursor: "c1"}, Data: map[string]any{"items": []any{map[string]any{"id": "p1"}}}},
			[]string{`"warnings"`, `"end"`},
			[]string{`"complete":false`, `"MORE_PAGES_AVAILABLE"`, `"cursor":"c1"`, `"total_relation":"eq"`}},
		{"partial_empty", Envelope{Scope: scope(nil), Coverage: one(SourceDown, ""), IncompleteReasons: []Reason{NewReason(SourceUnavailable)},
			Data: map[string]any{"items": []any{}}},
			[]string{`"warnings"`, `"continuation"`},
			[]string{`"complete":false`, `"SOURCE_UNAVAILABLE"`, `"status":"unavailable"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.env.Finish()
			full := c.env.Marshal()
			text := string(Text(full))
			for _, a := range c.absent {
				if strings.Contains(text, a) {
					t.Errorf("the text keeps %s: %s", a, text)
				}
			}
			for _, k := range c.kept {
				if !strings.Contains(text, k) {
					t.Errorf("the text lost %s: %s", k, text)
				}
			}
			var got, want any
			_ = json.Unmarshal(Expand([]byte(text)), &got)
			_ = json.Unmarshal(full, &want)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if string(gb) != string(wb) {
				t.Fatalf("Expand(Text(s)) differs from s:\n%s\n%s", gb, wb)
			}
		})
	}
}
