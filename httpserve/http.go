// Package httpserve is what stands between the network and airlock's MCP
// endpoints: body and stream limits, the Origin, Host and bearer-token
// guard, the scope gate of an OAuth resource server, the health probes,
// and one JSON-RPC peek that reads each request body once for everything
// in front of the MCP server. It imports no MCP SDK and no token library:
// the MCP endpoints are handlers it is given (package mcpserver), and the
// resource server is a token verifier it is given (package oauth).
package httpserve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/internal/httpguard"
)

// Options configure the HTTP transports.
type Options struct {
	// Token, when set, is required as "Authorization: Bearer <token>".
	// airlock requires one whenever it binds a non-loopback address.
	Token string
	// AllowedOrigins are browser origins (scheme://host:port) allowed
	// besides loopback ones.
	AllowedOrigins []string
	Logger         *slog.Logger
	// Extra mounts more handlers (such as the review page) on the mux.
	Extra map[string]http.Handler
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes when zero):
	// a larger one is answered 413 before anything reads it.
	MaxBodyBytes int64
	// BodyTimeout bounds the time a request body may take to arrive
	// (DefaultBodyTimeout when zero): a trickling client is cut off.
	BodyTimeout time.Duration
	// MaxStreams bounds the event streams open at once (GET /sse, GET
	// /mcp of a session): DefaultMaxStreams when zero; past it, 503.
	MaxStreams int
	// OAuth, when set, makes the transports an OAuth resource server:
	// requests carry an access token of its issuer (or Token, when both
	// are set), and its protected-resource metadata is served.
	OAuth ResourceServer
	// Probes are served before the guard, without a token (the health
	// probes, which reveal nothing): path to handler.
	Probes map[string]http.Handler
}

// Defaults of the HTTP transport's bounds.
const (
	DefaultMaxBodyBytes = 4 << 20
	DefaultBodyTimeout  = 10 * time.Second
	DefaultMaxStreams   = 64
	// DefaultHeaderTimeout bounds the time request headers may take;
	// DefaultIdleTimeout how long an idle keep-alive connection is kept.
	DefaultHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout   = 120 * time.Second
	// maxHeaderBytes bounds request headers.
	maxHeaderBytes = 64 << 10
)

// NewServer returns the server for an HTTP handler, with the bounds a
// server reachable by a web page or a network needs: header and idle
// timeouts and a header size limit (the body's bounds are the handler's,
// see Options). No write timeout: event streams stay open.
func NewServer(h http.Handler, logger *slog.Logger) *http.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: DefaultHeaderTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
}

// SessionHeader is the header of a streamable HTTP session's id.
const SessionHeader = "Mcp-Session-Id"

// Handler serves routes (the MCP endpoints, by path), the Extra handlers
// and, with OAuth, the protected-resource metadata, behind the probes, the
// Origin, Host and token checks, the body and stream bounds, the JSON-RPC
// peek (see Messages) and, with OAuth, the scope gate.
func Handler(routes map[string]http.Handler, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	for p, h := range routes {
		mux.Handle(p, h)
	}
	for p, h := range opts.Extra {
		mux.Handle(p, h)
	}
	var h http.Handler = mux
	if opts.OAuth != nil {
		for p, m := range opts.OAuth.Metadata() {
			mux.Handle(p, m)
		}
		h = scopeGate(h, opts)
	}
	return probes(guard(bound(peek(h), opts), opts), opts.Probes)
}

// probes answers the health probes' paths before anything else.
func probes(next http.Handler, ps map[string]http.Handler) http.Handler {
	if len(ps) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := ps[r.URL.Path]; ok && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bound enforces the transport's limits before any handler (mcp-go's reads
// a whole body into memory) sees the request: the body's size and the time
// it takes to arrive, the number of open event streams, and no stream
// without a session.
func bound(next http.Handler, opts Options) http.Handler {
	maxBody := opts.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	bodyTimeout := opts.BodyTimeout
	if bodyTimeout <= 0 {
		bodyTimeout = DefaultBodyTimeout
	}
	maxStreams := opts.MaxStreams
	if maxStreams <= 0 {
		maxStreams = DefaultMaxStreams
	}
	streams := make(chan struct{}, maxStreams)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Method == http.MethodGet && (r.URL.Path == "/mcp" || r.URL.Path == "/sse") {
			if r.URL.Path == "/mcp" && r.Header.Get(SessionHeader) == "" {
				// mcp-go would open a stream for a session it makes up. 405
				// is how the protocol says "no stream here" (clients go on
				// without one).
				w.Header().Set("Allow", "POST, DELETE")
				http.Error(w, "a GET stream needs the Mcp-Session-Id of an initialized session", http.StatusMethodNotAllowed)
				return
			}
			select {
			case streams <- struct{}{}:
				defer func() { <-streams }()
			default:
				opts.Logger.Warn("refused an event stream: too many open", "max", maxStreams)
				w.Header().Set("Retry-After", "10")
				http.Error(w, "too many open event streams", http.StatusServiceUnavailable)
				return
			}
			_ = rc.SetReadDeadline(time.Time{})
			next.ServeHTTP(w, r)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > maxBody {
			tooLarge(w, maxBody)
			return
		}
		// The deadline stays on a refused request: the server's attempt
		// to drain the rest of its body ends with it.
		_ = rc.SetReadDeadline(time.Now().Add(bodyTimeout))
		body, n, err := readBody(r.Body, maxBody)
		defer body.release()
		switch {
		case errors.Is(err, errBodyTooLarge):
			tooLarge(w, maxBody)
			return
		case err != nil:
			w.Header().Set("Connection", "close")
			http.Error(w, "the request body could not be read in time", http.StatusRequestTimeout)
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = &boundBody{Reader: body.reader(), blocks: body}
		r.ContentLength = n
		next.ServeHTTP(w, r)
	})
}

var errBodyTooLarge = errors.New("request body over the limit")

// boundBody is a request body bound read whole into pooled blocks: a
// reader over them, which what follows may read again from the start
// without copying (peek does, then the MCP server reads the body).
type boundBody struct {
	io.Reader
	blocks *blocks
}

func (*boundBody) Close() error { return nil }

// bodyBlock is the unit request bodies are read in; blocks are reused, so
// that bodies refused one after another do not each cost new memory.
const bodyBlock = 64 << 10

var bodyBlocks = sync.Pool{New: func() any { return new([bodyBlock]byte) }}

// blocks is a body read into pooled blocks.
type blocks struct {
	bufs []*[bodyBlock]byte
	last int // bytes used in the last block
}

func (b *blocks) reader() io.Reader {
	rs := make([]io.Reader, len(b.bufs))
	for i, buf := range b.bufs {
		n := bodyBlock
		if i == len(b.bufs)-1 {
			n = b.last
		}
		rs[i] = bytes.NewReader(buf[:n])
	}
	return io.MultiReader(rs...)
}

// release returns the blocks to the pool; the body must not be read after.
func (b *blocks) release() {
	for _, buf := range b.bufs {
		bodyBlocks.Put(buf)
	}
	b.bufs = nil
}

// readBody reads a body of at most limit bytes into blocks taken as the
// bytes arrive (never by what the client announced): a body over the limit
// costs at most the limit, and one within it is handed on as it was read,
// without a copy. The caller releases the blocks when the request is done.
func readBody(body io.Reader, limit int64) (*blocks, int64, error) {
	b := &blocks{}
	var total int64
	for {
		buf := bodyBlocks.Get().(*[bodyBlock]byte)
		n, err := io.ReadFull(body, buf[:])
		total += int64(n)
		b.bufs, b.last = append(b.bufs, buf), n
		if total > limit {
			return b, 0, errBodyTooLarge
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return b, total, nil
		}
		if err != nil {
			return b, 0, err
		}
	}
}

func tooLarge(w http.ResponseWriter, limit int64) {
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("request body over the %d-byte limit", limit), http.StatusRequestEntityTooLarge)
}

// reviewPrefix is where serve --review mounts the review page (package
// review), which checks its own token.
const reviewPrefix = "/review/"

// guard rejects foreign origins (403), non-loopback Host headers on a
// loopback listener (403, DNS rebinding) and missing or refused tokens
// (401, see authenticate).
func guard(next http.Handler, opts Options) http.Handler {
	allowed := map[string]bool{}
	for _, o := range opts.AllowedOrigins {
		allowed[strings.TrimRight(strings.ToLower(o), "/")] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !allowed[strings.ToLower(origin)] && !loopbackOrigin(origin) && !sameHost(origin, r.Host) {
			opts.Logger.Warn("refused foreign origin", "path", r.URL.Path)
			http.Error(w, "forbidden origin", http.StatusForbidden)
			return
		}
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && httpguard.IsLoopback(la.String()) && !httpguard.IsLoopback(r.Host) {
			http.Error(w, "forbidden host", http.StatusForbidden)
			return
		}
		// The review page checks the token itself: a browser cannot send
		// a bearer header, so it trades ?token= for a cookie.
		if !strings.HasPrefix(r.URL.Path, reviewPrefix) {
			var ok bool
			if r, ok = authenticate(w, r, opts); !ok {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sameHost reports whether an origin is this server's own (a page it served,
// such as the review page).
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return httpguard.IsLoopback(u.Host)
}

// MetricsHandler serves metrics (a Prometheus handler) at /metrics, and
// the probes, on a listener of their own, behind the guard /mcp has: a
// foreign Origin and, on a loopback listener, a foreign Host (DNS
// rebinding) are answered 403; when opts.Token (AIRLOCK_METRICS_TOKEN) or
// opts.OAuth is set, /metrics needs it as a bearer token (401 otherwise).
// The probes answer without a token, as they do beside /mcp. Only Token,
// OAuth, AllowedOrigins, Logger and Probes of opts are read.
func MetricsHandler(metrics http.Handler, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	return probes(guard(bound(mux, Options{Logger: opts.Logger}), opts), opts.Probes)
}
