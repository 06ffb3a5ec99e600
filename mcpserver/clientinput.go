package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/internal/jsonrpc"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// A tool that needs the user (an approval) returns an input request: the
// multi round-trip form of protocol 2026-07-28, which a client of that
// protocol answers by calling again. A client of an earlier protocol is
// asked with that protocol's elicitation/create instead, by airlock itself
// (never by mcp-go's bridge, whose failures surface as JSON-RPC errors):
// through the session on stdio and streamable HTTP, through sseBridge on
// the SSE transport. When asking fails, the call answers
// CLIENT_APPROVAL_UNAVAILABLE, a problem result like any policy outcome.
//
// Such a client's answer must reach the replica that asked, which holds
// its session: behind a balancer that does not route by Mcp-Session-Id it
// may reach another. With a store the replicas share (HTTPOptions.Store),
// the replica that receives an answer for a session it does not hold
// records it there (strayAnswers), and the call waiting on the replica that
// asked notices it at its next look (every DefaultStrayPoll) and ends with
// ELICITATION_ANSWER_MISROUTED, which names sticky routing, instead of
// waiting for an answer that cannot come.

// approvalWait bounds how long a call waits for the user's answer: as long
// as the request it answers stays valid.
const approvalWait = 10 * time.Minute

// maxInputRounds bounds how many times one call may ask the client.
const maxInputRounds = 4

// errNoElicitation means the session has no way to send elicitation/create.
var errNoElicitation = errors.New("this session cannot carry an elicitation request")

// errAnsweredElsewhere means the client's answer reached another replica.
var errAnsweredElsewhere = errors.New("the client's answer reached another replica, which does not hold its session")

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

// askClient sends an input request to a client of an earlier protocol, as
// elicitation/create, and returns its answer.
func askClient(ctx context.Context, ask *tools.InputRequest) (*tools.InputAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, approvalWait)
	defer cancel()
	if w := strayWatchFrom(ctx); w != nil {
		if session := server.ClientSessionFromContext(ctx); session != nil && session.SessionID() != "" {
			var stop func()
			ctx, stop = w.watch(ctx, session.SessionID())
			defer stop()
		}
	}
	res, err := elicit(ctx, elicitation(ask))
	if errors.Is(context.Cause(ctx), errAnsweredElsewhere) {
		return nil, fmt.Errorf("input request %q: %w", ask.Key, errAnsweredElsewhere)
	}
	if err != nil {
		return nil, fmt.Errorf("input request %q: %w", ask.Key, err)
	}
	content, _ := res.Content.(map[string]any)
	return &tools.InputAnswer{State: ask.State, Key: ask.Key, Action: string(res.Action), Content: content}, nil
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
	Result json.RawMessage
	Error  *sseError
}

type sseError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
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
// protocol are declined, everything else goes to mcp-go. It reads the
// message httpserve's peek read (httpserve.Messages).
func (b *sseBridge) messages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := r.URL.Query().Get("sessionId")
		msgs := httpserve.Messages(r.Context())
		if r.Method != http.MethodPost || session == "" || len(msgs) != 1 {
			next.ServeHTTP(w, r)
			return
		}
		msg := &msgs[0]
		switch {
		case msg.IsResponse():
			if b.deliver(session, msg) {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		case msg.Method != "" && (mcp.IsModernProtocol(msg.Params.Meta.ProtocolVersion) || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))):
			if b.decline(session, msg.ID, msg.Params.Meta.ProtocolVersion, msg.HasID()) {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (b *sseBridge) deliver(session string, msg *jsonrpc.Message) bool {
	var s string
	if json.Unmarshal(msg.ID, &s) != nil {
		return false
	}
	ans := sseAnswer{Result: msg.Result}
	if msg.Error != nil {
		ans.Error = &sseError{}
		if json.Unmarshal(msg.Error, ans.Error) != nil {
			ans.Error.Code = mcp.INTERNAL_ERROR
		}
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

// DefaultStrayPoll is how often a call waiting for a client's answer to
// elicitation/create looks in the store for a sign that the answer reached
// another replica.
const DefaultStrayPoll = time.Second

// strayPrefix keys the answers that reached a replica that did not ask:
// elicitation-stray/SESSION/ID, valued with the time they arrived.
const strayPrefix = "elicitation-stray/"

// maxStraySweep bounds the stale records one arrival looks at;
// maxStraySession the session ids recorded (mcp-go's are 48 bytes).
const (
	maxStraySweep   = 200
	maxStraySession = 128
)

func straySessionKey(session string) string { return strayPrefix + session }

// strayWatch records answers that reached the wrong replica, and lets a
// waiting call notice them. It travels in the request's context.
type strayWatch struct {
	store  selection.Store
	clock  upstream.Clock
	poll   time.Duration
	logger *slog.Logger
}

type strayWatchKey struct{}

func strayWatchFrom(ctx context.Context) *strayWatch {
	w, _ := ctx.Value(strayWatchKey{}).(*strayWatch)
	return w
}

// watch returns ctx cancelled, with cause errAnsweredElsewhere, once an
// answer for session is recorded by another replica; the records left by
// an earlier call of the session are dropped first. stop ends the watch.
func (w *strayWatch) watch(ctx context.Context, session string) (context.Context, func()) {
	key := straySessionKey(session)
	if err := w.store.DeleteMeta(ctx, key); err != nil {
		w.logger.Warn("could not clear the stray answers of a session", "err", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	// The ticker exists before the request is sent: no look is missed.
	tick := w.clock.NewTicker(w.poll)
	done := make(chan struct{})
	go func() {
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C():
				keys, err := w.store.MetaKeys(ctx, key+"/", key+"0", 1)
				if err != nil || len(keys) == 0 {
					continue
				}
				_ = w.store.DeleteMeta(context.WithoutCancel(ctx), key)
				w.logger.Warn("the client's answer to an approval request reached another replica: route clients of protocol versions before 2026-07-28 by Mcp-Session-Id (sticky sessions)")
				cancel(errAnsweredElsewhere)
				return
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			cancel(nil)
		})
	}
}

// strayAnswers wraps the streamable HTTP endpoint: requests carry the
// watch, and a client's answer to a server request (a JSON-RPC response)
// that this replica cannot deliver because it holds no such session is
// recorded in the store, where the replica that asked finds it, and is
// answered 404 with words that name the cause. It reads the message
// httpserve's peek read (httpserve.Messages).
func (w *strayWatch) strayAnswers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), strayWatchKey{}, w))
		session := r.Header.Get(httpserve.SessionHeader)
		msgs := httpserve.Messages(r.Context())
		if r.Method != http.MethodPost || session == "" || len(session) > maxStraySession || len(msgs) != 1 || !msgs[0].IsResponse() {
			next.ServeHTTP(rw, r)
			return
		}
		var id int64
		if json.Unmarshal(msgs[0].ID, &id) != nil {
			next.ServeHTTP(rw, r)
			return
		}
		rec := &responseRecorder{header: http.Header{}}
		next.ServeHTTP(rec, r)
		if rec.status != http.StatusNotFound {
			rec.copyTo(rw)
			return
		}
		// This replica holds no such session: another does, and waits for
		// this answer.
		ctx := r.Context()
		now := w.clock.Now()
		if err := w.store.SetMeta(ctx, straySessionKey(session)+"/"+strconv.FormatInt(id, 10), []byte(now.UTC().Format(time.RFC3339Nano))); err != nil {
			w.logger.Error("could not record an answer that reached the wrong replica", "err", err)
		}
		w.sweep(ctx, now)
		w.logger.Warn("an answer to another replica's request reached this one: route clients of protocol versions before 2026-07-28 by Mcp-Session-Id (sticky sessions)")
		http.Error(rw, "this airlock replica holds no such session: the answer belongs to the replica that asked, which ends its call; "+
			"route clients of protocol versions before 2026-07-28 to one replica by their Mcp-Session-Id header (sticky sessions)", http.StatusNotFound)
	})
}

// sweep drops records of stray answers older than any call waits, which
// no replica will look for again (their session's call ended, or never
// existed).
func (w *strayWatch) sweep(ctx context.Context, now time.Time) {
	keys, err := w.store.MetaKeys(ctx, strayPrefix, strings.TrimSuffix(strayPrefix, "/")+"0", maxStraySweep)
	if err != nil {
		return
	}
	for _, k := range keys {
		v, err := w.store.Meta(ctx, k)
		if err != nil {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, string(v)); err != nil || now.Sub(at) > approvalWait {
			_ = w.store.DeleteMeta(ctx, k)
		}
	}
}

// responseRecorder keeps a response to pass it on, or to replace it.
type responseRecorder struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *responseRecorder) Header() http.Header { return r.header }
func (r *responseRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *responseRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *responseRecorder) Flush() {}

func (r *responseRecorder) copyTo(w http.ResponseWriter) {
	for k, vs := range r.header {
		w.Header()[k] = vs
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	_, _ = w.Write([]byte(r.body.String()))
}
