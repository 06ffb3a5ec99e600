package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A tool that needs the user (an approval) returns an input request: the
// multi round-trip form of protocol 2026-07-28, which a client of that
// protocol answers by calling again. A client of an earlier protocol is
// asked with that protocol's elicitation/create instead, by airlock itself
// (never by mcp-go's bridge, whose failures surface as JSON-RPC errors):
// through the session on stdio and streamable HTTP, through sseBridge on
// the SSE transport. When asking fails, the call answers
// CLIENT_APPROVAL_UNAVAILABLE, a problem result like any policy outcome.

// approvalWait bounds how long a call waits for the user's answer: as long
// as the request it answers stays valid.
const approvalWait = 10 * time.Minute

// maxInputRounds bounds how many times one call may ask the client.
const maxInputRounds = 4

// errNoElicitation means the session has no way to send elicitation/create.
var errNoElicitation = errors.New("this session cannot carry an elicitation request")

// modernRequest reports whether the call uses protocol 2026-07-28 or later
// (input requests travel in the result).
func modernRequest(ctx context.Context) bool {
	return mcp.IsModernProtocol(server.RequestProtocolVersion(ctx))
}

// clientCanElicit reports whether the calling client can show an approval
// request: it declared the elicitation capability (per request from
// 2026-07-28, at initialization before), and, on an earlier protocol, its
// transport can carry the request.
func clientCanElicit(ctx context.Context) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	session := server.ClientSessionFromContext(ctx)
	s, ok := session.(server.SessionWithClientInfo)
	if !ok || s.GetClientCapabilities().Elicitation == nil {
		return false
	}
	if _, ok := session.(server.SessionWithElicitation); ok {
		return true
	}
	return sseBridgeFrom(ctx) != nil
}

// askClient sends each of an input request's elicitations to a client of
// an earlier protocol and returns the answers, keyed as the requests were.
func askClient(ctx context.Context, ask *mcp.CallToolResult) (mcp.InputResponses, error) {
	ctx, cancel := context.WithTimeout(ctx, approvalWait)
	defer cancel()
	out := make(mcp.InputResponses, len(ask.InputRequests))
	for id, req := range ask.InputRequests {
		if req.Method != mcp.MethodElicitationCreate || req.Elicitation == nil {
			return nil, fmt.Errorf("input request %q: method %q is not asked of clients", id, req.Method)
		}
		res, err := elicit(ctx, *req.Elicitation)
		if err != nil {
			return nil, fmt.Errorf("input request %q: %w", id, err)
		}
		out[id] = mcp.NewElicitationInputResponse(*res)
	}
	return out, nil
}

// elicit asks the user through the session's own elicitation/create, or
// the SSE bridge where the session has none.
func elicit(ctx context.Context, params mcp.ElicitationParams) (*mcp.ElicitationResult, error) {
	req := mcp.ElicitationRequest{Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)}, Params: params}
	if srv := server.ServerFromContext(ctx); srv != nil {
		res, err := srv.RequestElicitation(ctx, req)
		if !errors.Is(err, server.ErrElicitationNotSupported) {
			return res, err
		}
	}
	b := sseBridgeFrom(ctx)
	session := server.ClientSessionFromContext(ctx)
	if b == nil || session == nil {
		return nil, errNoElicitation
	}
	return b.elicit(ctx, session.SessionID(), params)
}

type sseBridgeKey struct{}

func sseBridgeFrom(ctx context.Context) *sseBridge {
	b, _ := ctx.Value(sseBridgeKey{}).(*sseBridge)
	return b
}

// sseBridge carries requests from airlock to clients of the SSE transport
// (2024-11-05), which mcp-go's SSE sessions cannot send: the request goes
// down the session's event stream, and the client's response, POSTed to
// the message endpoint, is taken out before mcp-go (which drops responses)
// sees it. It also declines the 2026-07-28 protocol on that transport,
// which the protocol defines over stdio and streamable HTTP only, with
// UnsupportedProtocolVersion naming the versions SSE serves: a client that
// can fall back to initialize does, one pinned to the new protocol reports
// a clean refusal.
type sseBridge struct {
	sse     *server.SSEServer
	logger  *slog.Logger
	next    atomic.Int64
	mu      sync.Mutex
	pending map[string]chan sseAnswer // session + "\x00" + JSON id
}

type sseAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func newSSEBridge(logger *slog.Logger) *sseBridge {
	return &sseBridge{logger: logger, pending: map[string]chan sseAnswer{}}
}

// context is the SSE server's context function: every message of an SSE
// session is handled with the bridge at hand.
func (b *sseBridge) context(ctx context.Context, _ *http.Request) context.Context {
	return context.WithValue(ctx, sseBridgeKey{}, b)
}

func (b *sseBridge) elicit(ctx context.Context, session string, params mcp.ElicitationParams) (*mcp.ElicitationResult, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	id := "airlock-" + strconv.FormatInt(b.next.Add(1), 10)
	key := session + "\x00" + strconv.Quote(id)
	ch := make(chan sseAnswer, 1)
	b.mu.Lock()
	b.pending[key] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, key)
		b.mu.Unlock()
	}()
	req := mcp.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)}, Params: params}
	if err := b.sse.SendEventToSession(session, req); err != nil {
		return nil, fmt.Errorf("send elicitation/create: %w", err)
	}
	select {
	case ans := <-ch:
		if ans.Error != nil {
			return nil, fmt.Errorf("the client answered elicitation/create with error %d", ans.Error.Code)
		}
		var res mcp.ElicitationResult
		if err := json.Unmarshal(ans.Result, &res); err != nil {
			return nil, fmt.Errorf("decode the elicitation result: %w", err)
		}
		return &res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the elicitation result: %w", ctx.Err())
	}
}

// messages wraps the SSE message endpoint: responses to airlock's requests
// are delivered to the call waiting for them, requests of the 2026-07-28
// protocol are declined, everything else goes to mcp-go. Bodies arrive
// already bounded (see bound).
func (b *sseBridge) messages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := r.URL.Query().Get("sessionId")
		if r.Method != http.MethodPost || session == "" || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "the request body could not be read", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta *mcp.Meta `json:"_meta"`
			} `json:"params"`
			sseAnswer
		}
		if json.Unmarshal(body, &msg) != nil {
			next.ServeHTTP(w, r)
			return
		}
		hasID := len(msg.ID) > 0 && string(msg.ID) != "null"
		switch {
		case msg.Method == "" && hasID && (msg.Result != nil || msg.Error != nil):
			if b.deliver(session, msg.ID, msg.sseAnswer) {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		case msg.Method != "" && (mcp.IsModernProtocol(msg.Params.Meta.ProtocolVersion()) || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))):
			if b.decline(session, msg.ID, msg.Params.Meta.ProtocolVersion(), hasID) {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (b *sseBridge) deliver(session string, id json.RawMessage, ans sseAnswer) bool {
	var s string
	if json.Unmarshal(id, &s) != nil {
		return false
	}
	b.mu.Lock()
	ch, ok := b.pending[session+"\x00"+strconv.Quote(s)]
	b.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- ans:
	default: // answered twice: the first answer stands
	}
	return true
}

// decline answers a 2026-07-28 request on the SSE transport with
// UnsupportedProtocolVersion; false when the session is unknown (mcp-go
// then says so).
func (b *sseBridge) decline(session string, id json.RawMessage, version string, hasID bool) bool {
	if !hasID {
		return true // a notification: nothing to answer
	}
	resp := mcp.UnsupportedProtocolVersionError{Version: version, Supported: mcp.LegacyProtocolVersions()}.JSONRPCError()
	resp.ID = mcp.NewRequestId(id)
	if err := b.sse.SendEventToSession(session, resp); err != nil {
		return false
	}
	b.logger.Info("declined a 2026-07-28 request on the SSE transport: that protocol is served on /mcp and stdio")
	return true
}
