package tools

import (
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/server"
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
}

// NewHTTPHandler serves streamable HTTP at /mcp and SSE at /sse (messages at
// /message), behind the Origin, Host and token checks.
func NewHTTPHandler(srv *server.MCPServer, opts HTTPOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	stream := server.NewStreamableHTTPServer(srv, server.WithEndpointPath("/mcp"), server.WithStreamableHTTPLogger(opts.Logger))
	sse := server.NewSSEServer(srv, server.WithSSEEndpoint("/sse"), server.WithMessageEndpoint("/message"),
		server.WithUseFullURLForMessageEndpoint(false))
	mux.Handle("/mcp", stream)
	mux.Handle("/sse", sse)
	mux.Handle("/message", sse)
	for p, h := range opts.Extra {
		mux.Handle(p, h)
	}
	return guard(mux, opts)
}

// guard rejects foreign origins (403), non-loopback Host headers on a
// loopback listener (403, DNS rebinding) and missing tokens (401).
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
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && IsLoopback(la.String()) && !IsLoopback(r.Host) {
			http.Error(w, "forbidden host", http.StatusForbidden)
			return
		}
		// The review page checks the token itself: a browser cannot send
		// a bearer header, so it trades ?token= for a cookie.
		if opts.Token != "" && !strings.HasPrefix(r.URL.Path, reviewPrefix) {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(opts.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
				http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
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
	return IsLoopback(u.Host)
}

// IsLoopback reports whether a host or host:port names a loopback address.
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
