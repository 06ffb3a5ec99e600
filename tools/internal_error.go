package tools

import (
	"context"
	"errors"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
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
//
// A store that is unavailable (its database restarting or unreachable) is
// no bug: the caller reads STORE_UNAVAILABLE, retryable after a wait.
func (d *Deps) internalProblem(ctx context.Context, what string, err error) *envelope.Problem {
	if selection.Unavailable(err) {
		info, _ := ctx.Value(callKey{}).(callInfo)
		d.Logger.WarnContext(ctx, "the store is unavailable", "tool", info.tool, "request_id", info.requestID, "what", what, "err", err)
		p := envelope.NewProblem(envelope.ProblemStoreUnavailable, "")
		p.SetRetryAfter(storeRetryAfter)
		return p.WithRequest(info.requestID)
	}
	return envelope.NewProblem(envelope.ProblemInternal, "").WithRequest(d.logInternal(ctx, what, err))
}

// storeRetryAfter is the wait STORE_UNAVAILABLE asks for, in seconds.
const storeRetryAfter = 5

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

// ProblemOf renders an error of the domain as the problem a caller reads: a
// selection.Error as its code, detail, state and reasons; an upstream's
// failure as the scan that met it says it; anything else as
// INTERNAL_ERROR, which tells nothing of the cause.
func ProblemOf(err error) *envelope.Problem {
	var de *selection.Error
	var se *upstream.ScanError
	switch {
	case errors.As(err, &de):
		p := envelope.NewProblem(de.Code, de.Detail)
		p.StateChanged = de.StateChanged
		if len(de.Errors) > 0 {
			p.SetErrors(de.Errors)
		}
		return p
	case errors.As(err, &se):
		return se.Problem
	}
	return envelope.NewProblem(envelope.ProblemInternal, "")
}
