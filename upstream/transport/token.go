package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/redact"
)

// maxRenewMargin bounds how long before its expiry a token is renewed.
const maxRenewMargin = 30 * time.Second

// renewMargin is how long before its expiry a token is renewed: a fifth
// of its lifetime, at most 30 s, and at least 2 s (or half of a shorter
// lifetime): servers write expiry times in whole seconds, truncated, and
// the request still has to travel.
func renewMargin(life time.Duration) time.Duration {
	return max(min(life/5, maxRenewMargin), min(life/2, 2*time.Second))
}

// tokenSource holds one upstream's OAuth 2.0 access token: obtained with
// the client credentials grant (x/oauth2's clientcredentials), cached,
// renewed before it expires, and renewed at once when the API refuses it.
//
// Concurrent callers share one token request, whatever its outcome
// (singleflight): each waits for that one request (bounded by the
// upstream's timeout) or its own context, never for a queue of them. A
// failure is remembered: until a backoff is over (tokenBackoffBase,
// doubled by each failure in a row up to tokenBackoffMax, and never
// shorter than the endpoint's Retry-After), callers get it again without
// a request, told that it was answered from memory and until when.
type tokenSource struct {
	cfg    clientcredentials.Config
	hc     *http.Client
	clock  clock.Clock
	logger *slog.Logger
	// obtained is told every token received before it is used (the
	// runtime's Redactor learns it there).
	obtained func(*oauth2.Token)
	host     string
	// red knows every credential: a refusal's body is redacted before it
	// is quoted, cut to a few hundred characters (a secret cut in two
	// there would escape it).
	red *redact.Redactor

	flight singleflight.Group

	mu      sync.Mutex
	tok     *oauth2.Token
	renewAt time.Time // zero: renewed only when refused
	// failed is the last token request's failure while it is remembered:
	// from failedAt until retryAt; failures counts those in a row.
	failed            *TokenError
	failedAt, retryAt time.Time
	failures          int
	// requests counts the token requests sent.
	requests atomic.Int64
}

// The backoff of a failed token request: the first failure is remembered
// for tokenBackoffBase, each one in a row after it twice as long, up to
// tokenBackoffMax. A Retry-After the endpoint sent lengthens it, up to
// tokenRetryAfterMax.
const (
	tokenBackoffBase   = 5 * time.Second
	tokenBackoffMax    = 60 * time.Second
	tokenRetryAfterMax = 5 * time.Minute
)

// tokenBackoff is how long the n-th failure in a row (from 1) is
// remembered, at least retryAfter (bounded).
func tokenBackoff(n int, retryAfter time.Duration) time.Duration {
	d := tokenBackoffBase
	for i := 1; i < n && d < tokenBackoffMax; i++ {
		d *= 2
	}
	return max(min(d, tokenBackoffMax), min(retryAfter, tokenRetryAfterMax))
}

func newTokenSource(cfg clientcredentials.Config, hc *http.Client, clock clock.Clock, logger *slog.Logger, red *redact.Redactor, obtained func(*oauth2.Token)) *tokenSource {
	host := cfg.TokenURL
	if u, err := url.Parse(cfg.TokenURL); err == nil {
		host = u.Host
	}
	return &tokenSource{cfg: cfg, hc: hc, clock: clock, logger: logger, red: red, obtained: obtained, host: host}
}

// token returns a valid access token: the cached one while it is not due
// for renewal, else a new one, asked for once by every caller waiting at
// the time. While a failure is remembered, it is that failure, without a
// request. A caller whose context ends first returns without waiting
// further; the request goes on for the others.
func (ts *tokenSource) token(ctx context.Context) (*oauth2.Token, error) {
	if tok, err := ts.cached(); tok != nil || err != nil {
		return tok, err
	}
	// The request outlives a caller that leaves: others may wait for it.
	// The token endpoint's HTTP client bounds it (the upstream's timeout).
	fetchCtx := context.WithoutCancel(ctx)
	ch := ts.flight.DoChan("token", func() (any, error) {
		if tok, err := ts.cached(); tok != nil || err != nil {
			return tok, err // another flight settled it just before
		}
		return ts.fetch(fetchCtx)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			var te *TokenError
			if errors.As(r.Err, &te) {
				cp := *te // each caller its own copy
				return nil, &cp
			}
			return nil, r.Err
		}
		return r.Val.(*oauth2.Token), nil
	case <-ctx.Done():
		return nil, &TokenError{Kind: TokenTimeout, Host: ts.host, canceled: true}
	}
}

// cached is the token in hand while it is not due for renewal, or the
// remembered failure while its backoff lasts; neither: nil, nil.
func (ts *tokenSource) cached() (*oauth2.Token, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := ts.clock.Now()
	if ts.tok != nil && (ts.renewAt.IsZero() || now.Before(ts.renewAt)) {
		return ts.tok, nil
	}
	if ts.failed != nil && now.Before(ts.retryAt) {
		cp := *ts.failed
		cp.RememberedAt, cp.RememberedUntil, cp.now = ts.failedAt, ts.retryAt, now
		return nil, &cp
	}
	return nil, nil
}

// refused drops the cached token when it is the one the API refused, so
// that the next call fetches another. Many requests refused with the same
// token drop it once: they then share the one renewal.
func (ts *tokenSource) refused(access string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.tok != nil && ts.tok.AccessToken == access {
		ts.tok = nil
	}
}

// fetch asks the token endpoint for a token, and keeps the token, or
// remembers the failure.
func (ts *tokenSource) fetch(ctx context.Context) (*oauth2.Token, error) {
	ts.requests.Add(1)
	start := ts.clock.Now()
	tok, err := ts.cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, ts.hc))
	if err != nil {
		te := classifyTokenError(ctx, ts.host, err, ts.clock.Now())
		te.Body = ts.red.Bytes(te.Body)
		wait := ts.remember(te, start)
		ts.logger.Warn("token request failed", "token_host", ts.host, "kind", te.Kind.String(), "status", te.Status, "error_code", envelope.SafeName(te.ErrorCode),
			"asks_again_in_s", int(wait.Seconds()))
		return nil, te
	}
	if typ := tok.Type(); !strings.EqualFold(typ, "bearer") {
		// A token bound to a proof (DPoP, MAC) cannot be sent as a bearer.
		ts.obtained(tok)
		te := &TokenError{Kind: TokenInvalidResponse, Host: ts.host, Detail: "the token's type is " + envelope.SafeName(typ) + ", not Bearer"}
		ts.remember(te, start)
		return nil, te
	}
	ts.obtained(tok)
	ts.mu.Lock()
	ts.tok = tok
	ts.renewAt = time.Time{}
	if life := lifetime(tok); life > 0 {
		ts.renewAt = start.Add(life - renewMargin(life))
	}
	ts.failed, ts.failures = nil, 0
	ts.mu.Unlock()
	ts.logger.Debug("access token obtained", "token_host", ts.host, "expires_in_s", int(lifetime(tok).Seconds()), "scope", grantedScope(tok))
	return tok, nil
}

// remember keeps a failure for its backoff and returns the backoff. The
// failure's RetryAfter becomes the wait left before the endpoint is asked
// again: what its problem tells.
func (ts *tokenSource) remember(te *TokenError, at time.Time) time.Duration {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.failures++
	wait := tokenBackoff(ts.failures, te.RetryAfter)
	ts.failed, ts.failedAt, ts.retryAt = te, at, at.Add(wait)
	te.RetryAfter = max(ts.retryAt.Sub(ts.clock.Now()), 0)
	return wait
}

// lifetime is how long the token is valid from when it was asked for:
// expires_in as the server said it (the injected clock measures the rest).
// Zero when the server named none. x/oauth2 sets a token's Expiry (on the
// wall clock) only from an expires_in it also keeps among the token's
// fields, so Expiry says nothing more and is not read.
func lifetime(tok *oauth2.Token) time.Duration {
	if tok.ExpiresIn > 0 {
		return time.Duration(tok.ExpiresIn) * time.Second
	}
	// clientcredentials keeps the answer's fields in Extra only.
	var secs float64
	switch v := tok.Extra("expires_in").(type) {
	case float64:
		secs = v
	case string:
		secs, _ = strconv.ParseFloat(v, 64)
	}
	if secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	return 0
}

// grantedScope is the scope the token response names ("" when it names
// none: by RFC 6749 §5.1, the scope requested).
func grantedScope(tok *oauth2.Token) string {
	s, _ := tok.Extra("scope").(string)
	return s
}

// TokenKind classifies a failure to obtain an access token.
type TokenKind int

// Token failure kinds.
const (
	TokenClientRejected  TokenKind = iota + 1 // invalid_client, unauthorized_client, or 401
	TokenRequestRejected                      // invalid_scope, invalid_target, invalid_request, other 4xx
	TokenServerError                          // 5xx, 429 or another status
	TokenTimeout                              // no answer in time
	TokenUnreachable                          // the connection failed
	TokenInvalidResponse                      // a 2xx whose body is not a token
)

func (k TokenKind) String() string {
	switch k {
	case TokenClientRejected:
		return "client_rejected"
	case TokenRequestRejected:
		return "request_rejected"
	case TokenServerError:
		return "server_error"
	case TokenTimeout:
		return "timeout"
	case TokenUnreachable:
		return "unreachable"
	}
	return "invalid_response"
}

// TokenError is a failure to obtain an access token from the authorization
// server. The request it was for was not sent. It holds the token
// endpoint's answer for the problem's upstream_message, never the client
// secret airlock sent (the Redactor removes an echo of it).
type TokenError struct {
	Kind   TokenKind
	Host   string
	Status int
	// ErrorCode is the server's OAuth error code (invalid_client, ...).
	ErrorCode  string
	Header     http.Header
	Body       []byte
	RetryAfter time.Duration // once remembered, the wait kept before asking again (what the problem tells)
	// Detail is built from fixed text: why a 2xx was not a token.
	Detail string
	// RememberedAt and RememberedUntil are set when the failure was
	// answered from memory, without a request: it happened at
	// RememberedAt, and the endpoint is asked again from RememberedUntil.
	RememberedAt, RememberedUntil time.Time
	now                           time.Time // when it was answered from memory
	canceled                      bool
	// Login is set when the failure is a session credential's login (or
	// its CSRF token step) at the API itself, not an authorization
	// server's token endpoint.
	Login bool
}

func (e *TokenError) Error() string {
	s := "access token from " + e.Host + ": " + e.Kind.String()
	if e.Status != 0 {
		s += fmt.Sprintf(" (status %d)", e.Status)
	}
	return s
}

// IsTokenProblem reports whether a problem says that no access token could
// be obtained: then the request it answers was never sent.
func IsTokenProblem(code envelope.ProblemCode) bool {
	switch code {
	case envelope.ProblemTokenClientRejected, envelope.ProblemTokenRequestRejected, envelope.ProblemTokenEndpointFailed,
		envelope.ProblemTokenEndpointTimeout, envelope.ProblemTokenEndpointUnreachable, envelope.ProblemTokenResponseInvalid:
		return true
	}
	return false
}

// safeHost keeps a host:port from the configuration readable in a detail,
// and nothing else.
func safeHost(h string) string {
	var b strings.Builder
	for _, r := range h {
		switch {
		case b.Len() >= 100:
			return b.String() + "…"
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == ':', r == '[', r == ']':
			b.WriteRune(r)
		default:
			b.WriteRune('?')
		}
	}
	return b.String()
}

// IsTokenError reports whether err is a refusal of the token endpoint or
// the login (a *TokenError).
func IsTokenError(err error) bool {
	var te *TokenError
	return errors.As(err, &te)
}

// rfc6749Errors are the error codes a detail may name: the standard's,
// RFC 8707's invalid_target, and nothing an upstream made up.
var rfc6749Errors = map[string]bool{"invalid_request": true, "invalid_client": true, "invalid_grant": true, "unauthorized_client": true,
	"unsupported_grant_type": true, "invalid_scope": true, "invalid_target": true, "server_error": true, "temporarily_unavailable": true, "access_denied": true}

// classifyTokenError classifies a failed token request; now (on the
// client's clock) dates a Retry-After.
func classifyTokenError(ctx context.Context, host string, err error, now time.Time) *TokenError {
	te := &TokenError{Host: host}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te.ErrorCode = re.ErrorCode
		te.Body = re.Body
		if re.Response != nil {
			te.Status, te.Header = re.Response.StatusCode, re.Response.Header
		}
		switch {
		case re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client" || te.Status == http.StatusUnauthorized:
			te.Kind = TokenClientRejected
		case re.ErrorCode == "server_error" || re.ErrorCode == "temporarily_unavailable" || te.Status >= 500 || te.Status == http.StatusTooManyRequests:
			te.Kind = TokenServerError
			te.RetryAfter = min(RetryAfter(te.Header, now), tokenRetryAfterMax)
		case te.Status >= 400 && te.Status < 500, te.ErrorCode != "":
			te.Kind = TokenRequestRejected
		default:
			te.Kind = TokenServerError
		}
		return te
	}
	var ne net.Error
	var ue *url.Error
	switch {
	case ctx.Err() != nil:
		te.Kind, te.canceled = TokenTimeout, true
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		te.Kind = TokenTimeout
	case errors.As(err, &ue):
		te.Kind = TokenUnreachable
	default:
		// x/oauth2 read a 2xx it could not take as a token: not JSON or
		// a form, no access_token.
		te.Kind = TokenInvalidResponse
		te.Detail = "the body is not a token response (no access_token)"
	}
	return te
}

// tokenProblem is the problem of a failure to obtain a token: whose fault
// it is, whether to retry, and what an operator fixes.
func tokenProblem(te *TokenError) *envelope.Problem {
	if te.Login {
		return loginProblem(te)
	}
	host := safeHost(te.Host)
	code := ""
	if rfc6749Errors[te.ErrorCode] {
		code = " (" + te.ErrorCode + ")"
	}
	var p *envelope.Problem
	switch te.Kind {
	case TokenClientRejected:
		p = envelope.NewProblem(envelope.ProblemTokenClientRejected, fmt.Sprintf("The authorization server at %s refused airlock's client credentials%s: the client id or secret in airlock's configuration is wrong, expired or revoked, or the client may not use the client credentials grant. No request reached the API.", host, code))
	case TokenRequestRejected:
		p = envelope.NewProblem(envelope.ProblemTokenRequestRejected, fmt.Sprintf("The authorization server at %s refused the token request%s: the scopes, audience or resource airlock's configuration asks for are not granted to this client. No request reached the API.", host, code))
	case TokenServerError:
		p = envelope.NewProblem(envelope.ProblemTokenEndpointFailed, fmt.Sprintf("The authorization server at %s failed to issue a token (status %d%s). No request reached the API.", host, te.Status, code))
	case TokenTimeout:
		p = envelope.NewProblem(envelope.ProblemTokenEndpointTimeout, fmt.Sprintf("The authorization server at %s did not answer the token request in time. No request reached the API.", host))
	case TokenUnreachable:
		p = envelope.NewProblem(envelope.ProblemTokenEndpointUnreachable, fmt.Sprintf("The authorization server at %s could not be reached (connection refused, DNS or TLS). No request reached the API.", host))
	default:
		detail := te.Detail
		if detail == "" {
			detail = "the body is not a token response"
		}
		p = envelope.NewProblem(envelope.ProblemTokenResponseInvalid, fmt.Sprintf("The authorization server at %s answered the token request with something that is not a usable token: %s. No request reached the API.", host, detail))
	}
	p.StateChanged = ""
	if len(te.Body) > 0 {
		p.UpstreamMessage = UpstreamMessage(te.Header, te.Body)
	}
	if p.Retryable && te.RetryAfter > 0 {
		p.SetRetryAfter(WaitSeconds(te.RetryAfter))
	}
	if !te.RememberedUntil.IsZero() {
		ago := max(int(te.now.Sub(te.RememberedAt)/time.Second), 0)
		p.Detail += fmt.Sprintf(" airlock answered from memory: the token request failed %d s ago, and airlock asks the authorization server again only after %s.",
			ago, te.RememberedUntil.UTC().Format(time.RFC3339))
		p.RememberedUntil = te.RememberedUntil.UTC().Format(time.RFC3339)
		if p.Retryable {
			p.SetRetryAfter(max(int((te.RememberedUntil.Sub(te.now)+time.Second-1)/time.Second), 1))
		}
	}
	return p
}
