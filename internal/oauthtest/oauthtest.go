// Package oauthtest is an OAuth 2.0 authorization server and an API that
// checks its tokens, for tests of the clients that use them. It is for
// tests only, and never listens itself: tests serve its handlers on
// loopback servers of their own.
package oauthtest

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ClientSecret is the OAuth client secret the token tests configure.
const ClientSecret = "cs-7Hq2Lw9Xv4-oauth-client-secret"

// TokenEndpoint is a fault-injecting authorization server: it issues
// numbered bearer tokens (tok-1, tok-2, ...) to the client that presents
// ClientSecret, and answers otherwise as its knobs say. It counts every
// request. The zero value issues tokens valid for an hour.
type TokenEndpoint struct {
	// Lifetime is expires_in (0: an hour; negative: none sent).
	Lifetime time.Duration
	// Answer, when set, answers instead of issuing a token.
	Answer func(w http.ResponseWriter, r *http.Request)
	// Gate, when set, holds each request until it is closed.
	Gate chan struct{}
	// Post expects the client secret in the form body, not in Basic.
	Post bool

	Requests atomic.Int64
	mu       sync.Mutex
	forms    []map[string][]string
}

// ServeHTTP issues a token, or answers as the knobs say.
func (te *TokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := te.Requests.Add(1)
	if te.Gate != nil {
		<-te.Gate
	}
	_ = r.ParseForm()
	te.mu.Lock()
	te.forms = append(te.forms, r.PostForm)
	te.mu.Unlock()
	if te.Answer != nil {
		te.Answer(w, r)
		return
	}
	id, secret, basic := r.BasicAuth()
	if te.Post {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		basic = false
	}
	if r.PostForm.Get("grant_type") != "client_credentials" || id != "airlock" || secret != ClientSecret || basic == te.Post {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client","error_description":"client authentication failed"}`)
		return
	}
	life := te.Lifetime
	if life == 0 {
		life = time.Hour
	}
	w.Header().Set("Content-Type", "application/json")
	exp := ""
	if life > 0 {
		exp = fmt.Sprintf(`,"expires_in":%d`, int(life.Seconds()))
	}
	fmt.Fprintf(w, `{"access_token":"tok-%d-a8f3c9e1","token_type":"Bearer","scope":%q%s}`, n, r.PostForm.Get("scope"), exp)
}

// Form is the form of the i-th token request.
func (te *TokenEndpoint) Form(i int) map[string][]string {
	te.mu.Lock()
	defer te.mu.Unlock()
	return te.forms[i]
}

// Credential is the credential block of an OAuth client of tokenURL.
func Credential(tokenURL, more string) string {
	return "credential:\n  oauth2:\n    token_url: " + tokenURL + "\n    client_id: airlock\n    client_secret: {env: CLIENT_SECRET}\n" + more
}

// Getenv holds the client secret Credential names.
func Getenv(k string) string {
	if k == "CLIENT_SECRET" {
		return ClientSecret
	}
	return ""
}

// API is an API that accepts the tokens accept says it does, and
// records the ones it was sent (see Seen).
type API struct {
	Accept func(token string) bool
	mu     sync.Mutex
	sent   []string
	Hits   atomic.Int64
}

// ServeHTTP answers {"ok":true}, or 401 to a token Accept refuses.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.Hits.Add(1)
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	a.sent = append(a.sent, tok+" "+r.Method+" "+r.Header.Get("Idempotency-Key"))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if a.Accept != nil && !a.Accept(tok) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_token"}`)
		return
	}
	fmt.Fprint(w, `{"ok":true}`)
}

// Seen lists each request as "token METHOD idempotency-key".
func (a *API) Seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.sent...)
}
