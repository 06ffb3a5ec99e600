package config

import (
	"strings"
	"testing"
)

// TestDeclaredAnswers_OneAnswerMatchingTwoKindsIsRefusedWithBoth: a
// throttling, conflicts or unauthorized entry that some answer matches
// beside another kind's is refused at its line, naming the other, as the
// matcher matches: the same status, and no member on one side, or the
// same member with one text a suffix of the other (Exception matches
// InvalidSignatureException, so the refused credential would be retried
// as a rate limit).
func TestDeclaredAnswers_OneAnswerMatchingTwoKindsIsRefusedWithBoth(t *testing.T) {
	const base = `environment: test
upstreams:
  u:
    base_url: https://api.example.com
%sresources:
  r:
    upstream: u
    list: {path: /items, items: items}
    pagination: {dialect: cursor, has_more: more}
    id_field: id
    fields: {id: {type: string}}
`
	for _, tc := range []struct {
		name, decl string
		want       []string // "" = accepted
	}{
		{"a suffix on the same member", `    throttling: [{status: 400, member: __type, match: Exception}]
    unauthorized: [{status: 400, member: __type, match: InvalidSignatureException}]
`, []string{`unauthorized.0.match: overlaps throttling.0 (400, __type ending "Exception"): an answer (400, __type ending "InvalidSignatureException") matches both`}},
		{"the longer text first", `    throttling: [{status: 400, member: __type, match: ThrottlingException}]
    unauthorized: [{status: 400, member: __type, match: Exception}]
`, []string{`unauthorized.0.match: overlaps throttling.0 (400, __type ending "ThrottlingException")`}},
		{"equal texts", `    conflicts: [{status: 400, member: __type, match: X}]
    unauthorized: [{status: 400, member: __type, match: X}]
`, []string{`unauthorized.0.match: overlaps conflicts.0 (400, __type ending "X")`}},
		{"a throttle without a member takes every answer of its status", `    throttling: [{status: 400}]
    conflicts: [{status: 400, member: __type, match: ConditionalCheckFailedException}]
    unauthorized: [{status: 400, member: __type, match: InvalidSignatureException}]
`, []string{`conflicts.0.match: overlaps throttling.0 (every 400)`, `unauthorized.0.match: overlaps throttling.0 (every 400)`}},
		{"a conflict and a refusal, the second entry", `    conflicts: [{status: 400, member: __type, match: A}, {status: 400, member: __type, match: ConditionalCheckFailedException}]
    unauthorized: [{status: 400, member: __type, match: FailedException}]
`, []string{`unauthorized.0.match: overlaps conflicts.1 (400, __type ending "ConditionalCheckFailedException")`}},
		{"another status", `    throttling: [{status: 403, member: __type, match: Exception}]
    unauthorized: [{status: 400, member: __type, match: InvalidSignatureException}]
`, nil},
		{"another member", `    throttling: [{status: 400, member: code, match: Exception}]
    unauthorized: [{status: 400, member: __type, match: InvalidSignatureException}]
`, nil},
		{"texts neither a suffix of the other", `    throttling: [{status: 400, member: __type, match: ThrottlingException}]
    conflicts: [{status: 400, member: __type, match: ConditionalCheckFailedException}]
    unauthorized: [{status: 400, member: __type, match: InvalidSignatureException}]
`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(base, "%s", tc.decl, 1)))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("accepted declarations refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("overlapping declarations accepted; want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v; want %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("err = %v; want the entry's line", err)
			}
			if n := strings.Count(err.Error(), "overlaps"); n != len(tc.want) {
				t.Errorf("err = %v; want %d overlaps", err, len(tc.want))
			}
		})
	}
}
