package httpserve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-mcp/airlock/selection"
)

// echo is an MCP endpoint stand-in: it answers who the request comes from,
// the JSON-RPC methods peek read, and the body as it reads it again.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	var methods []string
	for _, m := range Messages(r.Context()) {
		methods = append(methods, m.Method)
	}
	body, _ := io.ReadAll(r.Body)
	_, _ = io.WriteString(w, PrincipalFrom(r.Context()).Subject+"|"+strings.Join(methods, ",")+"|"+string(body))
})

func serve(t *testing.T, routes map[string]http.Handler, opts Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(routes, opts))
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, url, body string, header map[string]string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`

// TestHandler_GuardsEveryRouteButTheProbes: with a token set, a route
// answers only a request that carries it (and sees it as the static
// token's principal, the body read once by peek and again whole by the
// route); a foreign Origin, or a foreign Host on a loopback listener (DNS
// rebinding), is refused even with the token; the probes answer GET
// without a token, and nothing else on their paths.
func TestHandler_GuardsEveryRouteButTheProbes(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token-of-the-test"
	srv := serve(t, map[string]http.Handler{"/mcp": echo}, Options{Token: token, Probes: HealthHandlers(nil)})
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		want                     string
	}{
		{"the token", http.MethodPost, "/mcp", initialize, map[string]string{"Authorization": bearer}, 200,
			selection.SubjectStaticToken + "|initialize|" + initialize},
		{"no token", http.MethodPost, "/mcp", initialize, nil, 401, ""},
		{"a wrong token", http.MethodPost, "/mcp", initialize, map[string]string{"Authorization": "Bearer nope"}, 401, ""},
		{"another scheme", http.MethodPost, "/mcp", initialize, map[string]string{"Authorization": "Basic " + token}, 401, ""},
		{"a foreign origin", http.MethodPost, "/mcp", initialize, map[string]string{"Authorization": bearer, "Origin": "https://attacker.example"}, 403, ""},
		{"a loopback origin", http.MethodPost, "/mcp", initialize, map[string]string{"Authorization": bearer, "Origin": "http://localhost:6274"}, 200, ""},
		{"a foreign host", http.MethodPost, "/mcp", initialize, map[string]string{"Authorization": bearer, "Host": "rebind.attacker.example"}, 403, ""},
		{"the liveness probe", http.MethodGet, "/healthz", "", nil, 200, "ok\n"},
		{"readiness without a store", http.MethodGet, "/readyz", "", nil, 503, "not ready: the store is unavailable\n"},
		{"a POST to a probe's path", http.MethodPost, "/healthz", "{}", nil, 401, ""},
		{"a path no route serves", http.MethodGet, "/nope", "", map[string]string{"Authorization": bearer}, 404, ""},
	} {
		a := do(t, tc.method, srv.URL+tc.path, tc.body, tc.header)
		if a.status != tc.status || tc.want != "" && a.body != tc.want {
			t.Errorf("%s: %d %q, want %d %q", tc.name, a.status, a.body, tc.status, tc.want)
		}
		if a.status == 401 && !strings.HasPrefix(a.header.Get("WWW-Authenticate"), `Bearer realm="airlock"`) {
			t.Errorf("%s: 401 without a bearer challenge: %q", tc.name, a.header.Get("WWW-Authenticate"))
		}
	}
}

// TestHandler_WithoutATokenRequestsAreLocal: a listener without a token
// (loopback only, which serve enforces) hands the route the local
// principal.
func TestHandler_WithoutATokenRequestsAreLocal(t *testing.T) {
	t.Parallel()
	srv := serve(t, map[string]http.Handler{"/mcp": echo}, Options{})
	if a := do(t, http.MethodPost, srv.URL+"/mcp", initialize, nil); a.status != 200 || !strings.HasPrefix(a.body, selection.SubjectLocal+"|initialize|") {
		t.Errorf("%d %q", a.status, a.body)
	}
}

// TestHandler_BoundsBodiesAndStreams: a body over MaxBodyBytes is refused
// 413 before the route sees it; a GET stream on /mcp without a session is
// 405; past MaxStreams open streams, another is 503 with a Retry-After.
func TestHandler_BoundsBodiesAndStreams(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		entered <- struct{}{}
		<-release
	})
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1); echo(w, r) })
	srv := serve(t, map[string]http.Handler{"/mcp": counting, "/sse": stream}, Options{MaxBodyBytes: 100, MaxStreams: 1})

	if a := do(t, http.MethodPost, srv.URL+"/mcp", strings.Repeat("x", 101), nil); a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit: %d", a.status)
	}
	if a := do(t, http.MethodPost, srv.URL+"/mcp", strings.Repeat("x", 100), nil); a.status != http.StatusOK || !strings.HasSuffix(a.body, strings.Repeat("x", 100)) {
		t.Errorf("a body at the limit: %d", a.status)
	}
	if n := reached.Load(); n != 1 {
		t.Errorf("the route was reached %d times, want 1 (the body within the limit)", n)
	}
	if a := do(t, http.MethodGet, srv.URL+"/mcp", "", nil); a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") != "POST, DELETE" {
		t.Errorf("a GET stream without a session: %d Allow %q", a.status, a.header.Get("Allow"))
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/sse", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		first <- err
	}()
	<-entered
	if a := do(t, http.MethodGet, srv.URL+"/sse", "", nil); a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Errorf("a stream past MaxStreams: %d Retry-After %q", a.status, a.header.Get("Retry-After"))
	}
	close(release)
	if err := <-first; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("the first stream: %v", err)
	}
	go func() { <-entered }() // the stream that follows may enter
	if a := do(t, http.MethodGet, srv.URL+"/sse", "", nil); a.status != http.StatusOK {
		t.Errorf("a stream once the first closed: %d", a.status)
	}
}

// resourceServer is a ResourceServer whose tokens are the subject and
// scopes themselves ("alice airlock:read").
type resourceServer struct{}

func (resourceServer) Verify(_ context.Context, token string) (selection.Principal, error) {
	f := strings.Fields(token)
	if len(f) == 0 || f[0] == "bad" {
		return selection.Principal{}, tokenError("the token expired")
	}
	return selection.Principal{Subject: f[0], OAuth: true, Scopes: f[1:]}, nil
}
func (resourceServer) ClaimSession(*http.Request, string) bool { return true }
func (resourceServer) MetadataURL() string {
	return "https://airlock.example/.well-known/oauth-protected-resource/mcp"
}
func (resourceServer) ScopesSupported() []string { return []string{"airlock:read", "airlock:write"} }
func (resourceServer) RequiredScopes() []string  { return nil }
func (resourceServer) Metadata() map[string]http.Handler {
	return map[string]http.Handler{"/.well-known/oauth-protected-resource/mcp": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"resource":"https://airlock.example/mcp"}`)
	})}
}

type tokenError string

func (e tokenError) Error() string       { return string(e) }
func (e tokenError) Description() string { return string(e) }

// TestHandler_OAuthChallengesAndTheScopeGate: as a resource server, the
// metadata is served without a token; a refused token is a 401 naming the
// metadata and why; a token without airlock:read is 403; and a tools/call
// of a tool the token's scopes do not cover is 403 insufficient_scope
// naming the scope it needs, before the MCP endpoint reads it.
func TestHandler_OAuthChallengesAndTheScopeGate(t *testing.T) {
	t.Parallel()
	srv := serve(t, map[string]http.Handler{"/mcp": echo}, Options{OAuth: resourceServer{}})
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	auth := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	if a := do(t, http.MethodGet, srv.URL+"/.well-known/oauth-protected-resource/mcp", "", nil); a.status != 200 || !strings.Contains(a.body, `"resource"`) {
		t.Errorf("the metadata without a token: %d %q", a.status, a.body)
	}
	a := do(t, http.MethodPost, srv.URL+"/mcp", initialize, auth("bad"))
	if ch := a.header.Get("WWW-Authenticate"); a.status != 401 || !strings.Contains(ch, `resource_metadata="https://airlock.example/.well-known/oauth-protected-resource/mcp"`) ||
		!strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, `error_description="the token expired"`) {
		t.Errorf("a refused token: %d %q", a.status, ch)
	}
	if a := do(t, http.MethodPost, srv.URL+"/mcp", initialize, auth("alice")); a.status != 403 || !strings.Contains(a.header.Get("WWW-Authenticate"), `scope="airlock:read"`) {
		t.Errorf("a token without airlock:read: %d %q", a.status, a.header.Get("WWW-Authenticate"))
	}
	if a := do(t, http.MethodPost, srv.URL+"/mcp", call("search_all"), auth("alice airlock:read")); a.status != 200 || a.body != "alice|tools/call|"+call("search_all") {
		t.Errorf("a read tool with airlock:read: %d %q", a.status, a.body)
	}
	batch := "[" + call("search_all") + "," + call("commit_bulk_action") + "]"
	for _, body := range []string{call("commit_bulk_action"), batch} {
		a := do(t, http.MethodPost, srv.URL+"/mcp", body, auth("alice airlock:read"))
		if ch := a.header.Get("WWW-Authenticate"); a.status != 403 || !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, `scope="airlock:write"`) {
			t.Errorf("a write tool with airlock:read (%s): %d %q", body, a.status, ch)
		}
		if a.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("the refusal is not a problem: %q", a.header.Get("Content-Type"))
		}
	}
	if a := do(t, http.MethodPost, srv.URL+"/mcp", batch, auth("bob airlock:write")); a.status != 200 {
		t.Errorf("a batch with airlock:write: %d %q", a.status, a.body)
	}
}
