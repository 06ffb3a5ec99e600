package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/selection"
)

// canaryAuthServer is a fault-injecting authorization server: it issues
// bearer tokens canaryAccess-N to the client "airlock" presenting
// canaryClientSecret (client_secret_basic), valid for lifetime, and
// answers a token request through fail instead when fail says so.
type canaryAuthServer struct {
	lifetime time.Duration
	mu       sync.Mutex
	fail     func(w http.ResponseWriter, r *http.Request) bool
	issued   map[string]bool
	requests atomic.Int64
}

func newCanaryAuthServer(t *testing.T) (*canaryAuthServer, string) {
	t.Helper()
	a := &canaryAuthServer{lifetime: time.Minute, issued: map[string]bool{}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return a, srv.URL + "/oauth2/token"
}

func (a *canaryAuthServer) setFail(f func(w http.ResponseWriter, r *http.Request) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = f
}

func (a *canaryAuthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := a.requests.Add(1)
	a.mu.Lock()
	fail := a.fail
	a.mu.Unlock()
	if fail != nil && fail(w, r) {
		return
	}
	id, secret, _ := r.BasicAuth()
	if r.PostFormValue("grant_type") != "client_credentials" || id != "airlock" || secret != canaryClientSecret {
		tooltest.Answer(w, 401, "application/json", `{"error":"invalid_client"}`)
		return
	}
	tok := fmt.Sprintf("%s-%d", canaryAccess, n)
	a.mu.Lock()
	a.issued[tok] = true
	a.mu.Unlock()
	tooltest.Answer(w, 200, "application/json", fmt.Sprintf(`{"access_token":%q,"token_type":"Bearer","expires_in":%d,"scope":%q}`, tok, int(a.lifetime.Seconds()), r.PostFormValue("scope")))
}

func (a *canaryAuthServer) valid(tok string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.issued[tok]
}

// credentialForms are the credential blocks the demo upstream is given in
// place of its static token, each holding a canary.
func credentialBlock(form, tokenURL string) string {
	switch form {
	case "query":
		return "    credential: {env: " + fixtures.DemoTokenEnv + ", query: api_key}\n"
	case "basic":
		return "    credential:\n      basic: {user: {env: SVC_USER}, password: {env: " + fixtures.DemoTokenEnv + "}}\n"
	}
	return "    credential:\n      oauth2: {token_url: \"" + tokenURL + "\", client_id: airlock, client_secret: {env: CLIENT_SECRET}, scopes: [accounts.read, accounts.write]}\n"
}

func formEnv(k string) string {
	switch k {
	case fixtures.DemoTokenEnv:
		return canaryToken
	case "SVC_USER":
		return "svc-user"
	case "CLIENT_SECRET":
		return canaryClientSecret
	}
	return ""
}

// withCredential gives the demo upstream at url the form's credential.
func withCredential(url, form, tokenURL string, edits ...string) harnessOpt {
	return demoAt(url, append([]string{"    credential:\n      env: " + fixtures.DemoTokenEnv + "\n", credentialBlock(form, tokenURL)}, edits...)...)
}

// accepted checks the form's credential the way the API would.
func accepted(form string, auth *canaryAuthServer, r *http.Request) bool {
	switch form {
	case "query":
		return r.URL.Query().Get("api_key") == canaryToken && r.Header.Get("Authorization") == ""
	case "basic":
		u, p, ok := r.BasicAuth()
		return ok && u == "svc-user" && p == canaryToken
	}
	return auth.valid(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
}

// newGatedHostile is the hostile upstream behind a gate that accepts only
// the form's credential; its echoes send back that credential as the
// request carried it.
func newGatedHostile(t *testing.T, form string, auth *canaryAuthServer, once bool, mark func(r *http.Request) (int, bool)) (*hostile, string) {
	t.Helper()
	h := &hostile{api: newFixture(t), echoes: echoes(), mark: mark, once: once, hits: map[int]int{}, sent: map[int][]byte{}, secret: canaryToken,
		auth: func(r *http.Request) string { return r.Header.Get("Authorization") }}
	switch form {
	case "query":
		h.auth = func(r *http.Request) string { return r.URL.Query().Get("api_key") }
	case "basic":
		// The password, as the echoes' token: {BASIC} then rebuilds the
		// very header sent (base64 of svc-user:password).
		h.auth = func(r *http.Request) string {
			_, p, _ := r.BasicAuth()
			return "Bearer " + p
		}
	case "oauth2":
		h.secret = canaryAccess
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !accepted(form, auth, r) {
			tooltest.Answer(w, 401, "application/json", `{"error":"invalid_token"}`)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return h, srv.URL
}

// oauthHarness is a harness whose demo upstream takes the access tokens
// auth issues (a gate in front of the harness's fixture checks them), with
// edits to the demo configuration.
func oauthHarness(t *testing.T, auth *canaryAuthServer, tokenURL string, edits []string, opts ...harnessOpt) *harness {
	t.Helper()
	var api atomic.Pointer[fixtures.Server]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !auth.valid(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) {
			tooltest.Answer(w, 401, "application/json", `{"error":"invalid_token"}`)
			return
		}
		r.Header.Set("Authorization", "Bearer "+canaryToken)
		api.Load().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	url := srv.URL
	h := newHarness(t, append([]harnessOpt{withEnv(formEnv), withCredential(url, "oauth2", tokenURL, edits...)}, opts...)...)
	api.Store(h.api)
	return h
}

// TestCanary_EachCredentialFormIsFoundNowhere: with a key in the query,
// Basic from a user and a password, and OAuth 2.0 client credentials whose
// token is renewed between calls, an upstream that echoes the credential
// in every position seen in practice (on list reads and on writes) leaves
// no trace of it in any tool result, log line, store page, audit line or
// export. (The harness scans the logs, the audit file and the store.)
func TestCanary_EachCredentialFormIsFoundNowhere(t *testing.T) {
	t.Parallel()
	n := len(echoes())
	for _, form := range []string{"query", "basic", "oauth2"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			t.Run("list", func(t *testing.T) {
				t.Parallel()
				auth, tokenURL := newCanaryAuthServer(t)
				up, url := newGatedHostile(t, form, auth, false, func(r *http.Request) (int, bool) {
					owner, ok := strings.CutPrefix(r.URL.Query().Get("owner"), echoOwner)
					i, err := strconv.Atoi(strings.TrimPrefix(owner, "p"))
					return i, ok && err == nil && r.URL.Path == "/v1/projects"
				})
				clock := newFakeClock()
				h := newHarness(t, withCredential(url, form, tokenURL, fastRetries...), withEnv(formEnv), withClock(clock))
				for i := range n {
					h.call("search_all", map[string]any{"resource": "projects", "filter": map[string]any{"owner": echoOwner + strconv.Itoa(i)}})
					p := h.call("preview_selection", map[string]any{"resource": "projects", "filter": map[string]any{"owner": echoOwner + "p" + strconv.Itoa(i)},
						"action": map[string]any{"type": "archive"}})
					h.exportLeaks(p.data["selection_id"])
					if i%4 == 3 {
						clock.Advance(2 * time.Minute) // the next call renews the token
					}
				}
				up.checkEchoed(t)
				if form == "oauth2" && auth.requests.Load() < int64(n/4) {
					t.Fatalf("%d token requests: the calls did not span several tokens", auth.requests.Load())
				}
			})
			t.Run("write", func(t *testing.T) {
				t.Parallel()
				auth, tokenURL := newCanaryAuthServer(t)
				var mu sync.Mutex
				ids := map[string]int{}
				up, url := newGatedHostile(t, form, auth, true, func(r *http.Request) (int, bool) {
					id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v1/service_accounts/"), "/owner")
					mu.Lock()
					i, known := ids[id]
					mu.Unlock()
					return i, ok && known && r.Method == http.MethodPut
				})
				h := newHarness(t, withCredential(url, form, tokenURL, append(fastRetries, fastReconcile...)...), withEnv(formEnv))
				free := ownerlessVisible(h, n)
				for i, id := range free {
					mu.Lock()
					ids[id.(string)] = i
					mu.Unlock()
					p := h.call("preview_selection", explicitPreview(id))
					if p.data["committable"] != true {
						t.Fatalf("%s: the preview is not committable: %s", id, p.raw)
					}
					c := h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"],
						"action": assignOwner, "mode": "execute"})
					if opID := c.data["operation_id"]; opID != nil {
						op := h.operation(opID)
						raw, _ := json.Marshal(op.data)
						leaks(t, "get_operation", raw)
					}
					h.exportLeaks(p.data["selection_id"])
				}
				up.checkEchoed(t)
			})
		})
	}
}

// TestTokenEndpoint_EachFailureHasItsProblemAndNeverBlamesTheAPI: when no
// access token can be had, search_all answers with the token endpoint's
// own problem (whose fault, whether to retry), quotes the endpoint's words
// without the client secret it echoed, and sends nothing to the API.
func TestTokenEndpoint_EachFailureHasItsProblemAndNeverBlamesTheAPI(t *testing.T) {
	t.Parallel()
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String() + "/token"
	}()
	echoSecret := func(w http.ResponseWriter, r *http.Request) bool {
		// A careless server echoes what it was sent: the secret, the
		// whole Basic header, and its base64.
		_, secret, _ := r.BasicAuth()
		hdr := r.Header.Get("Authorization")
		tooltest.Answer(w, 401, "application/json", fmt.Sprintf(`{"error":"invalid_client","error_description":"client secret %s does not match (header %s, %s)"}`,
			secret, hdr, base64.RawURLEncoding.EncodeToString([]byte(secret))), "WWW-Authenticate", `Basic realm="`+hdr+`"`)
		return true
	}
	for _, tc := range []struct {
		name      string
		fail      func(w http.ResponseWriter, r *http.Request) bool
		tokenURL  string
		code      envelope.ProblemCode
		retryable bool
		quote     string
	}{
		{name: "wrong secret echoed back", fail: echoSecret, code: envelope.ProblemTokenClientRejected, quote: "does not match"},
		{name: "scope not granted", fail: func(w http.ResponseWriter, _ *http.Request) bool {
			tooltest.Answer(w, 400, "application/json", `{"error":"invalid_scope","error_description":"accounts.write is not granted to this client"}`)
			return true
		}, code: envelope.ProblemTokenRequestRejected, quote: "accounts.write is not granted"},
		{name: "server error", fail: func(w http.ResponseWriter, _ *http.Request) bool {
			tooltest.Answer(w, 503, "text/plain", "token service down for maintenance", "Retry-After", "7")
			return true
		}, code: envelope.ProblemTokenEndpointFailed, retryable: true, quote: "down for maintenance"},
		{name: "timeout", fail: func(http.ResponseWriter, *http.Request) bool {
			time.Sleep(time.Second)
			return true
		}, code: envelope.ProblemTokenEndpointTimeout, retryable: true},
		{name: "down", tokenURL: closed, code: envelope.ProblemTokenEndpointUnreachable, retryable: true},
		{name: "a login page, not a token", fail: func(w http.ResponseWriter, _ *http.Request) bool {
			tooltest.Answer(w, 200, "text/html", "<html><form>sign in</form></html>")
			return true
		}, code: envelope.ProblemTokenResponseInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, tokenURL := newCanaryAuthServer(t)
			auth.setFail(tc.fail)
			if tc.tokenURL != "" {
				tokenURL = tc.tokenURL
			}
			h := oauthHarness(t, auth, tokenURL, []string{"    timeout: 5s\n", "    timeout: 300ms\n"})
			r := h.call("search_all", map[string]any{"resource": "service_accounts"})
			p := r.env.Problem
			if p == nil || p.Code != tc.code || p.Retryable != tc.retryable {
				t.Fatalf("want %s (retryable %v), got %s", tc.code, tc.retryable, r.raw)
			}
			if p.Code == envelope.ProblemUpstreamAuth || !strings.Contains(p.Detail, "No request reached the API") {
				t.Fatalf("the problem blames the API: %s", r.raw)
			}
			if !strings.Contains(p.UpstreamMessage, tc.quote) {
				t.Fatalf("upstream_message %q, want the token endpoint's words %q", p.UpstreamMessage, tc.quote)
			}
			if tc.name == "wrong secret echoed back" && !strings.Contains(p.UpstreamMessage, redact.Redacted) {
				t.Fatalf("the echoed secret was not redacted but dropped: %q", p.UpstreamMessage)
			}
			if got := len(h.api.Requests()); got != 0 {
				t.Fatalf("%d requests reached the API without a token", got)
			}
		})
	}
}

// TestTokenEndpoint_AWriteWithoutATokenIsNotSentAndTheOperationStops: a
// commit whose access token cannot be renewed sends nothing: the target
// waits (pending, with the token endpoint's problem), the operation stops
// and says why, and resuming once tokens are issued again (and the failure
// is no longer remembered) writes it.
func TestTokenEndpoint_AWriteWithoutATokenIsNotSentAndTheOperationStops(t *testing.T) {
	t.Parallel()
	auth, tokenURL := newCanaryAuthServer(t)
	clock := newFakeClock()
	h := oauthHarness(t, auth, tokenURL, nil, withClock(clock))
	ids := ownerlessVisible(h, 3)
	p := h.call("preview_selection", explicitPreview(ids...))
	if p.data["committable"] != true {
		t.Fatalf("not committable: %s", p.raw)
	}
	// The token expires and the authorization server now refuses the
	// client.
	clock.Advance(2 * time.Minute)
	auth.setFail(func(w http.ResponseWriter, _ *http.Request) bool {
		tooltest.Answer(w, 400, "application/json", `{"error":"invalid_client","error_description":"client disabled"}`)
		return true
	})
	c := h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": assignOwner, "mode": "execute"})
	op := h.operation(c.data["operation_id"])
	if len(h.api.Writes()) != 0 {
		t.Fatalf("%d writes reached the API without a token", len(h.api.Writes()))
	}
	counts, _ := op.data["counts"].(map[string]any)
	if op.data["status"] == selection.OpCompleted || counts["pending"] != float64(3) {
		t.Fatalf("want every target pending in a stopped operation: %s", op.raw)
	}
	if !strings.Contains(string(op.raw), string(envelope.ProblemTokenClientRejected)) {
		t.Fatalf("the operation does not say why: %s", op.raw)
	}
	// The authorization server is fixed: resuming, once airlock's memory
	// of the failure has passed (its backoff), writes the targets.
	auth.setFail(nil)
	clock.Advance(time.Minute)
	r := h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": assignOwner, "mode": "execute", "resume": true})
	op = h.operation(r.data["operation_id"])
	if counts, _ := op.data["counts"].(map[string]any); counts["succeeded"] != float64(3) || len(h.api.Writes()) != 3 {
		t.Fatalf("after resuming: %s; %d writes", op.raw, len(h.api.Writes()))
	}
}

// TestDescribeResources_ShowsTheCredentialsFormAndSourceNeverTheSecret:
// the agent learns how airlock authenticates (and so what it can see),
// never with what.
func TestDescribeResources_ShowsTheCredentialsFormAndSourceNeverTheSecret(t *testing.T) {
	t.Parallel()
	auth, tokenURL := newCanaryAuthServer(t)
	h := oauthHarness(t, auth, tokenURL, nil)
	d := h.call("describe_resources", map[string]any{"resource": "service_accounts"})
	res := d.data["resources"].([]any)[0].(map[string]any)
	cred, _ := res["credential"].(map[string]any)
	if cred["form"] != "oauth2_client_credentials" || fmt.Sprint(cred["sources"]) != "[env CLIENT_SECRET]" || cred["token_url"] != tokenURL ||
		fmt.Sprint(cred["scopes"]) != "[accounts.read accounts.write]" {
		t.Fatalf("credential: %v", cred)
	}
}
