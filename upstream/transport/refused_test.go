package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/oauthtest"
)

// declaredExpired is an upstream's refusal of a credential that is not a
// 401: DynamoDB's 400 naming ExpiredTokenException.
const declaredExpired = "unauthorized: [{status: 400, member: __type, match: ExpiredTokenException}]"

// refuse400 answers a declared refusal whose message quotes the
// request's Authorization header, as AWS's answers do.
func refuse400(w http.ResponseWriter, r *http.Request, typ string) {
	msg, _ := json.Marshal("The security token included in the request is invalid. Authorization: " + r.Header.Get("Authorization") +
		" X-Amz-Security-Token: " + r.Header.Get("X-Amz-Security-Token"))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"__type":"com.amazonaws#%s","message":%s}`, typ, msg)
}

// TestDeclaredRefusal_DropsTheAccessTokenAndRepeatsTheRead: an answer the
// upstream declares a refused credential is a 401 in every way: the
// access token it was sent with is dropped and the read is sent once more
// with a new one.
func TestDeclaredRefusal_DropsTheAccessTokenAndRepeatsTheRead(t *testing.T) {
	te := &oauthtest.TokenEndpoint{}
	var hits atomic.Int64
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-1-") {
			refuse400(w, r, "ExpiredTokenException")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	})
	c, base := oauthClient(t, te, api, declaredExpired, "", Options{})
	resp, err := get(t, c, base.URL)
	if err != nil {
		t.Fatalf("a read refused by a declared 400 is repeated with a new token: %v", err)
	}
	if resp.Status != 200 || te.Requests.Load() != 2 || hits.Load() != 2 {
		t.Fatalf("status %d, %d token requests, %d API requests; want 200, 2, 2", resp.Status, te.Requests.Load(), hits.Load())
	}
}

// TestDeclaredRefusal_EndsTheSessionAndLogsInAgain: a session whose token
// the API refuses with a declared 400 logs in again, as after a 401.
func TestDeclaredRefusal_EndsTheSessionAndLogsInAgain(t *testing.T) {
	var logins, hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/login" {
			fmt.Fprintf(w, `{"token":"session-token-%d-0123456789"}`, logins.Add(1))
			return
		}
		hits.Add(1)
		if r.Header.Get("Authorization") == "session-token-1-0123456789" {
			refuse400(w, r, "ExpiredTokenException")
			return
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, declaredExpired+"\n"+
		`credential: {session: {secrets: {password: {env: TEST_TOKEN}}, steps: [{name: auth, method: POST, path: /login, json: {password: "{{secrets.password}}"}, capture: {token: token}}], header: {name: Authorization, value: "{{auth.token}}"}}}`,
		Options{})
	resp, err := get(t, c, srv.URL)
	if err != nil {
		t.Fatalf("a read refused by a declared 400 logs in again and is repeated: %v", err)
	}
	if resp.Status != 200 || logins.Load() != 2 || hits.Load() != 2 {
		t.Fatalf("status %d, %d logins, %d API requests; want 200, 2, 2", resp.Status, logins.Load(), hits.Load())
	}
}

// TestEchoedSentCredential_NeverReachesUpstreamMessage: an error answer
// that quotes the credential headers the request sent (a SigV4
// Authorization with its per-request Signature, which no stored secret
// matches; an access token obtained for the request) is quoted without
// any of them.
func TestEchoedSentCredential_NeverReachesUpstreamMessage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request)
		client func(t *testing.T, api http.Handler) (*Client, string)
		code   envelope.ProblemCode
	}{
		{
			name:   "aws_sigv4, a declared 400",
			answer: func(w http.ResponseWriter, r *http.Request) { refuse400(w, r, "InvalidSignatureException") },
			client: func(t *testing.T, api http.Handler) (*Client, string) {
				srv := httptest.NewServer(api)
				t.Cleanup(srv.Close)
				env := map[string]string{"K": "AKIDEXAMPLE", "S": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "T": "session-token-of-temporary-keys"}
				return newTestClient(t, srv.URL, `unauthorized: [{status: 400, member: __type, match: InvalidSignatureException}]
credential: {aws_sigv4: {access_key_id: {env: K}, secret_access_key: {env: S}, session_token: {env: T}, region: us-east-1, service: dynamodb}}`,
					Options{Getenv: func(k string) string { return env[k] }}), srv.URL
			},
			code: envelope.ProblemUpstreamAuth,
		},
		{
			name: "oauth2, a 401",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				msg, _ := json.Marshal("token refused: " + r.Header.Get("Authorization"))
				fmt.Fprintf(w, `{"error":"invalid_token","message":%s}`, msg)
			},
			client: func(t *testing.T, api http.Handler) (*Client, string) {
				c, srv := oauthClient(t, &oauthtest.TokenEndpoint{}, api, "", "", Options{})
				return c, srv.URL
			},
			code: envelope.ProblemUpstreamAuth,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent []string
			api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sent = append(sent, r.Header.Get("Authorization"))
				tc.answer(w, r)
			})
			c, base := tc.client(t, api)
			_, err := get(t, c, base)
			p := ProblemFor(err, nil)
			if p.Code != tc.code || p.UpstreamMessage == "" {
				t.Fatalf("%v -> %s %q; want %s with the message quoted", err, p.Code, p.UpstreamMessage, tc.code)
			}
			b, _ := json.Marshal(p)
			for _, auth := range sent {
				_, creds, _ := strings.Cut(auth, " ")
				parts := []string{auth, creds}
				if _, sig, ok := strings.Cut(auth, "Signature="); ok {
					parts = append(parts, sig)
				}
				for _, s := range parts {
					if strings.Contains(string(b), s) || strings.Contains(string(he(t, err).Body), s) {
						t.Errorf("the answer's quote holds the sent credential %q: %s", s, b)
					}
				}
			}
			if strings.Contains(string(b), "session-token-of-temporary-keys") {
				t.Errorf("the quote holds the session token: %s", b)
			}
		})
	}
}

func he(t *testing.T, err error) *HTTPError {
	t.Helper()
	return asHTTPError(t, err)
}

// TestSentSecrets_TakesTheHeaderItsCredentialsAndItsLongParts: what is
// redacted of a sent credential header: the whole value, what follows
// the scheme, and each name=value part long enough to be a secret.
func TestSentSecrets_TakesTheHeaderItsCredentialsAndItsLongParts(t *testing.T) {
	const sig = "3fe7aa46090efffdd824c3d0de10504053541569ccc0713efd0782a3e6be591d"
	for _, tc := range []struct {
		value string
		want  []string
	}{
		{"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261207/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + sig,
			[]string{"Credential=AKIDEXAMPLE/20261207/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + sig, "AKIDEXAMPLE/20261207/us-east-1/dynamodb/aws4_request", sig}},
		{"Bearer tok-1-abc", []string{"Bearer tok-1-abc", "tok-1-abc"}},
		{"wiki_session=0123456789abcdef0123; wikiUserID=2", []string{"0123456789abcdef0123"}},
	} {
		got := sentSecrets(tc.value)
		if got[0] != tc.value {
			t.Errorf("%q: the whole value is not first: %q", tc.value, got)
		}
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: %q lacks %q", tc.value, got, w)
			}
		}
		if slices.Contains(got, "2") || slices.Contains(got, "host;x-amz-date") {
			t.Errorf("%q: a short part is taken for a secret: %q", tc.value, got)
		}
	}
}

// TestSentCredentials_ForwardsEveryMethod: the recorder stands between
// http.Client and its transport; CloseIdleConnections reaches the
// transport through it.
func TestSentCredentials_ForwardsEveryMethod(t *testing.T) {
	inner := &closeCounter{}
	var rt http.RoundTripper = &sentCredentials{next: inner}
	rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	if inner.closed != 1 {
		t.Fatalf("CloseIdleConnections reached the transport %d times, want 1", inner.closed)
	}
	if _, err := rt.RoundTrip(httptest.NewRequest(http.MethodGet, "http://x/", nil)); err != nil || inner.trips != 1 {
		t.Fatalf("RoundTrip: %v, %d trips", err, inner.trips)
	}
}

type closeCounter struct{ closed, trips int }

func (c *closeCounter) RoundTrip(*http.Request) (*http.Response, error) {
	c.trips++
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

func (c *closeCounter) CloseIdleConnections() { c.closed++ }
