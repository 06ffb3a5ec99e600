package httpserve

import (
	"context"
	"net/http"

	"github.com/airlock-mcp/airlock/internal/jsonrpc"
)

type messagesKey struct{}

// peek reads a POST's JSON-RPC message (or batch) once, as the body
// arrives bounded (see bound), and hands it to what follows in the
// request's context (Messages): the scope gate, the SSE bridge, the stray
// answer watch and the task service read it there, and only the MCP server
// reads the body again. A body that is no JSON-RPC message carries none.
func peek(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := r.Body.(*boundBody)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		msgs, err := jsonrpc.Read(body.blocks.reader())
		if err == nil {
			r = r.WithContext(context.WithValue(r.Context(), messagesKey{}, msgs))
		}
		next.ServeHTTP(w, r)
	})
}

// Messages are the JSON-RPC messages of the request whose context ctx is,
// read once by the handler Handler returns; nil when its body is none.
func Messages(ctx context.Context) []jsonrpc.Message {
	m, _ := ctx.Value(messagesKey{}).([]jsonrpc.Message)
	return m
}
