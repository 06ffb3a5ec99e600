// Package oauth is airlock's OAuth 2.0 resource server (the MCP
// authorization spec): it verifies JWT access tokens of one issuer against
// the keys its JWKS publishes, serves the protected-resource metadata (RFC
// 9728), and binds each MCP session to the principal that opened it. The
// HTTP guard (package httpserve) sees it as a token verifier; nothing else
// in airlock imports a token library.
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// Defaults of the resource server.
const (
	// DefaultSkew is the clock skew tolerated on a token's exp and nbf.
	DefaultSkew = 30 * time.Second
	// DefaultKeysMaxAge is how long fetched signing keys are trusted
	// before the JWKS is read again: a key the issuer removed stops
	// verifying within it. A token signed by a key not yet seen makes the
	// JWKS be read again, at most once per UnknownKeyInterval (a rotation
	// needs no restart).
	DefaultKeysMaxAge = 10 * time.Minute
	// DefaultGroupsClaim is the claim that holds a principal's groups.
	DefaultGroupsClaim = "groups"
	// maxIdPBody bounds a discovery document or JWKS.
	maxIdPBody = 1 << 20
)

// DefaultAlgorithms are the signature algorithms accepted: asymmetric
// only. "none" and the HMAC algorithms (whose key would be the JWKS's
// public material) are never accepted.
var DefaultAlgorithms = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// Options configure airlock as an OAuth 2.0 resource server (the MCP
// authorization spec): it accepts JWT access tokens of one issuer, for
// this server, and serves its protected-resource metadata (RFC 9728).
type Options struct {
	// Issuer is the authorization server's issuer identifier; a token's
	// iss must equal it. Required.
	Issuer string
	// Resource is this server's resource identifier (RFC 8707, RFC 9728):
	// the absolute URL of its MCP endpoint as clients reach it, such as
	// https://airlock.example.com/mcp. A token's aud must hold it or one of
	// Audiences. Required.
	Resource string
	// Audiences are other values of aud accepted besides Resource (an
	// issuer that names its APIs by another identifier).
	Audiences []string
	// RequiredScopes must all be in every token, besides tools.ScopeRead
	// or tools.ScopeWrite.
	RequiredScopes []string
	// Skew is the clock skew tolerated on exp and nbf: DefaultSkew when
	// zero, none when negative.
	Skew time.Duration
	// JWKSURL is where the issuer's signing keys are; empty: from the
	// issuer's discovery document (/.well-known/openid-configuration).
	JWKSURL string
	// KeysMaxAge is how long fetched keys are trusted (DefaultKeysMaxAge
	// when zero).
	KeysMaxAge time.Duration
	// UnknownKeyInterval is how often, at most, a token naming a key id
	// not in the keys in hand makes the JWKS be read again
	// (DefaultUnknownKeyInterval when zero, KeysMaxAge at most); in
	// between, such a token is refused without a read.
	UnknownKeyInterval time.Duration
	// GroupsClaim names the claim holding the principal's groups, an
	// array of strings (DefaultGroupsClaim when empty).
	GroupsClaim string
	// Algorithms are the accepted signature algorithms (DefaultAlgorithms
	// when empty); "none" and HS* are refused whatever is listed.
	Algorithms []string
	// Clock is the time tokens are checked against (the wall clock when
	// nil).
	Clock upstream.Clock
	// HTTPClient fetches the discovery document and the JWKS (one with a
	// 10 s timeout when nil). Every body it reads is bounded.
	HTTPClient *http.Client
}

// ResourceServer validates access tokens. Build it with New.
type ResourceServer struct {
	opts      Options
	audiences []string
	jwksURL   string
	metadata  metadata

	keys *keySet

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	keysAt   time.Time
	gen      uint64 // counts the key sets
	verified map[[sha256.Size]byte]verifiedToken
	sessions sessionOwners
}

// verifiedToken is a token that passed every check, remembered so that the
// next call carrying it costs a hash rather than a signature check. Its
// time checks run again on every use, and it is forgotten with the key set
// that verified it.
type verifiedToken struct {
	p        selection.Principal
	exp, nbf time.Time // nbf zero when the token has none
	gen      uint64
}

// maxVerified bounds the verified tokens remembered.
const maxVerified = 4096

// New checks the options and, unless JWKSURL is set, reads the issuer's
// discovery document (an error when it cannot: serve fails at start-up
// rather than refusing every call).
func New(ctx context.Context, opts Options) (*ResourceServer, error) {
	var errs []string
	if u, err := url.Parse(opts.Issuer); opts.Issuer == "" || err != nil || !u.IsAbs() || u.Host == "" {
		errs = append(errs, "the issuer must be an absolute URL")
	}
	if u, err := url.Parse(opts.Resource); opts.Resource == "" || err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" {
		errs = append(errs, "the resource must be an absolute URL without a fragment (this server's MCP endpoint as clients reach it)")
	}
	if opts.JWKSURL != "" {
		if u, err := url.Parse(opts.JWKSURL); err != nil || !u.IsAbs() || u.Host == "" {
			errs = append(errs, "the JWKS URL must be an absolute URL")
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("oauth: %s", strings.Join(errs, "; "))
	}
	if opts.Skew == 0 {
		opts.Skew = DefaultSkew
	} else if opts.Skew < 0 {
		opts.Skew = 0
	}
	if opts.KeysMaxAge <= 0 {
		opts.KeysMaxAge = DefaultKeysMaxAge
	}
	if opts.UnknownKeyInterval <= 0 {
		opts.UnknownKeyInterval = DefaultUnknownKeyInterval
	}
	opts.UnknownKeyInterval = min(opts.UnknownKeyInterval, opts.KeysMaxAge)
	if opts.GroupsClaim == "" {
		opts.GroupsClaim = DefaultGroupsClaim
	}
	if opts.Clock == nil {
		opts.Clock = upstream.WallClock
	}
	var algs []string
	for _, a := range opts.Algorithms {
		if a != "none" && !strings.HasPrefix(strings.ToUpper(a), "HS") {
			algs = append(algs, a)
		}
	}
	if len(algs) == 0 {
		algs = DefaultAlgorithms
	}
	opts.Algorithms = algs
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	bounded := *client
	base := bounded.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	bounded.Transport = boundedBodies{base}
	o := &ResourceServer{opts: opts, audiences: append([]string{opts.Resource}, opts.Audiences...), jwksURL: opts.JWKSURL}
	if o.jwksURL == "" {
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, &bounded), opts.Issuer)
		if err != nil {
			return nil, fmt.Errorf("oauth: read the issuer's discovery document: %w", err)
		}
		var doc struct {
			JWKS string `json:"jwks_uri"`
		}
		if err := p.Claims(&doc); err != nil || doc.JWKS == "" {
			return nil, fmt.Errorf("oauth: the issuer %q names no jwks_uri", opts.Issuer)
		}
		o.jwksURL = doc.JWKS
	}
	o.keys = newKeySet(o.jwksURL, &bounded, opts.Clock, opts.UnknownKeyInterval, opts.Algorithms)
	scopes := []string{tools.ScopeRead, tools.ScopeWrite}
	for _, s := range opts.RequiredScopes {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	o.metadata = metadata{
		Resource: opts.Resource, AuthorizationServers: []string{opts.Issuer}, ScopesSupported: scopes,
		BearerMethodsSupported: []string{"header"}, ResourceName: "airlock",
	}
	return o, nil
}

// boundedBodies bounds every response body read through it.
type boundedBodies struct{ next http.RoundTripper }

func (b boundedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{r: io.LimitReader(resp.Body, maxIdPBody+1), c: resp.Body}
	return resp, nil
}

type limitedBody struct {
	r io.Reader
	c io.Closer
	n int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > maxIdPBody {
		return 0, fmt.Errorf("an identity provider's answer over %d bytes", maxIdPBody)
	}
	return n, err
}

func (l *limitedBody) Close() error { return l.c.Close() }

// current returns the verifier and its key set's generation, with a fresh
// key set (the JWKS read again at the next token) once the keys in hand
// are older than KeysMaxAge.
func (o *ResourceServer) current() (*oidc.IDTokenVerifier, uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.opts.Clock.Now()
	if o.verifier == nil || now.Sub(o.keysAt) >= o.opts.KeysMaxAge {
		skew := o.opts.Skew
		if o.verifier != nil {
			o.keys.expire()
		}
		o.verifier = oidc.NewVerifier(o.opts.Issuer, o.keys, &oidc.Config{
			SkipClientIDCheck:    true, // the audience is checked below, against the resource
			SupportedSigningAlgs: o.opts.Algorithms,
			Now:                  func() time.Time { return o.opts.Clock.Now().Add(-skew) },
		})
		o.keysAt = now
		o.gen++
		o.verified = map[[sha256.Size]byte]verifiedToken{}
	}
	return o.verifier, o.gen
}

// TokenError says why an access token was refused, in words fixed by
// airlock (never the token's own text).
type TokenError struct {
	Reason string
	Err    error
}

func (e *TokenError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *TokenError) Unwrap() error { return e.Err }

// Description is the refusal's reason, for a challenge's
// error_description.
func (e *TokenError) Description() string { return e.Reason }

// claims are the access token's claims airlock reads (RFC 9068).
type claims struct {
	ClientID  string          `json:"client_id"`
	Azp       string          `json:"azp"`
	Scope     string          `json:"scope"`
	Scp       json.RawMessage `json:"scp"`
	NotBefore *float64        `json:"nbf"`
}

// Verify validates a JWT access token: its signature by a key the
// issuer's JWKS publishes (with an algorithm in Algorithms, never none),
// its issuer, its audience (the resource or one of Audiences), its expiry
// and not-before with the skew, and a subject. It returns the principal
// the token names, with its scopes and groups; a refusal is a *TokenError.
// A token that passed is remembered by its hash until the key set that
// verified it is replaced (KeysMaxAge), so that the next call carrying it
// skips the signature check; its expiry and not-before are checked again
// on every use.
func (o *ResourceServer) Verify(ctx context.Context, raw string) (selection.Principal, error) {
	key := sha256.Sum256([]byte(raw))
	_, gen := o.current()
	o.mu.Lock()
	v, ok := o.verified[key]
	o.mu.Unlock()
	if ok && v.gen == gen {
		now := o.opts.Clock.Now()
		switch {
		case v.exp.Before(now.Add(-o.opts.Skew)):
			return selection.Principal{}, &TokenError{Reason: "the token expired"}
		case !v.nbf.IsZero() && v.nbf.After(now.Add(o.opts.Skew)):
			return selection.Principal{}, &TokenError{Reason: "the token is not valid yet"}
		}
		p := v.p
		p.Scopes, p.Groups = slices.Clone(p.Scopes), slices.Clone(p.Groups)
		return p, nil
	}
	p, exp, nbf, err := o.verify(ctx, raw)
	if err != nil {
		return selection.Principal{}, err
	}
	o.mu.Lock()
	if o.gen == gen {
		if len(o.verified) >= maxVerified {
			now := o.opts.Clock.Now()
			for k, t := range o.verified {
				if t.exp.Before(now.Add(-o.opts.Skew)) {
					delete(o.verified, k)
				}
			}
			if len(o.verified) >= maxVerified {
				clear(o.verified)
			}
		}
		o.verified[key] = verifiedToken{p: p, exp: exp, nbf: nbf, gen: gen}
	}
	o.mu.Unlock()
	p.Scopes, p.Groups = slices.Clone(p.Scopes), slices.Clone(p.Groups)
	return p, nil
}

// verify runs every check of Verify on a token, with no memory of earlier
// ones; it also returns the token's exp and nbf.
func (o *ResourceServer) verify(ctx context.Context, raw string) (p selection.Principal, exp, nbf time.Time, err error) {
	verifier, _ := o.current()
	tok, err := verifier.Verify(ctx, raw)
	if err != nil {
		// Every failure refuses the token; the reason only says which
		// check failed (go-oidc types the expiry alone).
		var expired *oidc.TokenExpiredError
		switch {
		case errors.As(err, &expired):
			return p, exp, nbf, &TokenError{Reason: "the token expired", Err: err}
		case strings.Contains(err.Error(), "different provider"):
			return p, exp, nbf, &TokenError{Reason: "the token was issued by another issuer", Err: err}
		case strings.Contains(err.Error(), "nbf"):
			return p, exp, nbf, &TokenError{Reason: "the token is not valid yet", Err: err}
		case strings.Contains(err.Error(), "malformed jwt"):
			return p, exp, nbf, &TokenError{Reason: "the token is not a JWT signed with an accepted algorithm", Err: err}
		default:
			return p, exp, nbf, &TokenError{Reason: "the token's signature does not verify with the issuer's published keys", Err: err}
		}
	}
	if !slices.ContainsFunc(tok.Audience, func(a string) bool { return slices.Contains(o.audiences, a) }) {
		return p, exp, nbf, &TokenError{Reason: "the token is for another resource (its audience is not this server)"}
	}
	if tok.Subject == "" {
		return p, exp, nbf, &TokenError{Reason: "the token names no subject"}
	}
	var c claims
	if err := tok.Claims(&c); err != nil {
		return p, exp, nbf, &TokenError{Reason: "the token's claims cannot be read", Err: err}
	}
	if c.NotBefore != nil {
		nbf = time.Unix(int64(*c.NotBefore), 0)
		if nbf.After(o.opts.Clock.Now().Add(o.opts.Skew)) {
			return p, exp, nbf, &TokenError{Reason: "the token is not valid yet"}
		}
	}
	var all map[string]json.RawMessage
	_ = tok.Claims(&all)
	p = selection.Principal{Subject: tok.Subject, ClientID: c.ClientID, OAuth: true,
		Scopes: scopesOf(c.Scope, c.Scp), Groups: stringsOf(all[o.opts.GroupsClaim])}
	if p.ClientID == "" {
		p.ClientID = c.Azp
	}
	return p, tok.Expiry, nbf, nil
}

// scopesOf reads scope (a space-separated string) and scp (an array of
// strings, or a space-separated string).
func scopesOf(scope string, scp json.RawMessage) []string {
	out := strings.Fields(scope)
	var s string
	if json.Unmarshal(scp, &s) == nil {
		out = append(out, strings.Fields(s)...)
	} else {
		out = append(out, stringsOf(scp)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// stringsOf reads a JSON array of strings (anything else is none).
func stringsOf(raw json.RawMessage) []string {
	var out []string
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}

// MetadataPath is where the protected-resource metadata is served (RFC
// 9728: the well-known path with the resource's own path appended).
func (o *ResourceServer) MetadataPath() string { return metadataPath(o.opts.Resource) }

// MetadataURL is the metadata's absolute URL, as WWW-Authenticate names it.
func (o *ResourceServer) MetadataURL() string {
	u, _ := url.Parse(o.opts.Resource)
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: o.MetadataPath()}).String()
}

// Metadata are the metadata's handlers: at its RFC 9728 path and, for
// clients that look only there, at the bare well-known path.
func (o *ResourceServer) Metadata() map[string]http.Handler {
	h := o.metadata.handler()
	return map[string]http.Handler{o.MetadataPath(): h, wellKnownPath: h}
}

// ScopesSupported are the scopes the metadata names: airlock's and the
// required ones.
func (o *ResourceServer) ScopesSupported() []string { return slices.Clone(o.metadata.ScopesSupported) }

// RequiredScopes must all be in every token, besides tools.ScopeRead or
// tools.ScopeWrite.
func (o *ResourceServer) RequiredScopes() []string { return slices.Clone(o.opts.RequiredScopes) }

// ClaimSession reports whether subject may use the session r names (none:
// yes), binding it to subject on first use; a DELETE ends the binding.
func (o *ResourceServer) ClaimSession(r *http.Request, subject string) bool {
	return o.sessions.claim(r, subject)
}

// sessionOwners binds each MCP session (streamable HTTP's Mcp-Session-Id,
// SSE's sessionId) to the subject that first used it: a session is its
// principal's, and another token holding its id is answered as if it did
// not exist (so that nobody answers another's approval request on it).
type sessionOwners struct {
	mu     sync.Mutex
	owners map[string]string
}

// maxSessionOwners bounds the sessions remembered; past it, half of them
// (any half) are forgotten, and a forgotten session is bound again by its
// next use.
const maxSessionOwners = 1 << 16

// claim reports whether subject may use the session r names (none: yes),
// binding it to subject on first use; a DELETE ends the binding.
func (s *sessionOwners) claim(r *http.Request, subject string) bool {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" && r.URL.Path == "/message" {
		id = r.URL.Query().Get("sessionId")
	}
	if id == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owners == nil {
		s.owners = map[string]string{}
	}
	owner, ok := s.owners[id]
	switch {
	case ok && owner != subject:
		return false
	case r.Method == http.MethodDelete:
		delete(s.owners, id)
	case !ok:
		if len(s.owners) >= maxSessionOwners {
			n := 0
			for k := range s.owners {
				if n++; n > maxSessionOwners/2 {
					break
				}
				delete(s.owners, k)
			}
		}
		s.owners[id] = subject
	}
	return true
}

// wellKnownPath is the base of every protected-resource metadata path
// (RFC 9728).
const wellKnownPath = "/.well-known/oauth-protected-resource"

// metadataPath is the well-known path that serves the metadata of
// resource (RFC 9728 §3.1): the base, with the resource's path appended.
func metadataPath(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return wellKnownPath
	}
	p := strings.Trim(u.Path, "/")
	if p == "" {
		return wellKnownPath
	}
	return path.Join(wellKnownPath, p)
}

// metadata is the protected-resource metadata (RFC 9728) airlock serves.
type metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// handler serves the metadata as JSON to GET and HEAD, with permissive
// CORS (browser clients discover it cross-origin) and no-store (so that
// a rotation is seen at once); 204 to a preflight, 405 to anything else.
func (m metadata) handler() http.Handler {
	body, err := json.Marshal(m)
	if err != nil {
		panic("oauth: metadata: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
		switch r.Method {
		case http.MethodOptions:
			w.WriteHeader(http.StatusNoContent)
			return
		case http.MethodGet, http.MethodHead:
		default:
			w.Header().Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}
