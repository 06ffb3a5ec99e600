package mcpserver

import (
	"log/slog"
	"net/http"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// HTTPOptions configure NewHTTPHandler: the HTTP guard and bounds
// (httpserve.Options), and the store the replicas share.
type HTTPOptions struct {
	httpserve.Options
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

// NewHTTPHandler serves s as streamable HTTP at /mcp, with the task
// service in front of it, and as SSE at /sse (messages at /message), with
// the bridge that carries airlock's requests to SSE clients; behind
// httpserve's guard, bounds, peek and scope gate.
func NewHTTPHandler(s *Server, opts HTTPOptions) http.Handler {
	return handler(s.mcp, s.tasks, opts)
}

func handler(srv *server.MCPServer, t *tasks, opts HTTPOptions) http.Handler {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	stream := server.NewStreamableHTTPServer(srv, server.WithEndpointPath("/mcp"), server.WithStreamableHTTPLogger(logger))
	bridge := newSSEBridge(logger)
	sse := server.NewSSEServer(srv, server.WithSSEEndpoint("/sse"), server.WithMessageEndpoint("/message"),
		server.WithUseFullURLForMessageEndpoint(false), server.WithSSEContextFunc(bridge.context))
	bridge.sse = sse
	var mcpHandler http.Handler = stream
	if opts.Store != nil {
		clock := opts.Clock
		if clock == nil {
			clock = upstream.WallClock
		}
		w := &strayWatch{store: opts.Store, clock: clock, poll: DefaultStrayPoll, logger: logger}
		mcpHandler = w.strayAnswers(mcpHandler)
	}
	if t != nil {
		mcpHandler = t.http(mcpHandler)
	}
	return httpserve.Handler(map[string]http.Handler{"/mcp": mcpHandler, "/sse": sse, "/message": bridge.messages(sse)}, opts.Options)
}

// http serves the task service in front of the streamable HTTP endpoint:
// the request's message, as httpserve's peek read it, is the service's or
// goes on to next.
func (t *tasks) http(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msgs := httpserve.Messages(r.Context())
		if r.Method != http.MethodPost || len(msgs) != 1 {
			next.ServeHTTP(w, r)
			return
		}
		resp, status, ok := t.serve(r.Context(), &msgs[0], httpserve.PrincipalFrom(r.Context()))
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(append(resp, '\n'))
	})
}
