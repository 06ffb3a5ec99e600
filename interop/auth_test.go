package interop

// The authorization suite: airlock as an OAuth resource server for a real
// authorization server, oidc-provider 9.13.3 (interop/oidc/provider.mjs,
// started by interop/upstreams). airlock runs in process on the demo API
// with its clock under the test's control, so that expiry is checked
// without waiting; the official TypeScript SDK connects to a built
// airlock process with its own client-credentials support.
//
// It runs only with AIRLOCK_TEST_REAL_UPSTREAMS=1 (CI sets it).

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/httpserve"
	clockpkg "github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/mcpserver"
	"github.com/airlock-mcp/airlock/oauth"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// clock is the wall clock, set ahead by the test: oidc-provider issues
// its tokens on the wall clock, so airlock's clock must keep moving with
// it (its timers are the wall clock's).
type clock struct {
	clockpkg.Real
	mu sync.Mutex
	d  time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.d)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.d += d
}

// authLab is airlock in process, serving the demo API over streamable
// HTTP as a resource server of idp.
type authLab struct {
	idp      *upstreams.OIDCProvider
	deps     *tools.Deps
	resource string // the MCP endpoint's URL, which is the resource
	clock    *clock
}

func newAuthLab(t *testing.T, idp *upstreams.OIDCProvider, keysMaxAge time.Duration, config func(string) string) *authLab {
	t.Helper()
	api := httptest.NewServer(&fixtures.Server{})
	t.Cleanup(api.Close)
	doc := string(fixtures.DemoConfig(api.URL))
	if config != nil {
		doc = config(doc)
	}
	cfg, err := configpkg.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{Getenv: func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultToken
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	bg, stop := context.WithCancel(context.Background())
	deps := mustDeps(t, tools.Config{Runtime: rt, Logger: slog.New(slog.DiscardHandler), Store: st, Background: bg})
	t.Cleanup(func() {
		stop()
		deps.Engine.Wait()
		st.Close()
	})
	srv, err := mcpserver.NewServer(deps, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nil)
	l := &authLab{idp: idp, deps: deps, resource: "http://" + hs.Listener.Addr().String() + "/mcp", clock: &clock{}}
	rs, err := oauth.New(t.Context(), oauth.Options{Issuer: idp.Issuer, Resource: l.resource, Clock: l.clock, KeysMaxAge: keysMaxAge})
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = mcpserver.NewHTTPHandler(srv, mcpserver.HTTPOptions{Options: httpserve.Options{OAuth: rs}})
	hs.Start()
	t.Cleanup(hs.Close)
	return l
}

// token is a client-credentials token of client for this airlock.
func (l *authLab) token(t *testing.T, client, scope string) string {
	t.Helper()
	return l.idp.Token(t, client, scope, l.resource)
}

// door is how airlock answers an initialize carrying token.
type door struct {
	status    int
	challenge string
	problem   envelope.ProblemCode
}

func (l *authLab) knock(t *testing.T, token, body string) door {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, l.resource, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	d := door{status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate")}
	var p struct {
		Code envelope.ProblemCode `json:"code"`
	}
	if json.Unmarshal(b, &p) == nil {
		d.problem = p.Code
	}
	return d
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"auth-suite","version":"1"}}}`

func (d door) refused(t *testing.T, what string) {
	t.Helper()
	if d.status != http.StatusUnauthorized || !strings.Contains(d.challenge, `error="invalid_token"`) || !strings.Contains(d.challenge, "resource_metadata=") ||
		d.problem != envelope.ProblemInvalidToken {
		t.Errorf("%s: %d %q %s; want 401 invalid_token", what, d.status, d.challenge, d.problem)
	}
}

// resign is token's header and claims signed again with key: a token the
// issuer never signed, under the kid its header names.
func resign(t *testing.T, token string, key *rsa.PrivateKey, kid string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := jws.CompactSerialize()
	return s
}

// header is a token's JOSE header.
func header(t *testing.T, token string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	var h map[string]any
	if err != nil || json.Unmarshal(b, &h) != nil {
		t.Fatalf("token header: %v", err)
	}
	return h
}

// TestOIDCProvider_AirlockRefusesTokensThatFailACheck: tokens that
// oidc-provider issued for another resource, that expired, that were
// signed by a key its JWKS does not have (under an unknown kid, or under
// its own kid), or that carry alg none are refused 401 invalid_token; a
// token without an airlock scope is 403 insufficient_scope.
func TestOIDCProvider_AirlockRefusesTokensThatFailACheck(t *testing.T) {
	idp := upstreams.StartOIDCProvider(t, "", 0)
	l := newAuthLab(t, idp, 0, nil)
	good := l.token(t, "writer", "airlock:read airlock:write")
	if d := l.knock(t, good, initializeBody); d.status != http.StatusOK {
		t.Fatalf("a valid token: %d %q", d.status, d.challenge)
	}
	other := idp.Token(t, "writer", "airlock:read airlock:write", "https://other.example.com/mcp")
	l.knock(t, other, initializeBody).refused(t, "a token for another resource")

	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := header(t, good)["kid"].(string)
	l.knock(t, resign(t, good, stranger, "key-404"), initializeBody).refused(t, "a key the JWKS does not have")
	l.knock(t, resign(t, good, stranger, kid), initializeBody).refused(t, "another key under the issuer's kid")
	parts := strings.Split(good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt","kid":"`+kid+`"}`)) + "." + parts[1] + "."
	l.knock(t, none, initializeBody).refused(t, "alg none")

	outsider := idp.Token(t, "outsider", "openid", l.resource)
	if d := l.knock(t, outsider, initializeBody); d.status != http.StatusForbidden || !strings.Contains(d.challenge, `error="insufficient_scope"`) ||
		!strings.Contains(d.challenge, `scope="airlock:read"`) || d.problem != envelope.ProblemInsufficientScope {
		t.Errorf("a token without an airlock scope: %d %q %s", d.status, d.challenge, d.problem)
	}

	// oidc-provider's tokens live 300 s: past that and the 30 s skew,
	// refused; within the skew, still accepted.
	l.clock.advance(300*time.Second + 20*time.Second)
	if d := l.knock(t, good, initializeBody); d.status != http.StatusOK {
		t.Errorf("expired 20 s ago, within the skew: %d %q", d.status, d.challenge)
	}
	l.clock.advance(15 * time.Second)
	l.knock(t, good, initializeBody).refused(t, "an expired token")
}

// connect is an mcp-go client sending token, answering approval requests
// with approve (and acknowledge).
func (l *authLab) connect(t *testing.T, token string, asked *[]string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(l.resource, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if asked != nil {
		opts = append(opts, client.WithElicitationHandler(approver{asked}))
	}
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "auth-suite", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
}

type approver struct{ asked *[]string }

func (a approver) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	*a.asked = append(*a.asked, req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"approve": true, "acknowledge": true}}}, nil
}

func listed(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

// call runs a tool and returns its envelope's data and problem.
func call(t *testing.T, c *client.Client, tool string, args map[string]any) (map[string]any, *envelope.Problem, error) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		return nil, nil, err
	}
	b, _ := json.Marshal(res.StructuredContent)
	var env struct {
		Data    map[string]any    `json:"data"`
		Problem *envelope.Problem `json:"problem"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	return env.Data, env.Problem, nil
}

var (
	pause     = map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}
	pastDueEU = map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"}, "action": pause,
		"exclude": []any{map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"}}, "page_size": 0}
)

// TestOIDCProvider_AScopeTooSmallForCommit: a client whose token carries
// airlock:read is offered the read tools only, and its call to
// commit_bulk_action is 403 insufficient_scope naming airlock:write; one
// with airlock:write is offered every tool.
func TestOIDCProvider_AScopeTooSmallForCommit(t *testing.T) {
	idp := upstreams.StartOIDCProvider(t, "", 0)
	l := newAuthLab(t, idp, 0, nil)
	reader := l.token(t, "reader", "airlock:read")
	if got := listed(t, l.connect(t, reader, nil)); !slices.Equal(got, []string{"describe_resources", "get_operation", "get_selection", "search_all"}) {
		t.Fatalf("airlock:read is offered %v", got)
	}
	commit := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"commit_bulk_action","arguments":{"selection_id":"sel_x","expected_digest":"sha256:x","action":{"type":"pause_collection"},"mode":"execute"}}}`
	if d := l.knock(t, reader, commit); d.status != http.StatusForbidden || !strings.Contains(d.challenge, `error="insufficient_scope"`) ||
		!strings.Contains(d.challenge, `scope="airlock:write"`) || d.problem != envelope.ProblemInsufficientScope {
		t.Fatalf("airlock:read commits: %d %q %s", d.status, d.challenge, d.problem)
	}
	if _, _, err := call(t, l.connect(t, reader, nil), "commit_bulk_action", map[string]any{}); err == nil {
		t.Fatal("the mcp-go client's commit with airlock:read was not refused")
	}
	if got := listed(t, l.connect(t, l.token(t, "writer", "airlock:read airlock:write"), nil)); len(got) != 6 {
		t.Fatalf("airlock:write is offered %v", got)
	}
}

// TestOIDCProvider_FourEyesAndApprovers: pause_collection asks the user
// through the client, wants four eyes and names its approvers (group
// leads). alice previews; her own commit is refused without asking her;
// a writer outside leads may not even read her selection, and an operator
// (who may) is refused as no approver; bob (leads) commits, is asked,
// approves, and the write runs. The store and the audit trail name alice
// as who asked and bob as who approved and committed.
func TestOIDCProvider_FourEyesAndApprovers(t *testing.T) {
	idp := upstreams.StartOIDCProvider(t, "", 0)
	l := newAuthLab(t, idp, 0, func(doc string) string {
		return strings.Replace(doc, "      unknown_category: [region]\n  resume_collection:",
			"      unknown_category: [region]\n      four_eyes: true\n      approvers: {groups: [leads]}\n  resume_collection:", 1)
	})
	var askedAlice, askedWriter, askedBob []string
	alice := l.connect(t, l.token(t, "alice", "airlock:read airlock:write"), &askedAlice)
	p, pr, err := call(t, alice, "preview_selection", pastDueEU)
	if err != nil || pr != nil {
		t.Fatalf("alice previews: %v %+v", err, pr)
	}
	commit := map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": pause, "mode": "execute"}
	if _, pr, err := call(t, alice, "commit_bulk_action", commit); err != nil || pr == nil || pr.Code != envelope.ProblemApprovalByRequester {
		t.Fatalf("alice commits her own selection: %v %+v", err, pr)
	}
	writer := l.connect(t, l.token(t, "writer", "airlock:read airlock:write"), &askedWriter)
	if _, pr, err := call(t, writer, "commit_bulk_action", commit); err != nil || pr == nil || pr.Code != envelope.ProblemSelectionNotFound {
		t.Fatalf("a writer outside leads commits alice's selection, which it may not read: %v %+v", err, pr)
	}
	operator := l.connect(t, l.token(t, "operator", "airlock:read airlock:write airlock:operator"), &askedWriter)
	if _, pr, err := call(t, operator, "commit_bulk_action", commit); err != nil || pr == nil || pr.Code != envelope.ProblemApproverNotAllowed {
		t.Fatalf("an operator outside leads commits: %v %+v", err, pr)
	}
	if len(askedAlice)+len(askedWriter) != 0 {
		t.Fatalf("a principal the policy refuses was asked to approve: %d, %d", len(askedAlice), len(askedWriter))
	}
	bob := l.connect(t, l.token(t, "bob", "airlock:read airlock:write"), &askedBob)
	op, pr, err := call(t, bob, "commit_bulk_action", commit)
	if err != nil || pr != nil || len(askedBob) != 1 {
		t.Fatalf("bob commits: %v %+v (asked %d)", err, pr, len(askedBob))
	}
	ctx := t.Context()
	sel, err := l.deps.Store.Selection(ctx, p["selection_id"].(string))
	if err != nil || sel.Principal.Subject != "alice" || sel.Principal.ClientID != "alice" {
		t.Fatalf("who asked: %+v %v", sel.Principal, err)
	}
	aps, _ := l.deps.Store.Approvals(ctx, sel.ID)
	if len(aps) != 1 || aps[0].Principal.Subject != "bob" || aps[0].Decision != selection.DecisionApproved {
		t.Fatalf("who approved: %+v", aps)
	}
	l.deps.Engine.Wait()
	trail, err := l.deps.Store.AuditTrail(ctx, op["operation_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	who := map[string]string{}
	for _, ev := range trail {
		if ev.Kind == selection.AuditDecision {
			who[ev.Event] = ev.Principal.Subject
		}
	}
	if who["preview"] != "alice" || who[selection.DecisionApproved] != "bob" || who["commit"] != "bob" {
		t.Fatalf("the audit trail's decisions name %v", who)
	}
}

// TestOIDCProvider_KeyRotationWithoutRestart: oidc-provider starts signing
// with a new key; airlock accepts the new tokens once the interval since
// its last read of the JWKS has passed, without a restart, and keeps accepting the old key's tokens while the issuer
// publishes it; once the issuer retires it, airlock refuses them after
// the keys in hand age out (KeysMaxAge, a minute here), while their own
// expiry is minutes away.
func TestOIDCProvider_KeyRotationWithoutRestart(t *testing.T) {
	idp := upstreams.StartOIDCProvider(t, "", 0)
	l := newAuthLab(t, idp, time.Minute, nil)
	old := l.token(t, "reader", "airlock:read")
	if d := l.knock(t, old, initializeBody); d.status != http.StatusOK {
		t.Fatalf("before the rotation: %d %q", d.status, d.challenge)
	}
	if kids := idp.Rotate(t); len(kids) != 2 {
		t.Fatalf("rotate: %v", kids)
	}
	// A key id airlock has not seen reads the JWKS again at most once per
	// interval since the last read.
	l.clock.advance(oauth.DefaultUnknownKeyInterval)
	fresh := l.token(t, "reader", "airlock:read")
	if header(t, fresh)["kid"] == header(t, old)["kid"] {
		t.Fatalf("oidc-provider still signs with %v", header(t, old)["kid"])
	}
	if d := l.knock(t, fresh, initializeBody); d.status != http.StatusOK {
		t.Fatalf("a token signed with the new key: %d %q", d.status, d.challenge)
	}
	if d := l.knock(t, old, initializeBody); d.status != http.StatusOK {
		t.Fatalf("the old key, still published: %d %q", d.status, d.challenge)
	}
	idp.Retire(t)
	l.clock.advance(time.Minute + time.Second)
	l.knock(t, old, initializeBody).refused(t, "a token signed with a retired key")
	if d := l.knock(t, fresh, initializeBody); d.status != http.StatusOK {
		t.Fatalf("the new key after the retirement: %d %q", d.status, d.challenge)
	}
}

// TestGoSDK_AuthorizationCodeThroughItsOwnOAuth: mcp-go's client meets
// airlock's 401, discovers oidc-provider through the protected-resource
// metadata, registers itself (RFC 7591), and runs the authorization code
// flow with PKCE and the resource indicator; a scripted user signs in on
// oidc-provider's development login form as carol and consents. With the
// token it saved, the same client lists the tools and previews a write,
// which records carol and the client id oidc-provider gave it. (mcp-go
// has no client-credentials grant; the flow it has is driven here without
// a browser.)
func TestGoSDK_AuthorizationCodeThroughItsOwnOAuth(t *testing.T) {
	idp := upstreams.StartOIDCProvider(t, "", 0)
	l := newAuthLab(t, idp, 0, nil)
	const redirect = "http://127.0.0.1:9/callback" // never contacted: the scripted user stops at it
	c, err := client.NewOAuthStreamableHttpClient(l.resource, client.OAuthConfig{
		RedirectURI: redirect, Scopes: []string{"airlock:read", "airlock:write"}, PKCEEnabled: true, TokenStore: client.NewMemoryTokenStore(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "auth-suite", Version: "1"}
	_, err = c.Initialize(t.Context(), init)
	if !client.IsOAuthAuthorizationRequiredError(err) {
		t.Fatalf("initialize without a token: %v; want the OAuth flow to be required", err)
	}
	h := client.GetOAuthHandler(err)
	if err := h.RegisterClient(t.Context(), "airlock-auth-suite"); err != nil {
		t.Fatalf("dynamic client registration: %v", err)
	}
	verifier, err := client.GenerateCodeVerifier()
	if err != nil {
		t.Fatal(err)
	}
	state, err := client.GenerateState()
	if err != nil {
		t.Fatal(err)
	}
	authURL, err := h.GetAuthorizationURL(t.Context(), state, client.GenerateCodeChallenge(verifier))
	if err != nil {
		t.Fatal(err)
	}
	code, gotState := signIn(t, authURL, redirect, "carol")
	if err := h.ProcessAuthorizationResponse(t.Context(), code, gotState, verifier); err != nil {
		t.Fatalf("token exchange: %v", err)
	}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatalf("initialize with the token: %v", err)
	}
	if got := listed(t, c); len(got) != 6 {
		t.Fatalf("offered %v", got)
	}
	p, pr, err := call(t, c, "preview_selection", pastDueEU)
	if err != nil || pr != nil {
		t.Fatalf("preview: %v %+v", err, pr)
	}
	sel, err := l.deps.Store.Selection(t.Context(), p["selection_id"].(string))
	if err != nil || sel.Principal.Subject != "carol" || sel.Principal.ClientID != h.GetClientID() || h.GetClientID() == "" {
		t.Fatalf("who asked: %+v (registered client %q) %v", sel.Principal, h.GetClientID(), err)
	}
}

var formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)

// signIn is a person at oidc-provider's development login: from the
// authorization URL, through the login form (as login, any password) and
// the consent form, to the redirect back to the client, whose code and
// state it returns.
func signIn(t *testing.T, authURL, redirect, login string) (code, state string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, authURL, nil)
	for step := 0; step < 12; step++ {
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatalf("sign-in step %d: %v", step, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			loc, err := resp.Location()
			if err != nil {
				t.Fatalf("sign-in step %d: %v", step, err)
			}
			if strings.HasPrefix(loc.String(), redirect) {
				q := loc.Query()
				if q.Get("error") != "" {
					t.Fatalf("the authorization server refused: %s: %s", q.Get("error"), q.Get("error_description"))
				}
				return q.Get("code"), q.Get("state")
			}
			req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, loc.String(), nil)
		case resp.StatusCode == http.StatusOK:
			m := formAction.FindSubmatch(body)
			if m == nil {
				t.Fatalf("sign-in step %d: no form on %s:\n%.2000s", step, req.URL, body)
			}
			action, _ := req.URL.Parse(string(m[1]))
			form := url.Values{"prompt": {"consent"}}
			if strings.Contains(string(body), `name="prompt" value="login"`) {
				form = url.Values{"prompt": {"login"}, "login": {login}, "password": {"any"}}
			}
			req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, action.String(), strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		default:
			t.Fatalf("sign-in step %d: %s %d:\n%.2000s", step, req.URL, resp.StatusCode, body)
		}
	}
	t.Fatal("the sign-in did not come back to the client")
	return "", ""
}

// TestOfficialTypeScriptSDK_ConnectsThroughItsOwnOAuth runs auth.mjs: the
// SDK client, with its ClientCredentialsProvider, against a built airlock
// serving the demo as a resource server of oidc-provider. On the 401 it
// finds the authorization server through airlock's metadata, gets a token
// for airlock's resource and connects; airlock:read is offered the read
// tools and its commit is refused (403, after the SDK's step-up finds no
// larger scope); airlock:write is offered every tool and previews.
func TestOfficialTypeScriptSDK_ConnectsThroughItsOwnOAuth(t *testing.T) {
	node := requireNode(t)
	idp := upstreams.StartOIDCProvider(t, "", 0)
	bin := buildAirlock(t)
	addr := freeLoopbackAddr(t)
	url := startHTTPServerAt(t, bin, addr, "--oauth-issuer", idp.Issuer, "--oauth-resource", "http://"+addr+"/mcp")
	runScript(t, node, "auth.mjs", url, idp.Issuer)
}
