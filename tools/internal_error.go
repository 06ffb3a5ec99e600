package tools

import (
	"context"

	"github.com/airlock-mcp/airlock/envelope"
)

// callKey carries a tool call's name and request id in its context, for
// what logs on the call's behalf.
type callKey struct{}

type callInfo struct{ tool, requestID string }

func withCall(ctx context.Context, tool, requestID string) context.Context {
	return context.WithValue(ctx, callKey{}, callInfo{tool: tool, requestID: requestID})
}

// internalProblem answers a failure inside airlock (the store, a signing
// key): the caller reads INTERNAL_ERROR and the request id, nothing of the
// cause, and the log holds the cause under that request id and the tool's
// name. what says what failed ("read the selection").
func (d *Deps) internalProblem(ctx context.Context, what string, err error) *envelope.Problem {
	return envelope.NewProblem(envelope.ProblemInternal, "").WithRequest(d.logInternal(ctx, what, err))
}

// internalError is internalProblem's envelope.
func (d *Deps) internalError(ctx context.Context, what string, err error) *envelope.Envelope {
	return envelope.ErrorEnvelope(d.internalProblem(ctx, what, err))
}

// logInternal logs the cause of an internal failure with the call's tool
// and request id, and returns the request id.
func (d *Deps) logInternal(ctx context.Context, what string, err error) string {
	info, _ := ctx.Value(callKey{}).(callInfo)
	d.Logger.ErrorContext(ctx, "internal error", "tool", info.tool, "request_id", info.requestID, "what", what, "err", err)
	return info.requestID
}
