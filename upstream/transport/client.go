package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/redact"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"
)

// Defaults of each upstream's HTTP client, applied where the configuration
// is silent.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultRetries         = 2
	DefaultConcurrency     = 4
	DefaultMaxBodyBytes    = 16 << 20
	DefaultRequestIDHeader = "X-Request-Id"
)

// errCrossHostRedirect is returned by the redirect policy: a credential is
// never sent to another host.
var errCrossHostRedirect = errors.New("redirect to another host refused")

// DefaultMaxRetryWait is the longest Retry-After airlock sleeps through inside
// one call; a longer wait is reported (RATE_LIMITED) instead of slept.
const DefaultMaxRetryWait = 5 * time.Second

// Client talks to one upstream: credential, retries, rate limit, bounded
// concurrency and size-limited bodies. It is safe for concurrent use.
type Client struct {
	Name string
	// Verify is the upstream's default of its actions' verify.
	Verify       string
	base         *url.URL
	http         *retryablehttp.Client
	cred         *credential
	credConfig   *config.CredentialConfig
	tokenURL     string
	headers      map[string]string
	reqIDHeader  string
	maxBody      int64
	maxRetryWait time.Duration
	sem          chan struct{}
	limiter      *rate.Limiter
	logger       *slog.Logger
	clock        clock.Clock
	// queryEncoding is the upstream's query_encoding ("" is rfc3986).
	queryEncoding string

	// maxRetryAfter bounds every wait taken from the upstream
	// (max_retry_after); throttling declares which error answers besides
	// 429 are rate limits.
	maxRetryAfter time.Duration
	throttling    []config.ThrottlingConfig
	// conflicts declares the error answers besides 409 and 412 that say
	// a conditional write's condition failed.
	conflicts []config.ThrottlingConfig
	// unauthorized declares the error answers besides 401 that say the
	// credential was refused (DynamoDB's 400 InvalidSignatureException).
	unauthorized []config.ThrottlingConfig
	// jsonTypes are the media types besides JSON's own that the upstream
	// answers JSON in (json_media_types).
	jsonTypes []string
	// redactor knows every credential the runtime loaded.
	redactor *redact.Redactor

	coolMu    sync.Mutex
	coolUntil time.Time
}

// Response is a read upstream response.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte
	Attempts int
	Duration time.Duration
	// URL is the URL the answer came from (the last one, when a redirect
	// was followed): the base a relative reference in it resolves
	// against (RFC 3986, section 5.1.3). It may carry a query credential.
	URL *url.URL
	// jsonTypes are the media types besides JSON's own the upstream
	// declared its answers JSON in (config json_media_types).
	jsonTypes []string
}

// FailureKind classifies a failed exchange.
type FailureKind int

// Failure kinds.
const (
	FailStatus     FailureKind = iota + 1 // the upstream answered with an error status
	FailTimeout                           // no answer within the timeout
	FailConnection                        // refused, reset, DNS
	FailTooLarge                          // body over max_body_bytes
	FailCanceled                          // the caller's context ended
)

// HTTPError is a failed exchange. It never holds the credential.
type HTTPError struct {
	Kind       FailureKind
	Status     int
	Header     http.Header
	Body       []byte
	RetryAfter time.Duration // bounded by max_retry_after (zero: none named); for a rate limit, the wait airlock keeps
	Attempts   int
	// Sent is true when the request may have reached the upstream (it
	// matters for writes: a timeout after sending is an unknown outcome).
	Sent bool
	// Local is true when airlock answered without calling the upstream
	// (it is cooling down after a rate limit).
	Local bool
	// Throttled is true when the answer is a rate limit that is not a
	// 429: one of the upstream's throttling declarations matched it.
	Throttled bool
	// Conflict is true when the answer is a 409, a 412, or one the
	// upstream's conflicts declarations match (DynamoDB's 400
	// ConditionalCheckFailedException): a conditional write's condition
	// failed.
	Conflict bool
	// Unauthorized is set on an answer the upstream's unauthorized
	// declarations match (DynamoDB's 400 InvalidSignatureException): the
	// credential was refused, as a 401 says.
	Unauthorized bool
	// StaleToken is set on a 401 to a request sent with an OAuth access
	// token: the token was dropped and the next request gets a new one.
	// Renewed says the request was repeated with a token obtained just
	// then, and that one was refused too; NotRepeated that the request
	// was a write that repeating could apply twice, so it was not sent
	// again.
	StaleToken, Renewed, NotRepeated bool
}

func (e *HTTPError) Error() string {
	switch e.Kind {
	case FailStatus:
		return fmt.Sprintf("upstream status %d", e.Status)
	case FailTimeout:
		return "upstream timeout"
	case FailConnection:
		return "upstream connection failed"
	case FailTooLarge:
		return "upstream body over the size limit"
	default:
		return "request canceled"
	}
}

// RateLimited reports whether the failure is the upstream rate-limiting
// airlock (a 429, or an answer its throttling declarations match), or
// airlock refraining from calling it after one.
func (e *HTTPError) RateLimited() bool {
	return e.Kind == FailStatus && (e.Status == http.StatusTooManyRequests || e.Throttled)
}

// CredentialRefused reports whether the answer refuses the credential: a
// 401, or an answer the upstream's unauthorized declarations match
// (DynamoDB's 400 InvalidSignatureException). It is the one test of a
// refused credential: the problem, a write's stop, a token dropped, a
// session logged in again and the probe's verdict all follow it.
func (e *HTTPError) CredentialRefused() bool {
	return e.Kind == FailStatus && (e.Status == http.StatusUnauthorized || e.Unauthorized)
}

type ctxKey int

const reqInfoKey ctxKey = 1

// reqInfo travels in the request context so that the retry policy knows
// whether the request may be repeated, and the caller whether any attempt
// got as far as writing the request.
type reqInfo struct {
	idempotent bool
	noRedirect bool
	mu         sync.Mutex
	attempts   int
	// wait is how long to wait before the next attempt, as the retry
	// policy decided when it allowed one.
	wait time.Duration
	// wrote is set once an attempt's request headers were written to a
	// connection. Before that no request the upstream could act on has
	// left airlock: a failure then (a connection never made, a context
	// cancelled while waiting for one) is known-unsent.
	wrote bool
	// payloadHash is the SHA-256 of the request's body, which a SigV4
	// signature covers (nil for another credential).
	payloadHash []byte
	// sentCreds are the credential header values the attempts sent (see
	// sentCredentials), to redact from an error answer.
	sentCreds []string
}

// sent says whether any attempt may have reached the upstream.
func (info *reqInfo) sent() bool {
	info.mu.Lock()
	defer info.mu.Unlock()
	return info.attempts > 0 && info.wrote
}

// Options are what New needs besides the upstream's configuration. Logger,
// Getenv, Clock and Redactor must be set (package upstream's Initialize
// sets them).
type Options struct {
	Logger *slog.Logger
	// Getenv reads credentials from the environment.
	Getenv func(string) string
	// Clock drives the client-side rate limiter, cooldowns, Retry-After
	// dates, the waits between retries and the OAuth token's renewal.
	Clock clock.Clock
	// MaxRetryWait bounds how long one call sleeps through a Retry-After
	// (DefaultMaxRetryWait when zero); a longer wait is reported instead.
	MaxRetryWait time.Duration
	// WithoutCredentials builds a client that loads no credential.
	WithoutCredentials bool
	// Redactor is given the credential's secrets (New adds them; OAuth
	// access tokens, a session's cookies and captured values are added as
	// they arrive). The client redacts each error answer's body with it
	// (and with the credential headers that request sent) before keeping
	// it; a 2xx body is not redacted here: the tools redact every result,
	// log record and stored document with the same redactor.
	Redactor *redact.Redactor
	// WrapTransport, when set, wraps the HTTP transport (for metrics and
	// traces): it sees every attempt of every request, with the credential
	// in its headers, which it must never record.
	WrapTransport func(upstream string, next http.RoundTripper) http.RoundTripper
	// DialContext, when set, makes every connection to the upstream, its
	// token endpoint and its login; nil means the network.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (o Options) wrapTransport(upstream string, next http.RoundTripper) http.RoundTripper {
	if o.WrapTransport == nil {
		return next
	}
	return o.WrapTransport(upstream, next)
}

// New builds the client of the upstream named name, loading its
// credential (an error when it cannot be loaded: at start-up, not at the
// first call). cfg.BaseURL must already be expanded and checked.
func New(name string, cfg *config.UpstreamConfig, opts Options) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("base_url: %w", err)
	}
	c := &Client{
		Name: name, Verify: cfg.Verify, base: base, headers: cfg.Headers, logger: opts.Logger.With("upstream", name), clock: opts.Clock,
		reqIDHeader: cfg.RequestIDHeader, maxBody: cfg.MaxBodyBytes, maxRetryWait: DefaultMaxRetryWait,
		queryEncoding: cfg.QueryEncoding, maxRetryAfter: orDefault(cfg.MaxRetryAfter, DefaultMaxRetryAfter), throttling: throttlingRules(cfg), conflicts: append([]config.ThrottlingConfig(nil), cfg.Conflicts...), unauthorized: append([]config.ThrottlingConfig(nil), cfg.Unauthorized...), jsonTypes: cfg.JSONMediaTypes, redactor: opts.Redactor,
	}
	if c.reqIDHeader == "" {
		c.reqIDHeader = DefaultRequestIDHeader
	}
	if opts.MaxRetryWait > 0 {
		c.maxRetryWait = opts.MaxRetryWait
	}
	if c.maxBody == 0 {
		c.maxBody = DefaultMaxBodyBytes
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	c.credConfig = cfg.Credential
	if cr := cfg.Credential; cr != nil && !opts.WithoutCredentials {
		cred, err := loadCredential(cr, opts, timeout)
		if err != nil {
			return nil, err
		}
		c.cred = cred
		if cred.tokens != nil {
			c.tokenURL = cred.tokens.cfg.TokenURL
		}
	}
	conc := cfg.Concurrency
	if conc == 0 {
		conc = DefaultConcurrency
	}
	c.sem = make(chan struct{}, conc)
	if cfg.RateLimit.PerSecond > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(cfg.RateLimit.PerSecond), max(cfg.RateLimit.Burst, 1))
	}
	retries := DefaultRetries
	if cfg.Retries != nil {
		retries = *cfg.Retries
	}
	// The credential headers are named once the session is loaded (below):
	// sent is set up now and told them then.
	sent := &sentCredentials{next: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: opts.DialContext, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second, TLSClientConfig: c.tlsConfig()}}
	hc := &http.Client{
		Timeout:   timeout,
		Transport: opts.wrapTransport(name, sent),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if info, ok := req.Context().Value(reqInfoKey).(*reqInfo); ok && info.noRedirect {
				// A write never follows a redirect (it would re-send the
				// body and the credential somewhere it was not aimed at):
				// the 3xx is the answer.
				return http.ErrUseLastResponse
			}
			if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
				return errCrossHostRedirect
			}
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			return nil
		},
	}
	rc := &retryablehttp.Client{
		HTTPClient: hc,
		// It logs each attempt's whole URL: through requestLogger, without
		// the query.
		Logger:       requestLogger{c.logger},
		RetryWaitMin: orDefault(cfg.Backoff.Min, 100*time.Millisecond),
		RetryWaitMax: orDefault(cfg.Backoff.Max, 2*time.Second),
		RetryMax:     retries,
		CheckRetry:   c.checkRetry,
		// retryablehttp would sleep between attempts on a wall-clock
		// timer: its own wait is nothing, and the wait is taken on the
		// client's clock in PrepareRetry, which has the request's
		// context.
		Backoff:      func(time.Duration, time.Duration, int, *http.Response) time.Duration { return 0 },
		PrepareRetry: c.waitBeforeRetry,
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
		RequestLogHook: func(_ retryablehttp.Logger, r *http.Request, _ int) {
			if info, ok := r.Context().Value(reqInfoKey).(*reqInfo); ok {
				info.mu.Lock()
				info.attempts++
				info.mu.Unlock()
			}
		},
	}
	c.http = rc
	if c.cred != nil && cfg.Credential.Session != nil {
		sess, secrets, err := loadSession(cfg.Credential.Session, base, opts, timeout, hc.Transport, c.maxBody)
		if err != nil {
			return nil, err
		}
		c.cred.session, hc.Jar = sess, sess.jar
		c.cred.secrets = append(c.cred.secrets, secrets...)
	}
	if c.cred != nil {
		opts.Redactor.Add(c.cred.secrets...)
	}
	sent.names = credentialHeaders(c.cred)
	return c, nil
}

// Attempt is the attempt number (1 for the first) of the upstream request
// whose context ctx is, as a transport sees it (Options.WrapTransport); 0
// outside one.
func Attempt(ctx context.Context) int {
	info, ok := ctx.Value(reqInfoKey).(*reqInfo)
	if !ok {
		return 0
	}
	info.mu.Lock()
	defer info.mu.Unlock()
	return info.attempts
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Host is the upstream's host, for scope and approval screens.
func (c *Client) Host() string { return c.base.Host }

// ResolveURL joins a path and query with the base URL. The path is in its
// escaped form (a rendered template escapes each value once); it is not
// escaped again. The query is encoded as the upstream's query_encoding
// says (RFC 3986 by default: a space is %20).
func (c *Client) ResolveURL(base *url.URL, path string, q url.Values) *url.URL {
	if base == nil {
		base = c.base
	}
	u := *base
	raw := strings.TrimRight(base.EscapedPath(), "/") + path
	if p, err := url.PathUnescape(raw); err == nil {
		u.Path, u.RawPath = p, raw
	} else {
		u.Path, u.RawPath = raw, ""
	}
	u.RawQuery = EncodeQuery(q, FormQuery("", c.queryEncoding))
	return &u
}

// WithoutCredential removes a query credential from a URL the upstream
// handed back (a next link built from the request's own URL), so that it
// is never kept, stored or returned; Do sends it again.
func (c *Client) WithoutCredential(u *url.URL) *url.URL { return c.cred.stripCredential(u) }

// tlsConfig is the transport's TLS configuration: the client certificate,
// when the credential has one (nil otherwise: the defaults).
func (c *Client) tlsConfig() *tls.Config {
	if c.cred == nil {
		return nil
	}
	return c.cred.tls
}

// SameOrigin reports whether u may receive the credential.
func (c *Client) SameOrigin(base, u *url.URL) bool {
	if base == nil {
		base = c.base
	}
	return u.Scheme == base.Scheme && u.Host == base.Host
}

// Request is one outbound request.
type Request struct {
	Method string
	URL    *url.URL
	Body   []byte
	// Header is the request's own headers: each replaces the upstream's
	// configured header of the same name, never goes beside it.
	Header    http.Header
	RequestID string
	// Idempotent allows retries inside the client. Reads are idempotent;
	// writes never are here: the commit engine retries them itself,
	// journaling every attempt.
	Idempotent bool
	// NoRedirect returns a 3xx as the answer instead of following it.
	NoRedirect bool
	// Repeatable says a write cannot apply twice when repeated (it carries
	// an idempotency key or a condition): after a 401 that renewed the
	// access token it is sent once more. Reads are always repeated then.
	Repeatable bool
}

// Do sends the request with retries, the rate limit and the concurrency
// bound, and reads the body up to the size limit. A non-2xx status is
// returned as *HTTPError with the body kept for the problem builder; a
// failure to obtain an OAuth access token as *TokenError, and then nothing
// was sent.
//
// A 401 to a request sent with an access token drops the token; a read, or
// a write that is Repeatable, is then sent once more with a new one
// (concurrent requests refused with the same token share one renewal). Any
// other write is not sent again: its 401 is the answer.
func (c *Client) Do(ctx context.Context, r Request) (*Response, error) {
	resp, used, err := c.do(ctx, r)
	err = c.sessionEnded(used, resp, err)
	var he *HTTPError
	if used == "" || !errors.As(err, &he) || !c.authRefused(he) {
		return resp, err
	}
	c.cred.refused(used)
	he.StaleToken = true
	if !r.Idempotent && !r.Repeatable {
		he.NotRepeated = true
		c.logger.Debug("the access token was refused; the write is not sent again", "request_id", r.RequestID, "method", r.Method, "path", r.URL.Path)
		return resp, err
	}
	c.logger.Debug("the access token was refused; renewing it and sending the request once more", "request_id", r.RequestID, "method", r.Method, "path", r.URL.Path)
	first := he.Attempts
	resp, used, err = c.do(ctx, r)
	err = c.sessionEnded(used, resp, err)
	if resp != nil {
		resp.Attempts += first
	}
	if errors.As(err, &he) {
		he.Attempts += first
		if c.authRefused(he) {
			he.StaleToken, he.Renewed = true, true
		}
	}
	return resp, err
}

// do is one exchange (with the client's own retries). It returns the
// access token it sent ("" for another credential).
func (c *Client) do(ctx context.Context, r Request) (*Response, string, error) {
	var used string
	resp, err := c.exchange(ctx, r, &used)
	return resp, used, err
}

func (c *Client) exchange(ctx context.Context, r Request, used *string) (*Response, error) {
	if c.cred != nil && c.cred.session != nil {
		// Logged in, and a write given its CSRF token, before anything
		// else: a failed login sends nothing.
		var err error
		if r, _, err = c.cred.session.prepare(ctx, r); err != nil {
			if ctx.Err() != nil {
				return nil, &HTTPError{Kind: FailCanceled}
			}
			return nil, err
		}
	}
	if wait := c.CoolingDown(); wait > 0 {
		return nil, &HTTPError{Kind: FailStatus, Status: http.StatusTooManyRequests, RetryAfter: wait, Local: true}
	}
	if c.limiter != nil {
		if err := c.waitLimit(ctx); err != nil {
			return nil, &HTTPError{Kind: FailCanceled}
		}
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, &HTTPError{Kind: FailCanceled}
	}
	defer func() { <-c.sem }()

	info := &reqInfo{idempotent: r.Idempotent, noRedirect: r.NoRedirect}
	if c.cred != nil && c.cred.sigv4 != nil {
		info.payloadHash = payloadHash(r.Body)
	}
	ctx = context.WithValue(ctx, reqInfoKey, info)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() {
		info.mu.Lock()
		info.wrote = true
		info.mu.Unlock()
	}})
	var body any
	if r.Body != nil {
		body = r.Body
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, r.Method, r.URL.String(), body)
	if err != nil {
		// A URL that does not parse is quoted in the error: not its query.
		return nil, fmt.Errorf("build request: %w", withoutQueryError(err))
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	// A request's own header replaces the upstream's of the same name
	// (an action's X-Amz-Target names its operation): sent beside it, an
	// API reads either, or refuses both.
	for k, vs := range r.Header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if r.Body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.RequestID != "" {
		req.Header.Set(c.reqIDHeader, r.RequestID)
	}
	if c.cred != nil {
		tok, err := c.cred.apply(ctx, req.Request)
		if err != nil {
			if ctx.Err() != nil {
				return nil, &HTTPError{Kind: FailCanceled}
			}
			return nil, err
		}
		*used = tok
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	info.mu.Lock()
	attempts := info.attempts
	info.mu.Unlock()
	dur := time.Since(start)
	if errors.Is(err, errCrossHostRedirect) {
		// net/http returns the 3xx (its body closed) with the error: the
		// request reached the upstream, which answered with a redirect
		// airlock refuses to follow with the credential.
		if resp != nil {
			resp.Body.Close()
		}
		return nil, &BodyError{Kind: BodyMalformed, Detail: "the upstream redirected to another host; the redirect was not followed"}
	}
	if err != nil && resp != nil {
		resp.Body.Close()
		resp = nil
	}
	if err != nil {
		kind := classify(ctx, err)
		c.logger.Debug("upstream request failed", "request_id", r.RequestID, "method", r.Method, "path", r.URL.Path, "attempts", attempts, "kind", int(kind))
		return nil, &HTTPError{Kind: kind, Attempts: attempts, Sent: info.sent()}
	}
	defer resp.Body.Close()
	b, rerr := readBody(resp, c.maxBody)
	if rerr != nil {
		return nil, &HTTPError{Kind: classify(ctx, rerr), Status: resp.StatusCode, Attempts: attempts, Sent: true}
	}
	if int64(len(b)) > c.maxBody {
		return nil, &HTTPError{Kind: FailTooLarge, Status: resp.StatusCode, Header: resp.Header, Attempts: attempts, Sent: true}
	}
	c.logger.Debug("upstream request", "request_id", r.RequestID, "method", r.Method, "path", r.URL.Path, "status", resp.StatusCode, "attempts", attempts, "ms", dur.Milliseconds())
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b, Attempts: attempts, Duration: dur, URL: r.URL, jsonTypes: c.jsonTypes}
	if resp.Request != nil && resp.Request.URL != nil {
		out.URL = resp.Request.URL
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// An error answer is quoted (upstream_message) cut to a few
		// hundred characters: a credential it echoes is removed first,
		// while it is whole, or a long token cut in two would leave its
		// first part in the quote.
		// The credential headers this request's attempts sent are removed
		// too: a SigV4 signature, which no stored secret matches, is
		// quoted by an upstream that says why it refused it.
		b = redactSent(c.redactor.Bytes(b), info)
		out.Body = b
		he := &HTTPError{Kind: FailStatus, Status: resp.StatusCode, Header: resp.Header, Body: b,
			RetryAfter: c.retryAfter(resp.Header), Attempts: attempts, Sent: true}
		if c.throttled(he.Status, b) {
			// What the agent is told to wait is what airlock keeps.
			he.Throttled = he.Status != http.StatusTooManyRequests
			he.RetryAfter = c.coolDown(he.RetryAfter)
		}
		he.Conflict = he.Status == http.StatusConflict || he.Status == http.StatusPreconditionFailed || answerMatches(c.conflicts, he.Status, b)
		he.Unauthorized = answerMatches(c.unauthorized, he.Status, b)
		return out, he
	}
	return out, nil
}

// readBody reads a response body up to limit+1 bytes (one more tells a
// body over the limit). A body that declares its length is read into one
// buffer of that size: reading a page costs its bytes once, not the
// copies of a growing buffer.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	r := io.LimitReader(resp.Body, limit+1)
	if n := resp.ContentLength; n >= 0 && n <= limit {
		buf := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
		_, err := buf.ReadFrom(r)
		return buf.Bytes(), err
	}
	return io.ReadAll(r)
}

// coolDown stops calls to this upstream for the wait it asked for (5 s
// when it named none, never more than max_retry_after): until then Do
// answers locally. It returns the wait it keeps from now (a longer one
// set before stands).
func (c *Client) coolDown(wait time.Duration) time.Duration {
	if wait <= 0 {
		wait = defaultRateLimitWait
	}
	now := c.clock.Now()
	until := now.Add(min(wait, c.maxRetryAfter))
	c.coolMu.Lock()
	defer c.coolMu.Unlock()
	if until.After(c.coolUntil) {
		c.coolUntil = until
	}
	return c.coolUntil.Sub(now)
}

// CoolingDown returns how long airlock still refrains from calling this
// upstream after a rate limit (zero when it may call).
func (c *Client) CoolingDown() time.Duration {
	c.coolMu.Lock()
	defer c.coolMu.Unlock()
	if d := c.coolUntil.Sub(c.clock.Now()); d > 0 {
		return d
	}
	return 0
}

func classify(ctx context.Context, err error) FailureKind {
	if ctx.Err() != nil {
		return FailCanceled
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return FailTimeout
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return FailTimeout
	}
	return FailConnection
}

// checkRetry is airlock's retry policy: only idempotent requests are
// retried; 429/503 only when the upstream's wait fits the caller's deadline
// and airlock's own bound; other 5xx and connection failures with backoff.
// When it allows a retry, it sets the wait before it (waitBeforeRetry).
func (c *Client) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	retry, cerr := c.retryPolicy(ctx, resp, err)
	if info, ok := ctx.Value(reqInfoKey).(*reqInfo); ok && retry {
		info.mu.Lock()
		info.wait = c.backoff(c.http.RetryWaitMin, c.http.RetryWaitMax, info.attempts-1, resp)
		info.mu.Unlock()
	}
	return retry, cerr
}

func (c *Client) retryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	info, _ := ctx.Value(reqInfoKey).(*reqInfo)
	if info == nil || !info.idempotent {
		return false, nil
	}
	remaining, ok := clock.UntilDeadline(ctx)
	if !ok {
		remaining = time.Duration(math.MaxInt64)
	}
	if err != nil {
		if errors.Is(err, errCrossHostRedirect) {
			return false, nil
		}
		return remaining > c.http.RetryWaitMax, nil
	}
	status := resp.StatusCode
	if c.declaresThrottling(status) && c.throttled(status, c.peekBody(resp)) {
		status = http.StatusTooManyRequests
	}
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		wait := c.retryAfter(resp.Header)
		if wait == 0 {
			wait = c.http.RetryWaitMax
		}
		return wait <= c.maxRetryWait && wait < remaining, nil
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return remaining > c.http.RetryWaitMax, nil
	}
	return false, nil
}

// backoff is the wait before the attempt after attempt (from 0): what the
// upstream asked for (bounded), else retryablehttp's exponential backoff.
func (c *Client) backoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if d := c.retryAfter(resp.Header); d > 0 {
			return d
		}
	}
	return retryablehttp.DefaultBackoff(minWait, maxWait, attempt, nil)
}

// waitBeforeRetry waits, on the client's clock, the wait checkRetry set
// before the next attempt; a caller that goes away ends the wait, and the
// request, with its context's error.
func (c *Client) waitBeforeRetry(req *http.Request) error {
	info, ok := req.Context().Value(reqInfoKey).(*reqInfo)
	if !ok {
		return nil
	}
	info.mu.Lock()
	wait := info.wait
	info.mu.Unlock()
	c.logger.Debug("waiting before the next attempt", "ms", wait.Milliseconds())
	if !clock.Sleep(c.clock, wait, req.Context().Done()) {
		return req.Context().Err()
	}
	if c.cred != nil && c.cred.sigv4 != nil {
		// Signed again at this attempt's time: a signature is valid for
		// minutes, and the wait may have been longer.
		return c.cred.sigv4.sign(req, info.payloadHash)
	}
	return nil
}

// waitLimit waits for the client-side rate limit (a token bucket) on the
// injected clock; a cancelled wait gives its token back.
func (c *Client) waitLimit(ctx context.Context) error {
	now := c.clock.Now()
	r := c.limiter.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		r.CancelAt(c.clock.Now())
		return ctx.Err()
	}
}
