package upstreams

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// OIDCResource is the resource indicator (RFC 8707) the provider issues
// access tokens for: their audience.
const OIDCResource = "https://accounts.test/"

// OIDCProvider is a running oidc-provider 9.13.3 (interop/oidc-provider.mjs):
// an OpenID provider that issues client credentials tokens to the clients
// "airlock" (client_secret_basic) and "airlock-post" (client_secret_post),
// with the scopes accounts.read and accounts.write, as ES256-signed JWTs
// for OIDCResource that live TTL.
type OIDCProvider struct {
	// Issuer is the provider's URL; TokenURL its token endpoint.
	Issuer, TokenURL string
	Secret           string
	TTL              time.Duration
	proc             *process
}

// StartOIDCProvider starts oidc-provider on a free loopback port with the
// clients' secret and the tokens' lifetime (whole seconds), and stops it
// when the test ends. It skips when interop/node_modules lacks
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
	started := time.Now()
	p := &OIDCProvider{Secret: secret, TTL: ttl}
	var port int
	p.Issuer = startProcessEnv(t, "oidc-provider", dir, func(pt int) ([]string, []string) {
		port = pt
		return []string{node, "oidc-provider.mjs"}, []string{"PORT=" + strconv.Itoa(pt), "CLIENT_SECRET=" + secret,
			"RESOURCE=" + OIDCResource, "TOKEN_TTL=" + strconv.Itoa(int(ttl/time.Second))}
	}, answersOK("/.well-known/openid-configuration"), &p.proc)
	p.TokenURL = p.Issuer + "/token"
	t.Logf("oidc-provider 9.13.3: started in %.1fs at %s (port %d), tokens live %s", time.Since(started).Seconds(), p.Issuer, port, ttl)
	return p
}

// TokenRequests is how many requests the token endpoint has received.
func (p *OIDCProvider) TokenRequests(t testing.TB) int {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodGet, p.Issuer+"/__test/token-requests", nil, nil, http.StatusOK)
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

// Stop stops the provider: its token endpoint no longer answers.
func (p *OIDCProvider) Stop() { p.proc.stop() }

// startProcessEnv is startProcess for a command that also needs
// environment variables; it hands back the process.
func startProcessEnv(t testing.TB, name, dir string, argv func(port int) (args, env []string), ready func(ctx context.Context, base string) bool, out **process) string {
	t.Helper()
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		port := freePort(t)
		args, env := argv(port)
		p, err := spawnEnv(t, name, dir, args, env)
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		if err = p.waitReady(t.Context(), base, ready); err == nil {
			*out = p
			return base
		}
		lastErr = err
		exited := false
		select {
		case <-p.done:
			exited = true
		default:
		}
		p.stop()
		if !exited {
			break
		}
	}
	t.Fatalf("%s did not become ready: %v", name, lastErr)
	return ""
}

func spawnEnv(t testing.TB, name, dir string, args, env []string) (*process, error) {
	logFile, err := os.CreateTemp(t.TempDir(), name+"-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(append(os.Environ(), "NO_UPDATE_NOTIFIER=1"), env...)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &process{name: name, cmd: cmd, log: logFile.Name(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p, nil
}
