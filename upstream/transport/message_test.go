package transport

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
		{"oauth", jsonCT, `{"error": "invalid_client", "error_description": "Client authentication failed"}`, "invalid_client: Client authentication failed"},
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

// TestUpstreamMessage_KeepsTheWordsOfTheShapesRealAPIsSend: each body is
// one an API sends as it sends it; the error's name stays beside its
// explanation (CouchDB's error and reason, AWS's __type and message or
// Message, OAuth's error and error_description), and what failed stays
// beside the summary (GitHub's errors, Jira's and Rails' field maps,
// GitLab's message map, NestJS's message list), where an agent used to get
// "bad_request" alone, or nothing.
func TestUpstreamMessage_KeepsTheWordsOfTheShapesRealAPIsSend(t *testing.T) {
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	amzJSON := http.Header{"Content-Type": {"application/x-amz-json-1.0"}}
	problemJSON := http.Header{"Content-Type": {"application/problem+json"}}
	cases := []struct {
		name   string
		header http.Header
		body   string
		want   string
	}{
		{"couchdb bad request", jsonCT, `{"error":"bad_request","reason":"Invalid rev format"}`, "bad_request: Invalid rev format"},
		{"couchdb conflict", jsonCT, `{"error":"conflict","reason":"Document update conflict."}`, "conflict: Document update conflict."},
		{"couchdb not found", jsonCT, `{"error":"not_found","reason":"missing"}`, "not_found: missing"},
		{"aws unknown operation", amzJSON, `{"__type":"com.amazon.coral.service#UnknownOperationException"}`, "UnknownOperationException"},
		{"aws message", amzJSON, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`,
			"ResourceNotFoundException: Requested resource not found"},
		{"aws capital message", amzJSON, `{"__type":"com.amazon.coral.service#SerializationException","Message":"Start of structure or map found where not expected."}`,
			"SerializationException: Start of structure or map found where not expected."},
		{"aws type with its uri", amzJSON, `{"__type":"aws.protocoltests.restjson#FooError:http://internal.amazon.com/coral/com.amazon.coral.validate/","message":"Hi"}`, "FooError: Hi"},
		{"oauth", jsonCT, `{"error":"invalid_grant","error_description":"Invalid authorization code"}`, "invalid_grant: Invalid authorization code"},
		{"rfc 9457 detail", problemJSON, `{"type":"https://example.com/probs/out-of-credit","title":"You do not have enough credit.","detail":"Your current balance is 30, but that costs 50.","instance":"/account/12345/msgs/abc","balance":30}`,
			"Your current balance is 30, but that costs 50."},
		{"rfc 9457 title", problemJSON, `{"type":"about:blank","title":"Not Found","status":404}`, "Not Found"},
		{"google", jsonCT, `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"nam\": Cannot find field.","status":"INVALID_ARGUMENT"}}`,
			`Invalid JSON payload received. Unknown name "nam": Cannot find field.`},
		{"github", jsonCT, `{"message":"Validation Failed","errors":[{"resource":"Issue","code":"custom","field":"title","message":"title is too long (maximum is 256 characters)"}],"documentation_url":"https://docs.github.com/rest/issues/issues#create-an-issue","status":"422"}`,
			"Validation Failed: title is too long (maximum is 256 characters)"},
		{"github without messages", jsonCT, `{"message":"Validation Failed","errors":[{"resource":"Label","code":"already_exists","field":"name"}],"documentation_url":"https://docs.github.com/rest/issues/labels#create-a-label","status":"422"}`,
			"Validation Failed"},
		{"graphql", jsonCT, `{"errors":[{"message":"Cannot query field \"nam\" on type \"Query\".","locations":[{"line":1,"column":3}]}]}`, `Cannot query field "nam" on type "Query".`},
		{"rails field lists", jsonCT, `{"errors":{"name":["can't be blank"],"password":["can't be blank","is too short (minimum is 6 characters)"]}}`,
			"name: can't be blank; password: can't be blank, is too short (minimum is 6 characters)"},
		{"redmine", jsonCT, `{"errors":["Subject cannot be blank","Tracker cannot be blank"]}`, "Subject cannot be blank; Tracker cannot be blank"},
		{"jira field errors", jsonCT, `{"errorMessages":[],"errors":{"summary":"You must specify a summary of the issue."}}`, "summary: You must specify a summary of the issue."},
		{"gitlab field lists", jsonCT, `{"message":{"title":["can't be blank"]}}`, "title: can't be blank"},
		{"nestjs", jsonCT, `{"message":["name must be a string"],"error":"Bad Request","statusCode":400}`, "Bad Request: name must be a string"},
		{"elasticsearch", jsonCT, `{"error":{"root_cause":[{"type":"index_not_found_exception","reason":"no such index [accounts]","index":"accounts"}],"type":"index_not_found_exception","reason":"no such index [accounts]","index":"accounts"},"status":404}`,
			"no such index [accounts]"},
		{"kubernetes", jsonCT, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"web-0\" not found","reason":"NotFound","details":{"name":"web-0","kind":"pods"},"code":404}`,
			`pods "web-0" not found`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := UpstreamMessage(c.header, []byte(c.body)); got != c.want {
				t.Errorf("UpstreamMessage(%s) = %q, want %q", c.body, got, c.want)
			}
		})
	}
}

// TestProblemFor_QuotesCouchDBsReasonWithItsError: a 409 from CouchDB
// reaches the agent as the conflict it names and the reason it gives.
func TestProblemFor_QuotesCouchDBsReasonWithItsError(t *testing.T) {
	he := &HTTPError{Kind: FailStatus, Status: 409, Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(`{"error":"conflict","reason":"Document update conflict."}`)}
	if p := ProblemFor(he, nil); p.Code != envelope.ProblemUpstreamConflict || p.UpstreamMessage != "conflict: Document update conflict." {
		t.Errorf("problem %s with upstream_message %q; want UPSTREAM_CONFLICT quoting CouchDB's error and reason", p.Code, p.UpstreamMessage)
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
