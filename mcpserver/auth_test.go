package mcpserver

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/oauth"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
)

// oauthLab is airlock's HTTP transport as an OAuth resource server for
// testIssuer, on the demo API, with the issuer's clock under the test's
// control.
type oauthLab struct {
	h        *harness
	iss      *testIssuer
	key      issuerKey
	clock    *clocktest.Fake
	url      string // the MCP endpoint, which is the resource
	resource string
	oauth    *oauth.ResourceServer
}

func newOAuthLab(t *testing.T, opts ...func(*oauth.Options)) *oauthLab {
	t.Helper()
	key := newIssuerKey(t, "k1")
	iss := newTestIssuer(t, key)
	h := newHarness(t)
	srv, err := NewServer(h.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nil)
	resource := "http://" + hs.Listener.Addr().String() + "/mcp"
	clock := newFakeClock()
	o := oauth.Options{Issuer: iss.URL, Resource: resource, Clock: clock}
	for _, f := range opts {
		f(&o)
	}
	rs, err := oauth.New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = NewHTTPHandler(srv, HTTPOptions{Options: httpserve.Options{OAuth: rs, Token: "static-s3cret", Logger: h.deps.Logger}})
	hs.Start()
	t.Cleanup(hs.Close)
	return &oauthLab{h: h, iss: iss, key: key, clock: clock, url: resource, resource: resource, oauth: rs}
}

// token is a valid token of the lab's issuer for subject with scope.
func (l *oauthLab) token(t *testing.T, subject, scope string) string {
	return sign(t, l.key, l.iss.claims(l.resource, subject, scope, l.clock.Now(), 5*time.Minute))
}

// httpAnswer is an HTTP answer to a raw JSON-RPC request.
type httpAnswer struct {
	status    int
	challenge string
	problem   envelope.Problem
	body      string
}

// post sends one JSON-RPC message with token as the bearer token.
func (l *oauthLab) post(t *testing.T, token, body string) httpAnswer {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, l.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := httpAnswer{status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate"), body: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		if err := json.Unmarshal(b, &a.problem); err != nil {
			t.Fatalf("problem body %s: %v", b, err)
		}
		// The transport's answer to a call: its problem counts as one
		// a tool call produced.
		tooltest.RecordCodes([]byte(`{"problem":` + string(b) + `}`))
	}
	return a
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func callBody(tool string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
}

// connect is an mcp-go client that sends token as its bearer token.
func (l *oauthLab) connect(t *testing.T, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(l.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "auth-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range list.Tools {
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

// TestOAuth_MetadataAndChallengesFollowTheAuthorizationSpec: the
// protected-resource metadata (RFC 9728) is served without a token at the
// resource's well-known path; a request without a token is 401 with a
// WWW-Authenticate that names the metadata and the scopes, one with a
// refused token 401 invalid_token, each with a problem as the body.
func TestOAuth_MetadataAndChallengesFollowTheAuthorizationSpec(t *testing.T) {
	t.Parallel()
	l := newOAuthLab(t)
	base := strings.TrimSuffix(l.url, "/mcp")
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			Scopes               []string `json:"scopes_supported"`
			Bearer               []string `json:"bearer_methods_supported"`
		}
		err = json.NewDecoder(resp.Body).Decode(&md)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || md.Resource != l.resource || fmt.Sprint(md.AuthorizationServers) != "["+l.iss.URL+"]" ||
			fmt.Sprint(md.Scopes) != "[airlock:read airlock:write]" || fmt.Sprint(md.Bearer) != "[header]" {
			t.Fatalf("GET %s: %d %+v %v", path, resp.StatusCode, md, err)
		}
	}
	metadata := `resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`
	a := l.post(t, "", initialize)
	if a.status != http.StatusUnauthorized || !strings.HasPrefix(a.challenge, "Bearer ") || !strings.Contains(a.challenge, metadata) ||
		!strings.Contains(a.challenge, `scope="airlock:read airlock:write"`) || strings.Contains(a.challenge, "error=") || a.problem.Code != envelope.ProblemInvalidToken {
		t.Fatalf("without a token: %d %q %s", a.status, a.challenge, a.body)
	}
	a = l.post(t, "not-a-jwt", initialize)
	if a.status != http.StatusUnauthorized || !strings.Contains(a.challenge, metadata) || !strings.Contains(a.challenge, `error="invalid_token"`) ||
		a.problem.Code != envelope.ProblemInvalidToken {
		t.Fatalf("a refused token: %d %q %s", a.status, a.challenge, a.body)
	}
	if a := l.post(t, l.token(t, "alice", "airlock:read"), initialize); a.status != http.StatusOK {
		t.Fatalf("a valid token: %d %s", a.status, a.body)
	}
	if a := l.post(t, "static-s3cret", initialize); a.status != http.StatusOK {
		t.Fatalf("the static token beside OAuth: %d %s", a.status, a.body)
	}
}

// TestOAuth_RefusesEveryTokenThatFailsACheck: a token is accepted only when
// it is signed by a key the issuer publishes, with an asymmetric algorithm,
// by the configured issuer, for this resource, unexpired (within the skew),
// already valid, and names a subject.
func TestOAuth_RefusesEveryTokenThatFailsACheck(t *testing.T) {
	t.Parallel()
	l := newOAuthLab(t)
	now := l.clock.Now()
	valid := func() map[string]any { return l.iss.claims(l.resource, "alice", "airlock:read", now, time.Minute) }
	with := func(k string, v any) map[string]any {
		c := valid()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	stranger := newIssuerKey(t, "k-unknown")
	impostor := newIssuerKey(t, "k1") // the published kid, another key
	pub, _ := x509.MarshalPKIXPublicKey(&l.key.key.PublicKey)
	cases := []struct {
		name     string
		token    string
		advance  time.Duration
		accepted bool
	}{
		{"valid", sign(t, l.key, valid()), 0, true},
		{"expired within the skew", sign(t, l.key, valid()), time.Minute + 20*time.Second, true},
		{"expired", sign(t, l.key, valid()), time.Minute + 31*time.Second, false},
		{"wrong audience", sign(t, l.key, with("aud", "https://other.example.com/mcp")), 0, false},
		{"audience list without this resource", sign(t, l.key, with("aud", []string{"https://a.example", "https://b.example"})), 0, false},
		{"wrong issuer", sign(t, l.key, with("iss", "https://evil.example.com")), 0, false},
		{"not valid yet", sign(t, l.key, with("nbf", now.Add(10*time.Minute).Unix())), 0, false},
		{"no subject", sign(t, l.key, with("sub", nil)), 0, false},
		{"no expiry", sign(t, l.key, with("exp", nil)), 0, false},
		{"a key the JWKS does not have", sign(t, stranger, valid()), 0, false},
		{"the published kid with another key", sign(t, impostor, valid()), 0, false},
		{"alg none", unsigned(valid()), 0, false},
		{"HS256 keyed with the public key", signHS256(t, pub, "k1", valid()), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l.clock.Set(now.Add(tc.advance))
			a := l.post(t, tc.token, initialize)
			switch {
			case tc.accepted && a.status != http.StatusOK:
				t.Fatalf("refused: %d %q %s", a.status, a.challenge, a.body)
			case !tc.accepted && (a.status != http.StatusUnauthorized || !strings.Contains(a.challenge, `error="invalid_token"`) || a.problem.Code != envelope.ProblemInvalidToken):
				t.Fatalf("accepted or wrongly refused: %d %q %s", a.status, a.challenge, a.body)
			}
		})
	}
}

// TestOAuth_ScopesChooseTools: airlock:read is offered the read tools and
// airlock:write all of them; calling a tool outside the token's scopes is
// 403 insufficient_scope naming the scope it needs, before airlock reads
// the call, and mcp-go's filter refuses it on any other path; a token with
// no airlock scope is refused at the door.
func TestOAuth_ScopesChooseTools(t *testing.T) {
	t.Parallel()
	l := newOAuthLab(t)
	read := []string{"describe_resources", "get_operation", "get_selection", "search_all"}
	if got := toolNames(t, l.connect(t, l.token(t, "alice", "airlock:read"))); !slices.Equal(got, read) {
		t.Fatalf("airlock:read is offered %v, want %v", got, read)
	}
	all := append(slices.Clone(read), "commit_bulk_action", "preview_selection")
	slices.Sort(all)
	if got := toolNames(t, l.connect(t, l.token(t, "bob", "openid airlock:write"))); !slices.Equal(got, all) {
		t.Fatalf("airlock:write is offered %v, want %v", got, all)
	}
	if got := toolNames(t, l.connect(t, "static-s3cret")); !slices.Equal(got, all) {
		t.Fatalf("the static token is offered %v, want %v", got, all)
	}

	reader := l.token(t, "alice", "airlock:read")
	for _, tool := range []string{"commit_bulk_action", "preview_selection"} {
		a := l.post(t, reader, callBody(tool))
		if a.status != http.StatusForbidden || !strings.Contains(a.challenge, `error="insufficient_scope"`) || !strings.Contains(a.challenge, `scope="airlock:write"`) ||
			!strings.Contains(a.challenge, "resource_metadata=") || a.problem.Code != envelope.ProblemInsufficientScope {
			t.Fatalf("airlock:read calls %s: %d %q %s", tool, a.status, a.challenge, a.body)
		}
	}
	batch := "[" + callBody("search_all") + "," + callBody("commit_bulk_action") + "]"
	if a := l.post(t, reader, batch); a.status != http.StatusForbidden {
		t.Fatalf("a batch that hides commit_bulk_action: %d %s", a.status, a.body)
	}
	if a := l.post(t, l.token(t, "carol", "openid profile"), initialize); a.status != http.StatusForbidden ||
		!strings.Contains(a.challenge, `error="insufficient_scope"`) || !strings.Contains(a.challenge, `scope="airlock:read"`) {
		t.Fatalf("a token without an airlock scope: %d %q %s", a.status, a.challenge, a.body)
	}

	// Past the HTTP gate (another transport, an embedding), mcp-go's
	// filter refuses the call as an unknown tool.
	srv, err := NewServer(l.h.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.oauth.Verify(t.Context(), reader)
	if err != nil {
		t.Fatal(err)
	}
	ctx := httpserve.WithPrincipal(t.Context(), p)
	srv.MCP().HandleMessage(ctx, []byte(initialize))
	res, _ := json.Marshal(srv.MCP().HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"commit_bulk_action","arguments":{}}}`)))
	if !strings.Contains(string(res), `"error"`) || !strings.Contains(string(res), "not found") {
		t.Fatalf("in process, airlock:read calls commit_bulk_action: %s", res)
	}
}

// TestOAuth_KeyRotationWithoutRestart: a token signed by a key the issuer
// has added is accepted once the last read of the JWKS is
// UnknownKeyInterval old (the JWKS is read again for an unknown key), and
// a key the issuer removed stops verifying once the keys in hand are older
// than KeysMaxAge, even for a token airlock remembers as verified; no
// restart either way.
func TestOAuth_KeyRotationWithoutRestart(t *testing.T) {
	t.Parallel()
	l := newOAuthLab(t, func(o *oauth.Options) { o.KeysMaxAge = 10 * time.Minute })
	old, next := l.key, newIssuerKey(t, "k2")
	token := func(k issuerKey) string {
		return sign(t, k, l.iss.claims(l.resource, "alice", "airlock:read", l.clock.Now(), time.Hour))
	}
	oldToken := token(old)
	if a := l.post(t, oldToken, initialize); a.status != http.StatusOK {
		t.Fatalf("the first key: %d", a.status)
	}
	reads := l.iss.jwksReads.Load()
	l.iss.publish(old, next)
	l.clock.Advance(oauth.DefaultUnknownKeyInterval)
	if a := l.post(t, token(next), initialize); a.status != http.StatusOK {
		t.Fatalf("a key added since: %d %s", a.status, a.body)
	}
	if l.iss.jwksReads.Load() != reads+1 {
		t.Fatalf("the JWKS was read %d more times for one new key, want 1", l.iss.jwksReads.Load()-reads)
	}
	l.iss.publish(next)
	if a := l.post(t, oldToken, initialize); a.status != http.StatusOK {
		t.Fatalf("a token verified before the key was removed, within KeysMaxAge: %d", a.status)
	}
	l.clock.Advance(10 * time.Minute)
	// The same token, remembered as verified: forgotten with its key set.
	if a := l.post(t, oldToken, initialize); a.status != http.StatusUnauthorized {
		t.Fatalf("a token of a key the issuer removed, after KeysMaxAge: %d", a.status)
	}
	if a := l.post(t, token(old), initialize); a.status != http.StatusUnauthorized {
		t.Fatalf("a new token of a key the issuer removed: %d", a.status)
	}
	if a := l.post(t, token(next), initialize); a.status != http.StatusOK {
		t.Fatalf("the current key: %d %s", a.status, a.body)
	}
}

// TestPrincipal_RecordedOnWhatEachChannelAsks: a selection previewed over
// HTTP records the token's subject and client id; the static token and a
// tokenless loopback listener record their own principals, so that who
// asked is never empty.
func TestPrincipal_RecordedOnWhatEachChannelAsks(t *testing.T) {
	t.Parallel()
	l := newOAuthLab(t)
	preview := func(c *client.Client) string {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = "preview_selection"
		req.Params.Arguments = inactiveProjects(nil)
		res, err := c.CallTool(t.Context(), req)
		if err != nil || res.IsError {
			t.Fatalf("preview: %v %+v", err, res)
		}
		return res.StructuredContent.(map[string]any)["data"].(map[string]any)["selection_id"].(string)
	}
	check := func(what, id, subject, clientID string) {
		t.Helper()
		sel, err := l.h.deps.Store.Selection(t.Context(), id)
		if err != nil || sel.Principal.Subject != subject || sel.Principal.ClientID != clientID {
			t.Fatalf("%s: the selection records %+v (%v), want %s/%s", what, sel.Principal, err, subject, clientID)
		}
	}
	check("an OAuth token", preview(l.connect(t, l.token(t, "alice@example.com", "airlock:write"))), "alice@example.com", "client-alice@example.com")
	check("the static token", preview(l.connect(t, "static-s3cret")), selection.SubjectStaticToken, "static-token")
	check("a loopback listener without a token", l.h.call("preview_selection", inactiveProjects(nil)).data["selection_id"].(string), selection.SubjectLocal, "http")
	stdio := newHarness(t, withTransport("stdio", ""))
	id := stdio.call("preview_selection", inactiveProjects(nil)).data["selection_id"].(string)
	if sel, err := stdio.deps.Store.Selection(t.Context(), id); err != nil || sel.Principal.Subject != selection.SubjectLocal || sel.Principal.ClientID != "stdio" {
		t.Fatalf("stdio: %+v %v", sel, err)
	}
}

// principalsConfig is the demo with policies on principals: archive is
// restricted to the ops group; pause_collection wants four eyes and an
// approver from leads.
func principalsConfig(base string) []byte {
	doc := string(fixtures.DemoConfig(base))
	doc = strings.Replace(doc, "    compensation: restore_state\n    approval: {mode: operator, destructive: true}",
		"    compensation: restore_state\n    principals: {groups: [ops]}\n    approval: {mode: operator, destructive: true}", 1)
	return []byte(strings.Replace(doc, "      unknown_category: [region]\n  resume_collection:",
		"      unknown_category: [region]\n      four_eyes: true\n      approvers: {groups: [leads]}\n  resume_collection:", 1))
}

// TestPolicyOnPrincipals_RefusesThroughTheTools: an action restricted to a
// group refuses the preview and the commit of a principal outside it; a
// four-eyes policy refuses the commit of the principal who previewed
// without asking them, an approvers restriction the commit of a principal
// who may not approve; an approver from the group is asked.
func TestPolicyOnPrincipals_RefusesThroughTheTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(principalsConfig))
	ctx := server.WithRequestProtocolInfo(context.Background(), &server.RequestProtocolInfo{Modern: true,
		ProtocolVersion: "2026-07-28", ClientInfo: &mcp.Implementation{Name: "modern-client", Version: "1"},
		ClientCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}})
	as := func(subject string, groups ...string) selection.Principal {
		return selection.Principal{Subject: subject, ClientID: "agent", Groups: groups, Scopes: []string{tools.ScopeWrite}, OAuth: true}
	}
	run := func(who selection.Principal, tool string, args map[string]any) (*envelope.Envelope, *tools.Call) {
		t.Helper()
		call := &tools.Call{RequestID: newRequestID(), Client: "mcp client modern-client 1", Principal: who, CanAsk: clientCanElicit(ctx)}
		call.Raw, _ = json.Marshal(args)
		env := h.handler(tool)(ctx, call)
		env.Finish()
		tooltest.RecordCodes(env.Marshal())
		return env, call
	}
	wantCode := func(what string, env *envelope.Envelope, code envelope.ProblemCode) {
		t.Helper()
		if env.Problem == nil || env.Problem.Code != code || env.Problem.StateChanged != envelope.StateNone {
			t.Fatalf("%s: %+v, want %s", what, env.Problem, code)
		}
	}

	env, _ := run(as("dev-1", "dev"), "preview_selection", inactiveProjects(nil))
	wantCode("a dev previews archive", env, envelope.ProblemPrincipalNotAllowed)
	ok, _ := run(as("ops-1", "ops"), "preview_selection", inactiveProjects(nil))
	if ok.Problem != nil {
		t.Fatalf("ops previews archive: %+v", ok.Problem)
	}
	data := dataOf(ok)
	archiveCommit := map[string]any{"selection_id": data["selection_id"], "expected_digest": data["digest"], "action": archive, "mode": "execute"}
	env, _ = run(as("dev-1", "dev"), "commit_bulk_action", archiveCommit)
	wantCode("a dev commits ops' archive, which they may not read", env, envelope.ProblemSelectionNotFound)
	opsReader := as("ops-reader", "dev")
	opsReader.Scopes = append(opsReader.Scopes, selection.ScopeOperator)
	env, _ = run(opsReader, "commit_bulk_action", archiveCommit)
	wantCode("an operator outside ops commits ops' archive", env, envelope.ProblemPrincipalNotAllowed)

	p, _ := run(as("alice", "dev"), "preview_selection", seedPreview(nil))
	sel := dataOf(p)
	pauseCommit := map[string]any{"selection_id": sel["selection_id"], "expected_digest": sel["digest"], "action": pauseAction, "mode": "execute"}
	env, call := run(as("alice", "dev"), "commit_bulk_action", pauseCommit)
	wantCode("alice commits what she previewed", env, envelope.ProblemApprovalByRequester)
	if call.Ask != nil {
		t.Fatal("alice was asked to approve her own write")
	}
	env, _ = run(as("writer"), "commit_bulk_action", pauseCommit)
	wantCode("a writer outside leads commits alice's selection, which they may not read", env, envelope.ProblemSelectionNotFound)
	operator := as("operator")
	operator.Scopes = append(operator.Scopes, selection.ScopeOperator)
	env, call = run(operator, "commit_bulk_action", pauseCommit)
	wantCode("an operator outside leads commits", env, envelope.ProblemApproverNotAllowed)
	if call.Ask != nil {
		t.Fatal("a principal outside leads was asked to approve")
	}
	if _, call = run(as("bob", "leads"), "commit_bulk_action", pauseCommit); call.Ask == nil {
		t.Fatal("bob (leads) was not asked to approve")
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("%d writes", n)
	}
	// The agent learns the policies before it previews.
	described := map[string]string{}
	for _, r := range h.call("describe_resources", map[string]any{}).data["resources"].([]any) {
		for _, a := range r.(map[string]any)["actions"].([]any) {
			a := a.(map[string]any)
			described[a["name"].(string)] = fmt.Sprint(a["principals"], a["approval"])
		}
	}
	if got := described["archive"]; !strings.Contains(got, "map[groups:[ops]]") {
		t.Errorf("describe_resources shows archive as %s", got)
	}
	if got := described["pause_collection"]; !strings.Contains(got, "approvers:map[groups:[leads]]") || !strings.Contains(got, "four_eyes:true") {
		t.Errorf("describe_resources shows pause_collection as %s", got)
	}
}

// TestOAuth_ARememberedTokenIsTimeCheckedOnEveryUse: a token verified once
// is not verified again on the next call, but its expiry is checked on
// every use: past it (and the skew) the same token is refused.
func TestOAuth_ARememberedTokenIsTimeCheckedOnEveryUse(t *testing.T) {
	t.Parallel()
	l := newOAuthLab(t)
	tok := sign(t, l.key, l.iss.claims(l.resource, "alice", "airlock:read", l.clock.Now(), time.Minute))
	p, err := l.oauth.Verify(t.Context(), tok)
	if err != nil || p.Subject != "alice" {
		t.Fatalf("first use: %+v %v", p, err)
	}
	reads := l.iss.jwksReads.Load()
	l.iss.publish() // the issuer publishes no key: only memory can accept it now
	if p, err := l.oauth.Verify(t.Context(), tok); err != nil || p.Subject != "alice" || fmt.Sprint(p.Scopes) != "[airlock:read]" {
		t.Fatalf("second use: %+v %v", p, err)
	}
	l.clock.Advance(time.Minute + oauth.DefaultSkew + time.Second)
	var te *oauth.TokenError
	if _, err := l.oauth.Verify(t.Context(), tok); !errors.As(err, &te) || te.Reason != "the token expired" {
		t.Fatalf("past its expiry: %v", err)
	}
	if l.iss.jwksReads.Load() != reads {
		t.Fatal("a remembered token made airlock read the JWKS")
	}
}

// TestOAuth_ASessionIsItsPrincipals: a streamable-HTTP session belongs to
// the principal that opened it; another token presenting its id is told
// there is no such session, and the owner goes on using it.
func TestOAuth_ASessionIsItsPrincipals(t *testing.T) {
	t.Parallel()
	l := newOAuthLab(t)
	alice, bob := l.token(t, "alice", "airlock:write"), l.token(t, "bob", "airlock:write")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, l.url, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatal("no session")
	}
	send := func(token string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, l.url, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(alice); got != http.StatusOK {
		t.Fatalf("alice on her session: %d", got)
	}
	if got := send(bob); got != http.StatusNotFound {
		t.Fatalf("bob on alice's session: %d, want 404", got)
	}
	if got := send(alice); got != http.StatusOK {
		t.Fatalf("alice on her session after bob's try: %d", got)
	}
}

// TestOAuth_ScopesComeFromScopeOrScpAndRequiredOnesAreEnforced: a token's
// scopes are read from scope (a string) or scp (an array or a string); a
// scope the server requires besides airlock's is 403 insufficient_scope,
// naming it, when missing.
func TestOAuth_ScopesComeFromScopeOrScpAndRequiredOnesAreEnforced(t *testing.T) {
	t.Parallel()
	l := newOAuthLab(t, func(o *oauth.Options) { o.RequiredScopes = []string{"mcp"} })
	with := func(k string, v any) string {
		c := l.iss.claims(l.resource, "alice", "", l.clock.Now(), time.Minute)
		delete(c, "scope")
		c[k] = v
		return sign(t, l.key, c)
	}
	for name, tc := range map[string]struct {
		token  string
		want   []string
		status int
	}{
		"scope string":  {with("scope", "mcp airlock:read"), []string{"airlock:read", "mcp"}, http.StatusOK},
		"scp array":     {with("scp", []string{"mcp", "airlock:write"}), []string{"airlock:write", "mcp"}, http.StatusOK},
		"scp string":    {with("scp", "airlock:read mcp"), []string{"airlock:read", "mcp"}, http.StatusOK},
		"without mcp":   {with("scope", "airlock:write"), []string{"airlock:write"}, http.StatusForbidden},
		"neither claim": {with("scope_list", "airlock:write mcp"), nil, http.StatusForbidden},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := l.oauth.Verify(t.Context(), tc.token)
			if err != nil || !slices.Equal(p.Scopes, tc.want) {
				t.Fatalf("scopes %v (%v), want %v", p.Scopes, err, tc.want)
			}
			a := l.post(t, tc.token, initialize)
			if a.status != tc.status {
				t.Fatalf("status %d %q, want %d", a.status, a.challenge, tc.status)
			}
			if tc.status == http.StatusForbidden && (!strings.Contains(a.challenge, `error="insufficient_scope"`) || !strings.Contains(a.challenge, `scope="mcp`)) {
				t.Fatalf("challenge %q does not name the missing scope", a.challenge)
			}
		})
	}
}

// TestOAuth_UnknownKeyIdsReadTheJWKSAtMostOncePerInterval: tokens naming
// key ids the issuer never published (200 of them) read the JWKS at most
// once per interval, and are refused without a read in between; a key the
// issuer really adds is picked up once the interval has passed.
func TestOAuth_UnknownKeyIdsReadTheJWKSAtMostOncePerInterval(t *testing.T) {
	t.Parallel()
	l := newOAuthLab(t)
	if a := l.post(t, l.token(t, "alice", tools.ScopeRead), initialize); a.status != http.StatusOK {
		t.Fatalf("a valid token: %d %s", a.status, a.body)
	}
	forger := newIssuerKey(t, "")
	madeUp := func(round int) {
		for i := range 100 {
			k := issuerKey{kid: fmt.Sprintf("made-up-%d-%d", round, i), key: forger.key}
			if a := l.post(t, sign(t, k, l.iss.claims(l.resource, "mallory", tools.ScopeRead, l.clock.Now(), time.Hour)), initialize); a.status != http.StatusUnauthorized {
				t.Fatalf("a token under a made-up kid: %d", a.status)
			}
		}
	}
	reads := l.iss.jwksReads.Load()
	madeUp(0)
	l.clock.Advance(oauth.DefaultUnknownKeyInterval)
	madeUp(1)
	if n := l.iss.jwksReads.Load() - reads; n > 1 {
		t.Fatalf("200 tokens under made-up kids, over two intervals, read the JWKS %d times; want at most 1", n)
	}
	// The issuer adds a key: within the interval since the last read, its
	// tokens are refused without a read; after it, the key is read and used.
	next := newIssuerKey(t, "k2")
	l.iss.publish(l.key, next)
	token := sign(t, next, l.iss.claims(l.resource, "alice", tools.ScopeRead, l.clock.Now(), time.Hour))
	reads = l.iss.jwksReads.Load()
	if a := l.post(t, token, initialize); a.status != http.StatusUnauthorized || l.iss.jwksReads.Load() != reads {
		t.Fatalf("a new key within the interval: %d, %d reads", a.status, l.iss.jwksReads.Load()-reads)
	}
	l.clock.Advance(oauth.DefaultUnknownKeyInterval)
	if a := l.post(t, token, initialize); a.status != http.StatusOK {
		t.Fatalf("a key the issuer added, after the interval: %d %s", a.status, a.body)
	}
	if n := l.iss.jwksReads.Load() - reads; n != 1 {
		t.Fatalf("the new key was read %d times, want 1", n)
	}
}
