package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/mcpserver"
	"github.com/airlock-mcp/airlock/probe"
	"github.com/airlock-mcp/airlock/redact/leaktest"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// oauthSecret is the OAuth clients' secret at the provider: a canary that
// nothing airlock returns, logs or stores may hold.
const oauthSecret = "cnry-0d5f93ab-oauth-client-secret"

// resourceServer is the API the tests point airlock at: it validates the
// provider's JWT access tokens with go-oidc (issuer, audience = the
// resource indicator, expiry, ES256 signature through the provider's JWKS)
// and serves the demo data (fixtures.Server) to a valid one. It records
// every token it sees, answers 401 to a revoked one, and can slow pages
// down or lose a write's answer.
type resourceServer struct {
	verifier *oidc.IDTokenVerifier
	api      *fixtures.Server
	// pageDelay slows every list page (a slow API, so that a scan spans
	// token lifetimes).
	pageDelay time.Duration

	mu        sync.Mutex
	tokens    []*tokenSeen // in the order first seen
	byJTI     map[string]*tokenSeen
	refused   int
	revoked   map[string]bool
	refuseAll bool
	requests  int
	// onList runs before list page n (from 1) is served.
	onList func(n int)
	lists  int
	// onWrite decides what happens to write n (from 1): "" forwards it,
	// "refuse" answers 401, "lose" drops the connection without
	// forwarding, "lose-after" forwards it and drops the answer.
	onWrite func(n int) string
	writes  []string // the Idempotency-Key of each write that was let in
}

type tokenSeen struct {
	jti           string
	raw           string
	iat, exp      time.Time
	uses          int
	firstUse, end time.Time
}

func newResourceServer(t *testing.T, p *upstreams.OIDCProvider) (*resourceServer, string) {
	t.Helper()
	prov, err := oidc.NewProvider(t.Context(), p.Issuer)
	if err != nil {
		t.Fatalf("discover the provider: %v", err)
	}
	rs := &resourceServer{
		verifier: prov.VerifierContext(context.Background(), &oidc.Config{ClientID: upstreams.OIDCResource, SupportedSigningAlgs: []string{oidc.ES256}}),
		api:      &fixtures.Server{},
		byJTI:    map[string]*tokenSeen{}, revoked: map[string]bool{},
	}
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	return rs, srv.URL
}

func (rs *resourceServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	tok, err := rs.verifier.Verify(r.Context(), raw)
	var claims struct {
		JTI string `json:"jti"`
	}
	if err == nil {
		err = tok.Claims(&claims)
	}
	rs.mu.Lock()
	rs.requests++
	if err != nil || rs.revoked[claims.JTI] || rs.refuseAll {
		rs.refused++
		rs.mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_token"}`)
		return
	}
	ts := rs.byJTI[claims.JTI]
	if ts == nil {
		ts = &tokenSeen{jti: claims.JTI, raw: raw, iat: tok.IssuedAt, exp: tok.Expiry, firstUse: time.Now()}
		rs.byJTI[claims.JTI] = ts
		rs.tokens = append(rs.tokens, ts)
	}
	ts.uses++
	ts.end = time.Now()
	write := r.Method != http.MethodGet
	var onList func(int)
	var action string
	n := 0
	if write {
		rs.writes = append(rs.writes, r.Header.Get("Idempotency-Key"))
		n = len(rs.writes)
		if rs.onWrite != nil {
			action = rs.onWrite(n)
		}
	} else if strings.Count(r.URL.Path, "/") == 2 {
		rs.lists++
		n, onList = rs.lists, rs.onList
	}
	rs.mu.Unlock()
	if onList != nil {
		onList(n)
	}
	if !write && rs.pageDelay > 0 {
		time.Sleep(rs.pageDelay)
	}
	r.Header.Set("Authorization", "Bearer "+fixtures.DefaultAdminToken)
	switch action {
	case "refuse":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_token"}`)
	case "lose", "lose-after":
		if action == "lose-after" {
			rs.api.ServeHTTP(httptest.NewRecorder(), r)
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	default:
		rs.api.ServeHTTP(w, r)
	}
}

// revokeCurrent revokes the last token seen: the next request with it is
// refused.
func (rs *resourceServer) revokeCurrent() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.revoked[rs.tokens[len(rs.tokens)-1].jti] = true
}

func (rs *resourceServer) seen() ([]tokenSeen, int, int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]tokenSeen, len(rs.tokens))
	for i, t := range rs.tokens {
		out[i] = *t
	}
	return out, rs.refused, rs.requests
}

// oauthConfig is the demo configuration at the resource server, with the
// provider's client credentials, pages of pageSize and edits.
func oauthConfig(rsURL string, p *upstreams.OIDCProvider, clientID, method string, pageSize int, edits ...string) string {
	y := string(fixtures.DemoConfig(rsURL))
	cred := fmt.Sprintf("    credential:\n      oauth2:\n        token_url: %q\n        client_id: %s\n        client_secret: {env: OAUTH_CLIENT_SECRET}\n"+
		"        scopes: [accounts.read, accounts.write]\n        resource: %q\n", p.TokenURL, clientID, upstreams.OIDCResource)
	if method != "" {
		cred += "        auth_method: " + method + "\n"
	}
	y = strings.Replace(y, "    credential:\n      env: "+fixtures.DemoTokenEnv+"\n", cred, 1)
	y = strings.Replace(y, "{dialect: cursor, has_more: has_more, page_size: 100}", fmt.Sprintf("{dialect: cursor, has_more: has_more, page_size: %d}", pageSize), 1)
	for i := 0; i+1 < len(edits); i += 2 {
		y = strings.Replace(y, edits[i], edits[i+1], 1)
	}
	return y
}

// mcpAirlock is airlock in process behind a real MCP client (mcp-go's
// in-process transport), with its logs and store kept to be searched.
type mcpAirlock struct {
	c       *client.Client
	deps    *tools.Deps
	logs    *syncBuffer
	dbPath  string
	mu      sync.Mutex
	results [][]byte
}

func startMCPAirlock(t *testing.T, config string, env map[string]string) *mcpAirlock {
	t.Helper()
	cfg, err := configpkg.Parse([]byte(config))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	a := &mcpAirlock{logs: &syncBuffer{}, dbPath: filepath.Join(t.TempDir(), "airlock.db")}
	logger := slog.New(slog.NewJSONHandler(a.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{Logger: logger, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	store, err := sqlitestore.Open(t.Context(), a.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	bg, stop := context.WithCancel(context.Background())
	a.deps = mustDeps(t, tools.Config{Runtime: rt, Logger: logger, Store: store, Background: bg})
	t.Cleanup(func() {
		stop()
		a.deps.Engine.Wait()
		store.Close()
	})
	srv, err := mcpserver.NewServer(a.deps, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "airlock-interop", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	a.c = c
	return a
}

// call invokes a tool and returns its structured content.
func (a *mcpAirlock) call(t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	whole, _ := json.Marshal(res)
	a.mu.Lock()
	a.results = append(a.results, whole)
	a.mu.Unlock()
	var out map[string]any
	raw := []byte(res.RawStructuredContent)
	if len(raw) == 0 {
		raw, _ = json.Marshal(res.StructuredContent)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return out
}

func problemOf(env map[string]any) (code, detail, quote string) {
	p, _ := env["problem"].(map[string]any)
	if p == nil {
		return "", "", ""
	}
	code, _ = p["code"].(string)
	detail, _ = p["detail"].(string)
	quote, _ = p["upstream_message"].(string)
	return
}

// countAll asks for the exact count of every service account.
func (a *mcpAirlock) countAll(t *testing.T) map[string]any {
	t.Helper()
	return a.call(t, "search_all", map[string]any{"resource": "service_accounts", "max_items": 0, "max_pages": 5000, "deadline_ms": 120000})
}

func oauthEnv(secret string) map[string]string {
	return map[string]string{"OAUTH_CLIENT_SECRET": secret}
}

// walkIDs reads every service account's id through the continuation.
func (a *mcpAirlock) walkIDs(t *testing.T) (map[string]any, []string) {
	t.Helper()
	return a.walk(t, "service_accounts", "id")
}

// walk reads every item's idField of resource through the continuation.
func (a *mcpAirlock) walk(t *testing.T, resource, idField string) (map[string]any, []string) {
	t.Helper()
	args := map[string]any{"resource": resource, "fields": []any{idField}, "max_items": 1000, "max_pages": 5000, "deadline_ms": 120000}
	var ids []string
	for calls := 0; calls < 500; calls++ {
		env := a.call(t, "search_all", args)
		data, _ := env["data"].(map[string]any)
		items, _ := data["items"].([]any)
		for _, it := range items {
			ids = append(ids, it.(map[string]any)[idField].(string))
		}
		cont, _ := env["continuation"].(map[string]any)
		if cont["kind"] != envelope.ContinueNextCursor {
			return env, ids
		}
		args["cursor"] = cont["cursor"]
	}
	t.Fatal("the continuation did not end")
	return nil, nil
}

// noSecrets fails the test when the client secret or any access token the
// resource server saw is in airlock's logs, tool results or store.
func (a *mcpAirlock) noSecrets(t *testing.T, rs *resourceServer) {
	t.Helper()
	toks, _, _ := rs.seen()
	secrets := []string{oauthSecret}
	for _, tk := range toks {
		secrets = append(secrets, tk.raw)
	}
	a.noneOf(t, secrets...)
}

// noneOf fails the test when any of the secrets is in airlock's logs, tool
// results or store.
func (a *mcpAirlock) noneOf(t *testing.T, secrets ...string) {
	t.Helper()
	a.mu.Lock()
	texts := map[string][]byte{"the logs": []byte(a.logs.String()), "the tool results": []byte(strings.Join(func() []string {
		out := make([]string, len(a.results))
		for i, r := range a.results {
			out[i] = string(r)
		}
		return out
	}(), "\n"))}
	a.mu.Unlock()
	for _, f := range []string{a.dbPath, a.dbPath + "-wal"} {
		if b, err := os.ReadFile(f); err == nil {
			texts["the store ("+filepath.Base(f)+")"] = b
		}
	}
	for what, b := range texts {
		for i, s := range secrets {
			if hits := leaktest.Hits(b, s); len(hits) > 0 {
				t.Errorf("secret %d leaked into %s (%v)", i, what, hits)
			}
		}
	}
}

func ids(s *fixtures.Server) []string {
	var out []string
	for _, r := range s.Collection(fixtures.DatasetServiceAccounts).All() {
		out = append(out, r.ID())
	}
	sort.Strings(out)
	return out
}

// TestOAuthRealProvider_AScanSpanningTokenLifetimesIsCompleteAndExact: a
// slow scan outlives the provider's 5 s tokens; the token is renewed
// before it expires, once per lifetime, never sent expired, and the scan
// is complete with exactly the API's records.
func TestOAuthRealProvider_AScanSpanningTokenLifetimesIsCompleteAndExact(t *testing.T) {
	p := upstreams.StartOIDCProvider(t, oauthSecret, 5*time.Second)
	rs, url := newResourceServer(t, p)
	rs.pageDelay = 120 * time.Millisecond
	a := startMCPAirlock(t, oauthConfig(url, p, "airlock", "", 40), oauthEnv(oauthSecret))
	start := time.Now()
	env, got := a.walkIDs(t)
	elapsed := time.Since(start)
	sort.Strings(got)
	if env["complete"] != true || strings.Join(got, ",") != strings.Join(ids(rs.api), ",") {
		t.Fatalf("complete %v with %d ids; the API holds %d", env["complete"], len(got), len(ids(rs.api)))
	}
	toks, refused, _ := rs.seen()
	requests := p.TokenRequests(t)
	t.Logf("scan of %d records in %.1fs: %d token requests, %d tokens used, %d refused", len(got), elapsed.Seconds(), requests, len(toks), refused)
	if len(toks) < 2 {
		t.Fatalf("the scan used %d token(s) in %.1fs: it did not span two lifetimes", len(toks), elapsed.Seconds())
	}
	if refused != 0 {
		t.Fatalf("the API refused %d request(s): a token was sent expired", refused)
	}
	if requests != len(toks) {
		t.Fatalf("%d token requests for %d tokens used: tokens were fetched and wasted", requests, len(toks))
	}
	for i := 1; i < len(toks); i++ {
		prev, next := toks[i-1], toks[i]
		// Renewed when 2 s of the 5 s are left (iat and exp are whole
		// seconds): never a second renewal within a lifetime.
		if next.iat.Before(prev.exp.Add(-3 * time.Second)) {
			t.Errorf("token %d was issued at %s, long before token %d expired at %s", i+1, next.iat, i, prev.exp)
		}
	}
	a.noSecrets(t, rs)
}

// TestOAuthRealProvider_ARevokedTokenIsRenewedOnce: a token revoked in the
// middle of a scan is renewed once and the scan completes exactly; when
// the API refuses the client itself, the renewed token is refused too and
// the answer is a clear problem after that one renewal.
func TestOAuthRealProvider_ARevokedTokenIsRenewedOnce(t *testing.T) {
	p := upstreams.StartOIDCProvider(t, oauthSecret, time.Minute)
	t.Run("the_token", func(t *testing.T) {
		rs, url := newResourceServer(t, p)
		rs.onList = func(n int) {
			if n == 5 {
				rs.revokeCurrent()
			}
		}
		before := p.TokenRequests(t)
		a := startMCPAirlock(t, oauthConfig(url, p, "airlock", "", 100), oauthEnv(oauthSecret))
		env := a.countAll(t)
		data, _ := env["data"].(map[string]any)
		_, refused, _ := rs.seen()
		if env["complete"] != true || data["total_matched"] != float64(len(ids(rs.api))) {
			t.Fatalf("complete %v, total %v; want the API's %d", env["complete"], data["total_matched"], len(ids(rs.api)))
		}
		if n := p.TokenRequests(t) - before; n != 2 || refused != 1 {
			t.Fatalf("%d token requests, %d refusals; want one renewal after one refusal", n, refused)
		}
		a.noSecrets(t, rs)
	})
	t.Run("the_client", func(t *testing.T) {
		rs, url := newResourceServer(t, p)
		rs.onList = func(n int) {
			if n == 5 {
				rs.mu.Lock()
				rs.refuseAll = true
				rs.mu.Unlock()
			}
		}
		before := p.TokenRequests(t)
		a := startMCPAirlock(t, oauthConfig(url, p, "airlock", "", 100), oauthEnv(oauthSecret))
		env := a.countAll(t)
		code, detail, _ := problemOf(env)
		_, refused, _ := rs.seen()
		if code != string(envelope.ProblemUpstreamAuth) || !strings.Contains(detail, "just obtained") {
			t.Fatalf("want UPSTREAM_UNAUTHORIZED saying a fresh token was refused, got %s: %s", code, detail)
		}
		if n := p.TokenRequests(t) - before; n != 2 || refused != 2 {
			t.Fatalf("%d token requests, %d refusals; want one renewal and no more", n, refused)
		}
		a.noSecrets(t, rs)
	})
}

// TestOAuthRealProvider_FailuresAtTheTokenEndpointAreTheirOwnProblems: a
// wrong client secret is airlock's configuration, quoted from the
// provider; a provider that is down is unreachable; neither reaches the
// API nor blames it. client_secret_post works like client_secret_basic.
func TestOAuthRealProvider_FailuresAtTheTokenEndpointAreTheirOwnProblems(t *testing.T) {
	p := upstreams.StartOIDCProvider(t, oauthSecret, time.Minute)
	t.Run("client_secret_post", func(t *testing.T) {
		rs, url := newResourceServer(t, p)
		a := startMCPAirlock(t, oauthConfig(url, p, "airlock-post", "client_secret_post", 100), oauthEnv(oauthSecret))
		if env := a.countAll(t); env["complete"] != true {
			t.Fatalf("client_secret_post: %v", env)
		}
		a.noSecrets(t, rs)
	})
	t.Run("wrong_client_secret", func(t *testing.T) {
		rs, url := newResourceServer(t, p)
		a := startMCPAirlock(t, oauthConfig(url, p, "airlock", "", 100), oauthEnv("cnry-0d5f93ab-a-wrong-secret"))
		code, detail, quote := problemOf(a.countAll(t))
		_, _, requests := rs.seen()
		if code != string(envelope.ProblemTokenClientRejected) || !strings.Contains(quote, "client authentication failed") || requests != 0 {
			t.Fatalf("got %s (%s, quoting %q), %d API requests", code, detail, quote, requests)
		}
		a.noSecrets(t, rs)
	})
	t.Run("provider_down", func(t *testing.T) {
		down := upstreams.StartOIDCProvider(t, oauthSecret, time.Minute)
		rs, url := newResourceServer(t, down)
		down.Stop()
		a := startMCPAirlock(t, oauthConfig(url, down, "airlock", "", 100), oauthEnv(oauthSecret))
		code, detail, _ := problemOf(a.countAll(t))
		_, _, requests := rs.seen()
		if code != string(envelope.ProblemTokenEndpointUnreachable) || requests != 0 {
			t.Fatalf("got %s (%s), %d API requests", code, detail, requests)
		}
	})
}

// TestOAuthRealProvider_TwentyConcurrentScansShareOneRenewal: 20 scans at
// once make one token request; 20 more once the token is due for renewal
// make one more.
func TestOAuthRealProvider_TwentyConcurrentScansShareOneRenewal(t *testing.T) {
	p := upstreams.StartOIDCProvider(t, oauthSecret, 10*time.Second)
	rs, url := newResourceServer(t, p)
	a := startMCPAirlock(t, oauthConfig(url, p, "airlock", "", 500), oauthEnv(oauthSecret))
	round := func() {
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Different filters: 20 scans, none answered from another's.
				env := a.call(t, "search_all", map[string]any{"resource": "service_accounts", "max_items": 0, "filter": map[string]any{"project": fmt.Sprintf("proj-%02d", i)}})
				if _, ok := env["data"]; !ok || env["status"] == "error" {
					t.Errorf("scan %d: %v", i, env)
				}
			}()
		}
		wg.Wait()
	}
	start := time.Now()
	round()
	first := p.TokenRequests(t)
	// The token (10 s) is renewed once 8 s of it are gone.
	time.Sleep(time.Until(start.Add(8500 * time.Millisecond)))
	round()
	second := p.TokenRequests(t)
	toks, refused, requests := rs.seen()
	t.Logf("40 scans, %d API requests: %d token request(s) for the first 20, %d in all", requests, first, second)
	if first != 1 || second != 2 || len(toks) != 2 || refused != 0 {
		t.Fatalf("token requests %d then %d, %d tokens used, %d refused; want 1, 2, 2, 0", first, second, len(toks), refused)
	}
	a.noSecrets(t, rs)
}

// TestOAuthRealProvider_AWriteWhoseAnswerWasLostAfterARenewal: a write
// without an idempotency key, sent with a token renewed after a refusal,
// whose answer is lost, stays unknown and is never sent twice; with a key,
// a write refused with a revoked token is sent once more with the same
// key, and its lost answer is settled by re-reading.
func TestOAuthRealProvider_AWriteWhoseAnswerWasLostAfterARenewal(t *testing.T) {
	p := upstreams.StartOIDCProvider(t, oauthSecret, time.Minute)
	fast := []string{"    description: Assign an owning team to a service account without one.\n",
		"    description: Assign an owning team to a service account without one.\n    reconcile: {rereads: 3, backoff: 10ms, max_backoff: 40ms}\n"}
	ownerless := func(s *fixtures.Server) string {
		for _, r := range s.Collection(fixtures.DatasetServiceAccounts).All() {
			if r["owner"] == nil {
				return r.ID()
			}
		}
		t.Fatal("no ownerless account")
		return ""
	}
	commit := func(t *testing.T, a *mcpAirlock, id string) map[string]any {
		action := map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}
		prev := a.call(t, "preview_selection", map[string]any{"resource": "service_accounts", "ids": []any{id}, "action": action})
		data, _ := prev["data"].(map[string]any)
		if data["committable"] != true {
			t.Fatalf("preview: %v", prev)
		}
		return map[string]any{"selection_id": data["selection_id"], "expected_digest": data["digest"], "action": action, "mode": "execute"}
	}
	outcome := func(t *testing.T, a *mcpAirlock, args map[string]any) map[string]any {
		env := a.call(t, "commit_bulk_action", args)
		data, _ := env["data"].(map[string]any)
		for range 200 {
			op := a.call(t, "get_operation", map[string]any{"operation_id": data["operation_id"]})
			od, _ := op["data"].(map[string]any)
			if od["status"] != "running" {
				res, _ := od["results"].([]any)
				if len(res) != 1 {
					t.Fatalf("operation: %v", op)
				}
				return res[0].(map[string]any)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("the operation did not end")
		return nil
	}
	t.Run("without_a_key", func(t *testing.T) {
		rs, url := newResourceServer(t, p)
		a := startMCPAirlock(t, oauthConfig(url, p, "airlock", "", 100, fast...), oauthEnv(oauthSecret))
		id := ownerless(rs.api)
		args := commit(t, a, id)
		before := p.TokenRequests(t)
		// The token is revoked: the re-read before the write is refused,
		// renewed and repeated; the write then goes with the new token, and
		// its answer is lost.
		rs.revokeCurrent()
		rs.onWrite = func(int) string { return "lose" }
		res := outcome(t, a, args)
		rs.mu.Lock()
		writes := len(rs.writes)
		rs.mu.Unlock()
		if res["outcome"] != "unknown" || writes != 1 || rs.api.Applied(fixtures.DatasetServiceAccounts, id) != 0 {
			t.Fatalf("outcome %v after %d write(s), applied %d; want unknown, sent once, never again", res["outcome"], writes, rs.api.Applied(fixtures.DatasetServiceAccounts, id))
		}
		if n := p.TokenRequests(t) - before; n != 1 {
			t.Fatalf("%d renewals, want 1", n)
		}
		a.noSecrets(t, rs)
	})
	t.Run("with_a_key", func(t *testing.T) {
		rs, url := newResourceServer(t, p)
		a := startMCPAirlock(t, oauthConfig(url, p, "airlock", "", 100, append(fast,
			"    conditional: reread\n    effect:\n      - {field: owner, to: \"{{params.owner}}\"}\n    compensation: restore_owner\n",
			"    conditional: reread\n    effect:\n      - {field: owner, to: \"{{params.owner}}\"}\n    compensation: restore_owner\n    idempotency_header: Idempotency-Key\n")...), oauthEnv(oauthSecret))
		id := ownerless(rs.api)
		args := commit(t, a, id)
		// The first write is refused (its token revoked); it is sent once
		// more with a new token and the same key, lands, and its answer
		// is lost.
		rs.onWrite = func(n int) string {
			if n == 1 {
				return "refuse"
			}
			return "lose-after"
		}
		res := outcome(t, a, args)
		rs.mu.Lock()
		keys := append([]string(nil), rs.writes...)
		rs.mu.Unlock()
		if res["outcome"] != "succeeded" || rs.api.Applied(fixtures.DatasetServiceAccounts, id) != 1 {
			t.Fatalf("outcome %v (%v), applied %d; want succeeded, applied once", res["outcome"], res["note"], rs.api.Applied(fixtures.DatasetServiceAccounts, id))
		}
		// Refused, sent once more at once; any later send (a re-read that
		// came too early) carries the same key, which the API replays.
		for _, k := range keys {
			if len(keys) < 2 || k == "" || k != keys[0] {
				t.Fatalf("the writes carried keys %q; want the same key, twice at least", keys)
			}
		}
		a.noSecrets(t, rs)
	})
}

// TestOAuthRealProvider_ProbeNamesTheScopesGranted: probe obtains a token
// from the provider, names the scope the provider did not grant, and finds
// the token accepted by the resource server.
func TestOAuthRealProvider_ProbeNamesTheScopesGranted(t *testing.T) {
	p := upstreams.StartOIDCProvider(t, oauthSecret, time.Minute)
	_, url := newResourceServer(t, p)
	cfg, err := configpkg.Parse([]byte(oauthConfig(url, p, "airlock", "", 100, "scopes: [accounts.read, accounts.write]", "scopes: [accounts.read, accounts.admin]")))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{Getenv: func(string) string { return oauthSecret }})
	if err != nil {
		t.Fatal(err)
	}
	rep := probe.CheckAssumptions(t.Context(), rt.Resources["service_accounts"], probe.Options{MaxRequests: 10})
	got := map[string]probe.Check{}
	for _, c := range rep.Checks {
		got[c.Check] = c
	}
	if c := got["credential.token"]; c.Status != probe.OK {
		t.Fatalf("token: %+v", c)
	}
	if c := got["credential.scopes"]; c.Status != probe.Wrong || !strings.Contains(c.Evidence, "not granted: accounts.admin") {
		t.Fatalf("scopes: %+v", c)
	}
	if c := got["credential.accepted"]; c.Status != probe.OK {
		t.Fatalf("accepted: %+v", c)
	}
}
