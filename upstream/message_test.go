package upstream

import (
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
)

// TestUpstreamMessage_QuotesTheAPIsOwnWordsFromEveryCommonShape: an
// upstream's error message reaches upstream_message whatever shape the API
// wraps it in, bounded and without markup; an HTML page is no message.
func TestUpstreamMessage_QuotesTheAPIsOwnWordsFromEveryCommonShape(t *testing.T) {
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name   string
		header http.Header
		body   string
		want   string
	}{
		{"datasette", jsonCT, `{"ok": false, "error": "_size must be <= 1000", "status": 400}`, "_size must be <= 1000"},
		{"nested error", jsonCT, `{"error": {"code": 400, "message": "Invalid page token"}}`, "Invalid page token"},
		{"oauth", jsonCT, `{"error": "invalid_client", "error_description": "Client authentication failed"}`, "Client authentication failed"},
		{"rfc 9457", http.Header{"Content-Type": {"application/problem+json"}}, `{"title": "Bad Request", "detail": "cursor expired"}`, "cursor expired"},
		{"graphql", jsonCT, `{"errors": [{"message": "Invalid cursor"}, {"message": "second"}]}`, "Invalid cursor; second"},
		{"jira", jsonCT, `{"errorMessages": ["The value 'X' does not exist for the field 'project'."], "errors": {}}`, "The value 'X' does not exist for the field 'project'."},
		{"django rest framework", jsonCT, `{"team__in": ["Select a valid choice."], "limit": ["Ensure this value is less than or equal to 1000."]}`,
			"limit: Ensure this value is less than or equal to 1000.; team__in: Select a valid choice."},
		{"drf detail", jsonCT, `{"detail": "Invalid cursor"}`, "Invalid cursor"},
		{"plain text", http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, "page size\ttoo\n large", "page size too large"},
		{"html login page", http.Header{"Content-Type": {"text/html"}}, "<html><body>Sign in</body></html>", ""},
		{"control characters", jsonCT, "{\"message\": \"line one\\u0000\\u001b[31m\\nline two\"}", "line one [31m line two"},
		{"no message", jsonCT, `{"code": 17}`, ""},
		{"empty", nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := UpstreamMessage(c.header, []byte(c.body)); got != c.want {
				t.Errorf("UpstreamMessage(%q) = %q, want %q", c.body, got, c.want)
			}
		})
	}
	long := UpstreamMessage(jsonCT, []byte(`{"message": "`+strings.Repeat("é", 400)+`"}`))
	if len(long) > envelope.MaxUpstreamMessage+len("…") || !strings.HasSuffix(long, "…") {
		t.Errorf("a long message is %d bytes (want at most %d, cut with …)", len(long), envelope.MaxUpstreamMessage)
	}
}

// TestProblemFor_CarriesTheUpstreamsMessage: a refused request's problem
// quotes what the API said, so that the agent (and the operator reading
// probe) sees the API's own reason, not only a status.
func TestProblemFor_CarriesTheUpstreamsMessage(t *testing.T) {
	he := &HTTPError{Kind: FailStatus, Status: 400, Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(`{"ok": false, "error": "_size must be <= 1000", "status": 400, "title": "Invalid value"}`)}
	p := ProblemFor(he, nil)
	if p.Code != envelope.ProblemUpstreamRejected || p.UpstreamMessage != "_size must be <= 1000" {
		t.Errorf("problem %s with upstream_message %q; want UPSTREAM_REJECTED_REQUEST quoting the API", p.Code, p.UpstreamMessage)
	}
	local := &HTTPError{Kind: FailStatus, Status: 429, Local: true}
	if p := ProblemFor(local, nil); p.UpstreamMessage != "" {
		t.Errorf("an answer airlock gave itself quotes %q", p.UpstreamMessage)
	}
}
