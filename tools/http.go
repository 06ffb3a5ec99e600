package tools

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

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/internal/httpguard"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// HTTPOptions configure the HTTP transports.
type HTTPOptions struct {
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
	OAuth *OAuth
	// WrapMCP, when set, wraps the streamable HTTP handler at /mcp (behind
	// the guard and the bounds): Tasks.Middleware serves the task methods.
	WrapMCP func(http.Handler) http.Handler
	// Probes are served before the guard, without a token (the health
	// probes, which reveal nothing): path to handler.
	Probes map[string]http.Handler
	// Store, when set, is the store the replicas behind this endpoint
	// share. A client's answer to airlock's elicitation/create (protocol
	// versions before 2026-07-28) that reaches a replica not holding its
	// session (a balancer that does not route by Mcp-Session-Id) is
	// recorded there, and the call waiting on the replica that asked ends
	// at its next look with ELICITATION_ANSWER_MISROUTED rather than
	// waiting for an answer that cannot come.
	Store selection.Store
	// Clock paces those looks (DefaultStrayPoll apart; the wall clock when
	// nil).
	Clock upstream.Clock
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

// NewHTTPServer returns the server for an HTTP handler, with the bounds a
// server reachable by a web page or a network needs: header and idle
// timeouts and a header size limit (the body's bounds are the handler's,
// see HTTPOptions). No write timeout: event streams stay open.
func NewHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
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

// NewHTTPHandler serves streamable HTTP at /mcp and SSE at /sse (messages at
// /message), behind the Origin, Host and token checks.
func NewHTTPHandler(srv *server.MCPServer, opts HTTPOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	stream := server.NewStreamableHTTPServer(srv, server.WithEndpointPath("/mcp"), server.WithStreamableHTTPLogger(opts.Logger))
	bridge := newSSEBridge(opts.Logger)
	sse := server.NewSSEServer(srv, server.WithSSEEndpoint("/sse"), server.WithMessageEndpoint("/message"),
		server.WithUseFullURLForMessageEndpoint(false), server.WithSSEContextFunc(bridge.context))
	bridge.sse = sse
	var mcpHandler http.Handler = stream
	if opts.Store != nil {
		clock := opts.Clock
		if clock == nil {
			clock = upstream.WallClock
		}
		w := &strayWatch{store: opts.Store, clock: clock, poll: DefaultStrayPoll, logger: opts.Logger}
		mcpHandler = w.strayAnswers(mcpHandler)
	}
	if opts.WrapMCP != nil {
		mcpHandler = opts.WrapMCP(mcpHandler)
	}
	mux.Handle("/mcp", mcpHandler)
	mux.Handle("/sse", sse)
	mux.Handle("/message", bridge.messages(sse))
	for p, h := range opts.Extra {
		mux.Handle(p, h)
	}
	if opts.OAuth != nil {
		opts.OAuth.mount(mux)
		return probes(guard(bound(scopeGate(mux, opts), opts), opts), opts.Probes)
	}
	return probes(guard(bound(mux, opts), opts), opts.Probes)
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
func bound(next http.Handler, opts HTTPOptions) http.Handler {
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
			if r.URL.Path == "/mcp" && r.Header.Get(server.HeaderKeySessionID) == "" {
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
		r.Body = io.NopCloser(body.reader())
		r.ContentLength = n
		next.ServeHTTP(w, r)
	})
}

var errBodyTooLarge = errors.New("request body over the limit")

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
func guard(next http.Handler, opts HTTPOptions) http.Handler {
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
