package selection

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// DefaultCancelPoll is how often a running operation looks in the store for
// a cancellation asked of another process.
const DefaultCancelPoll = time.Second

// cancelKey is the store's meta key that holds an operation's cancellation:
// any process may write it, and the process running the operation, whichever
// it is, reads it.
func cancelKey(opID string) string { return "operation_cancel/" + opID }

type cancellation struct {
	Who       string    `json:"who"`
	RequestID string    `json:"request_id,omitempty"`
	At        time.Time `json:"at"`
}

// Cancel asks a running operation to stop sending writes, from any process
// that shares its store. The run stops before its next write: a target
// never sent stays pending, one whose write was sent keeps the outcome its
// answer shows (unknown when none came), and the operation ends stopped.
// Cancelling an operation that is not running changes nothing. A resume
// (CommitRequest.Resume) lifts the cancellation. ErrNotFound for an
// unknown operation.
func (e *Engine) Cancel(ctx context.Context, opID, who, requestID string) (*Operation, error) {
	op, err := e.Store.Operation(ctx, opID)
	if err != nil {
		return nil, err
	}
	if op.Status != OpRunning {
		return e.Operation(ctx, opID)
	}
	now := e.Clock.Now()
	b, _ := json.Marshal(cancellation{Who: who, RequestID: requestID, At: now})
	if err := e.Store.SetMeta(ctx, cancelKey(opID), b); err != nil {
		return nil, err
	}
	e.audit(ctx, AuditEvent{At: now, Kind: AuditDecision, OperationID: op.ID, SelectionID: op.SelectionID, Digest: op.Digest,
		Actor: who, Event: "cancel", RequestID: requestID, Detail: "no more writes are sent; targets never sent stay pending"})
	e.mu.Lock()
	r := e.running[opID]
	e.mu.Unlock()
	if r != nil {
		r.stop(cancelReason)
	}
	return e.Operation(ctx, opID)
}

// cancelReason is the stop reason of a cancelled operation.
const cancelReason = "cancelled: no more writes were sent; targets never sent stay pending, and resume: true continues them"

// Cancelled reports whether an operation was asked to stop (and not
// resumed since).
func (e *Engine) Cancelled(ctx context.Context, opID string) (bool, error) {
	b, err := e.Store.Meta(ctx, cancelKey(opID))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil && len(b) > 0, err
}

// uncancel lifts an operation's cancellation (a resume).
func (e *Engine) uncancel(ctx context.Context, opID string) error {
	if c, err := e.Cancelled(ctx, opID); err != nil || !c {
		return err
	}
	return e.Store.SetMeta(ctx, cancelKey(opID), []byte{})
}

func (e *Engine) cancelPoll() time.Duration {
	if e.CancelPoll > 0 {
		return e.CancelPoll
	}
	return DefaultCancelPoll
}

// watchCancel stops the run once its operation is cancelled, looking at
// once and then every CancelPoll, until the returned function is called.
func (r *run) watchCancel(ctx context.Context) func() {
	check := func() bool {
		c, err := r.e.Cancelled(ctx, r.op.ID)
		if err != nil {
			r.logger().Warn("could not read whether the operation was cancelled", "err", err)
		}
		if c {
			r.stop(cancelReason)
		}
		return c
	}
	if check() {
		return func() {}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := r.e.Clock.NewTicker(r.e.cancelPoll())
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C():
				if check() {
					return
				}
			}
		}
	}()
	return func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
}
