package selection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/upstream"
)

// Lease is a process's hold on a running operation. Holder names the
// process; Epoch is the fencing token, advanced by every acquisition, that
// every journal write and operation update carries; Expires is when
// another process may take the operation over unless the holder renews.
//
// Expiry is compared on the clocks of the processes involved: replicas
// on several machines need synchronized clocks (NTP), with a skew well
// under the lease's duration.
type Lease struct {
	OperationID string
	Holder      string
	Epoch       int64
	Expires     time.Time
}

// Lease errors.
var (
	// ErrLeaseHeld: another process holds a live lease on the operation.
	ErrLeaseHeld = errors.New("the operation's lease is held by another process")
	// ErrLeaseLost: another process took the operation over; the caller
	// must write nothing more for it.
	ErrLeaseLost = errors.New("the operation was taken over by another process")
)

// DefaultLeaseTTL is how long a lease lasts without renewal. The holder
// renews it every third of that; another process takes the operation over
// only once it expired.
const DefaultLeaseTTL = 30 * time.Second

// processHolder names this process in the leases it holds.
var processHolder = func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
}()

func (e *Engine) leaseTTL() time.Duration {
	if e.LeaseTTL > 0 {
		return e.LeaseTTL
	}
	return DefaultLeaseTTL
}

// storeWait bounds how long a run waits for a store that is unavailable
// before a read is given up: a third of the lease's duration, so that a
// run that cannot reach the store leaves its operation to a takeover
// before its lease runs out.
func (e *Engine) storeWait() time.Duration { return e.leaseTTL() / 3 }

// holder is the name this engine holds leases under.
func (e *Engine) holder() string {
	if e.Holder != "" {
		return e.Holder
	}
	return processHolder
}

// newLease is the lease an operation is created with: epoch 1, held by
// this engine.
func (e *Engine) newLease(opID string, now time.Time) Lease {
	return Lease{OperationID: opID, Holder: e.holder(), Epoch: 1, Expires: now.Add(e.leaseTTL())}
}

// fence is a run's hold on its operation, shared by the heartbeat that
// renews it and the journal whose writes carry it. A run stops sending
// writes once its lease is lost or, by its own clock, about to expire: a
// process paused past its lease (a stopped VM, SIGSTOP) writes nothing
// when it wakes up.
type fence struct {
	mu     sync.Mutex
	lease  Lease
	lost   bool
	clock  upstream.Clock
	margin time.Duration
}

func newFence(l Lease, clock upstream.Clock, ttl time.Duration) *fence {
	return &fence{lease: l, clock: clock, margin: ttl / 5}
}

// current is the lease as last acquired or renewed.
func (f *fence) current() Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lease
}

// holds reports whether the run may still send a write: its lease was not
// lost and is not within the safety margin of its expiry.
func (f *fence) holds() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.lost && f.clock.Now().Before(f.lease.Expires.Add(-f.margin))
}

func (f *fence) renewed(l Lease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.lost && l.Epoch == f.lease.Epoch {
		f.lease = l
	}
}

func (f *fence) lose() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost = true
}

// errLeaseExpiring is what a journal intent returns when the run's lease
// is too close to its expiry to send the write it announces.
var errLeaseExpiring = errors.New("the operation's lease is about to expire without renewal")

// heartbeat renews the run's lease every third of its duration until the
// returned function is called; that function waits for the heartbeat to
// end, so that no renewal runs after it. The heartbeat touches only the
// lease, never r.op, which execute owns. A lost lease stops the run.
func (r *run) heartbeat(ctx context.Context) func() {
	ttl := r.e.leaseTTL()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := r.e.Clock.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C():
			}
			l, err := r.e.Store.RenewLease(context.Background(), r.fence.current(), r.e.Clock.Now(), ttl)
			switch {
			case errors.Is(err, ErrLeaseLost):
				r.fence.lose()
				r.stop("another airlock process took this operation over: its lease expired before it was renewed")
				r.logger().Warn("lease lost: this process writes nothing more for the operation")
				return
			case err != nil:
				// Retried at the next tick; meanwhile the fence stops
				// writes when the lease comes close to its expiry.
				r.logger().Warn("could not renew the operation's lease", "err", err)
			default:
				r.fence.renewed(l)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(stop) })
		<-done
	}
}

// TakeOver takes over the running operations whose lease expired (their
// process stopped, crashed or lost the store) and finishes them in this
// process: each lease is taken by compare-and-set, so that of several
// processes only one takes an operation, and the targets its previous
// holder left in flight become unknown, to be reconciled by a re-read
// before anything is sent. It returns the ids of the operations it took.
func (e *Engine) TakeOver(ctx context.Context) ([]string, error) {
	now := e.Clock.Now()
	ids, err := e.Store.ExpiredOperations(ctx, now, 100)
	if err != nil {
		return nil, fmt.Errorf("expired operations: %w", err)
	}
	var taken []string
	for _, id := range ids {
		e.mu.Lock()
		_, mine := e.running[id]
		e.mu.Unlock()
		if mine {
			// Its own run finds out through its fence.
			continue
		}
		l, err := e.Store.AcquireLease(ctx, id, e.holder(), now, e.leaseTTL())
		if errors.Is(err, ErrLeaseHeld) || errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return taken, fmt.Errorf("take over %q: %w", id, err)
		}
		if err := e.continueTaken(ctx, l); err != nil {
			return taken, fmt.Errorf("take over %q: %w", id, err)
		}
		taken = append(taken, id)
		if e.Observer != nil {
			e.Observer.TookOver()
		}
	}
	return taken, nil
}

// continueTaken runs an operation whose lease this engine just took. The
// process that created it may have stopped before spending its approval
// or creating its targets: both are done again (neither repeats).
func (e *Engine) continueTaken(ctx context.Context, l Lease) error {
	op, err := e.Store.Operation(ctx, l.OperationID)
	if err != nil {
		return err
	}
	op.Lease = l
	now := e.Clock.Now()
	sel, err := e.Store.Selection(ctx, op.SelectionID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	a, ok := e.Runtime.Actions[op.Action.Type]
	if sel == nil || !ok || a.Resource == nil || a.Resource.Name != sel.Resource || a.SpecDigest != sel.ActionSpecDigest {
		op.Status, op.UpdatedAt = OpInterrupted, now
		op.StopReason = "taken over by an airlock process whose configuration does not define this action as it was previewed; resume it from one that does"
		e.logger().Warn("operation taken over but not continued: the action is not configured here as previewed", "operation_id", op.ID)
		return e.Store.UpdateOperation(ctx, op)
	}
	if op.ApprovalID != "" {
		if err := e.Store.UseApproval(ctx, op.ApprovalID, op.ID, now); err != nil {
			op.Status, op.StopReason, op.UpdatedAt, op.FinishedAt = OpStopped, "the approval could not be reserved: nothing was written", now, &now
			return e.Store.UpdateOperation(ctx, op)
		}
	}
	n, err := e.Store.InitTargets(ctx, op.ID, sel.ID)
	if err != nil {
		return err
	}
	op.Total = n
	e.logger().Warn("took over an operation whose process stopped renewing its lease", "operation_id", op.ID, "previous_epoch", l.Epoch-1)
	go e.start(op, sel, a, nil).execute()
	return nil
}

// acquireForResume takes the lease of an interrupted operation that a
// caller asked to resume.
func (e *Engine) acquireForResume(ctx context.Context, op *Operation) error {
	l, err := e.Store.AcquireLease(ctx, op.ID, e.holder(), e.Clock.Now(), e.leaseTTL())
	if err != nil {
		return err
	}
	op.Lease = l
	return nil
}

// Watch calls TakeOver at once and then every interval (by default a third
// of the lease's duration) until ctx is done. Failures are logged and
// retried at the next tick.
func (e *Engine) Watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = e.leaseTTL() / 3
	}
	t := e.Clock.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := e.TakeOver(ctx); err != nil && ctx.Err() == nil {
			e.logger().Warn("taking over operations whose lease expired", "err", err)
		}
		// Audit lines kept while the store was unavailable are written
		// as soon as it answers, also when no operation runs.
		e.FlushAudit(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (e *Engine) logger() *slog.Logger {
	if e.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Logger
}
