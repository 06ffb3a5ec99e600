package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// TestDeclaredUnauthorized_IsAnAuthenticationProblemWithoutTheKey: a 400
// whose __type the upstream's unauthorized declarations match (DynamoDB's
// InvalidSignatureException) is UPSTREAM_UNAUTHORIZED, not a rejected
// value, and the quote of its message (which echoes the Authorization
// header, as AWS's does) holds neither the access key id nor the secret;
// another 400 stays a rejection.
func TestDeclaredUnauthorized_IsAnAuthenticationProblemWithoutTheKey(t *testing.T) {
	const keyID, secret = "AKIDECHOEDBYTHEPEER", "the-wrong-secret-XYZ"
	ts := awsRefusals(t, func(r *http.Request) (string, string) {
		if r.URL.Path == "/sig" {
			return "com.amazon.coral.service#InvalidSignatureException",
				"The request signature we calculated does not match the signature you provided. Authorization: " + r.Header.Get("Authorization") + " secret " + secret
		}
		return "com.amazon.coral.validate#ValidationException", "bad"
	})
	rt := runtimeWith(t, []byte(fmt.Sprintf(`environment: test
upstreams:
  ddb:
    base_url: %q
    retries: 0
    json_media_types: [application/x-amz-json-1.0]
    credential:
      aws_sigv4:
        access_key_id: {env: KEY_ID}
        secret_access_key: {env: SECRET}
        region: us-east-1
        service: dynamodb
    unauthorized:
      - {status: 400, member: __type, match: InvalidSignatureException}
resources:
  a:
    upstream: ddb
    list: {path: /, items: Items}
    pagination: {dialect: cursor, has_more: more}
    id_field: id
    fields: {id: {type: string}}
`, ts.URL)), func(k string) string { return map[string]string{"KEY_ID": keyID, "SECRET": secret}[k] })
	c := rt.Resources["a"].Upstream
	for path, want := range map[string]envelope.ProblemCode{"/sig": envelope.ProblemUpstreamAuth, "/other": envelope.ProblemUpstreamRejected} {
		u, _ := url.Parse(ts.URL + path)
		_, err := c.Do(context.Background(), transport.Request{Method: http.MethodPost, URL: u, Body: []byte(`{}`)})
		p := transport.ProblemFor(err, nil)
		if p.Code != want {
			t.Errorf("%s: %v -> %s; want %s", path, err, p.Code, want)
		}
		b, _ := json.Marshal(p)
		if strings.Contains(string(b), keyID) || strings.Contains(string(b), secret) {
			t.Errorf("%s: the problem holds a credential: %s", path, b)
		}
		if path == "/sig" && (p.UpstreamMessage == "" || !strings.Contains(p.Detail, "authentication failure")) {
			t.Errorf("%s: %s; want the declared failure said and the peer's message quoted", path, b)
		}
	}
}

// awsRefusals is a peer that answers every request 400 in an AWS JSON
// API's error shape, with the __type and message refusal gives for it.
func awsRefusals(t *testing.T, refusal func(r *http.Request) (typ, message string)) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		typ, message := refusal(r)
		body, _ := json.Marshal(map[string]string{"__type": typ, "message": message})
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(body)
	}))
	t.Cleanup(ts.Close)
	return ts
}
