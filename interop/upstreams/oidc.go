package upstreams

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// OIDCResource is the resource indicator (RFC 8707) of the API the
// provider issues airlock's outbound tokens for: their audience.
const OIDCResource = "https://accounts.test/"

// OIDCProvider is a running oidc-provider 9.13.3 (interop/oidc/provider.mjs):
// an OAuth 2.0 authorization server that issues JWT access tokens. Two kinds
// of clients, listed in the script: "airlock" (client_secret_basic) and
// "airlock-post" (client_secret_post), with Secret, get ES256 tokens for
// OIDCResource only, with the scopes accounts.read and accounts.write, that
// live TTL; the callers of airlock (reader, writer, alice, bob, outsider;
// secret "<id>-secret") get RS256 tokens for any resource indicator.
type OIDCProvider struct {
	// Issuer is its issuer identifier (and base URL); TokenURL its token
	// endpoint.
	Issuer, TokenURL string
	Secret           string
	TTL              time.Duration
	proc             *process
}

// StartOIDCProvider starts oidc-provider on a free loopback port, with
// secret for airlock's outbound clients and ttl (whole seconds) for their
// tokens (an empty secret and a zero ttl take the script's defaults), and
// stops it when the test ends. It skips when interop/node_modules lacks
// oidc-provider (see package doc).
func StartOIDCProvider(t testing.TB, secret string, ttl time.Duration) *OIDCProvider {
	t.Helper()
	Enabled(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	dir := interopDir(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider", "package.json")); err != nil {
		missing(t, "interop/node_modules/oidc-provider is missing; run `npm ci` in interop/")
	}
	var env []string
	if secret != "" {
		env = append(env, "CLIENT_SECRET="+secret)
	}
	if ttl > 0 {
		env = append(env, "TOKEN_TTL="+strconv.Itoa(int(ttl/time.Second)))
	}
	started := time.Now()
	p := &OIDCProvider{Secret: secret, TTL: ttl}
	p.Issuer, p.proc = startProcess(t, "oidc-provider", dir, func(port int) []string {
		return []string{node, filepath.Join("oidc", "provider.mjs"), strconv.Itoa(port)}
	}, answersOK("/.well-known/openid-configuration"), env...)
	p.TokenURL = p.Issuer + "/token"
	t.Logf("oidc-provider 9.13.3: started in %.1fs at %s", time.Since(started).Seconds(), p.Issuer)
	return p
}

// Stop stops the provider: its token endpoint no longer answers.
func (p *OIDCProvider) Stop() { p.proc.stop() }

// TokenRequests is how many requests the token endpoint has received.
func (p *OIDCProvider) TokenRequests(t testing.TB) int {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodGet, p.Issuer+"/_test/token-requests", nil, nil, http.StatusOK)
	if err != nil {
		t.Fatalf("read the provider's token request count: %v", err)
	}
	var out struct {
		N int `json:"token_requests"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode the provider's token request count: %v", err)
	}
	return out.N
}

// TokenError is the authorization server's refusal of a token request.
type TokenError struct {
	Status int
	Body   string
}

func (e *TokenError) Error() string {
	return "token request refused: " + strconv.Itoa(e.Status) + " " + e.Body
}

// ClientCredentials asks the token endpoint for an access token with the
// client credentials grant (client_secret_basic), for scope and resource
// (RFC 8707), and returns it, or the server's refusal as a *TokenError.
func (p *OIDCProvider) ClientCredentials(t testing.TB, client, scope, resource string) (string, error) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}
	if resource != "" {
		form.Set("resource", resource)
	}
	hdr := http.Header{"Content-Type": {"application/x-www-form-urlencoded"},
		"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(client+":"+client+"-secret"))}}
	_, b, err := call(t.Context(), http.MethodPost, p.Issuer+"/token", hdr, []byte(form.Encode()), http.StatusOK)
	var he *httpError
	if errors.As(err, &he) {
		return "", &TokenError{Status: he.status, Body: he.body}
	}
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if json.Unmarshal(b, &body) != nil || body.AccessToken == "" {
		return "", &TokenError{Status: http.StatusOK, Body: string(truncate(b, 500))}
	}
	return body.AccessToken, nil
}

// Token is ClientCredentials that fails the test on a refusal.
func (p *OIDCProvider) Token(t testing.TB, client, scope, resource string) string {
	t.Helper()
	tok, err := p.ClientCredentials(t, client, scope, resource)
	if err != nil {
		t.Fatalf("%s: %v", client, err)
	}
	return tok
}

// Rotate makes a new signing key and publishes it first; the old keys stay
// in the JWKS. It returns the key ids published.
func (p *OIDCProvider) Rotate(t testing.TB) []string { return p.keys(t, "/_test/rotate") }

// Retire leaves only the newest key in the JWKS.
func (p *OIDCProvider) Retire(t testing.TB) []string { return p.keys(t, "/_test/retire") }

func (p *OIDCProvider) keys(t testing.TB, path string) []string {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodPost, p.Issuer+path, nil, nil, http.StatusOK)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out struct {
		Kids []string `json:"kids"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out.Kids
}
