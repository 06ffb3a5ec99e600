package selection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
)

// Engine runs commits. Operations keep running in Background after the
// commit call that started them returns; get_operation reads their journal.
type Engine struct {
	Store      Store
	Runtime    *upstream.Runtime
	Clock      upstream.Clock
	Logger     *slog.Logger
	Background context.Context
	// Auditor, when set, also writes the audit trail to a JSON Lines file.
	Auditor *Auditor
	// MaxRateLimitPause bounds how long a run pauses for one Retry-After.
	MaxRateLimitPause time.Duration
	// LeaseTTL is how long a running operation's lease lasts without
	// renewal (DefaultLeaseTTL when zero); Holder names this engine in its
	// leases (by default host, process id and a random suffix).
	LeaseTTL time.Duration
	Holder   string
	// Observer, when set, is told of journal writes and takeovers (for
	// metrics).
	Observer Observer
	// CancelPoll is how often a running operation looks for a
	// cancellation asked of another process (DefaultCancelPoll when zero).
	CancelPoll time.Duration

	mu      sync.Mutex
	running map[string]*run

	// auditMu serializes audit writes; auditBacklog holds the lines the
	// store refused, written before the next ones.
	auditMu      sync.Mutex
	auditBacklog []AuditEvent
}

// CommitRequest is a validated commit_bulk_action call.
type CommitRequest struct {
	SelectionID    string
	ExpectedDigest string
	Action         Action
	Mode           string
	IdempotencyKey string
	Resume         bool
	Wait           time.Duration
	RequestID      string
	Who            string
	// Principal is who asks: recorded on the operation and its audit
	// lines, and checked against the action's principals restriction.
	Principal Principal
	// ApprovalID names the approval to use; by default the latest unused
	// approval of the selection's digest and action.
	ApprovalID string
	// Progress, when set, is told how many targets have an outcome, of
	// the operation's total: when the run starts and after every outcome,
	// possibly from several goroutines at once.
	Progress func(done, total int)
	// Selection, when set, is the selection SelectionID names, as the
	// caller read it within this call: Commit does not read it again.
	Selection *Selection
}

// CommitResult is the operation as the caller sees it.
type CommitResult struct {
	Operation *Operation
	// Replayed is true when the call returned an existing operation.
	Replayed bool
}

// Commit checks a commit against its selection and runs it. Every refusal
// is an *Error with StateChanged none (nothing was sent upstream), but a
// failure inside airlock, whose state is unknown.
func (e *Engine) Commit(ctx context.Context, req CommitRequest) (*CommitResult, error) {
	sel, err := e.selection(ctx, req.SelectionID, req.Selection)
	if errors.Is(err, ErrNotFound) || (err == nil && sel.State != StateReady) {
		return nil, problem(envelope.ProblemSelectionNotFound, "No selection with this selection_id is ready.")
	}
	if err != nil {
		return nil, e.internal("read selection", err)
	}
	if req.ExpectedDigest != sel.Digest {
		return nil, problem(envelope.ProblemDigestMismatch, "expected_digest is not the digest of this selection.")
	}
	a, ok := e.Runtime.Actions[req.Action.Type]
	actionDigest, derr := ActionDigest(req.Action)
	if !ok || a.Resource == nil || a.Resource.Name != sel.Resource || derr != nil || actionDigest != sel.ActionDigest {
		return nil, problem(envelope.ProblemActionMismatch, "The action (type and params) is not the one previewed with this selection.")
	}
	if err := MayRun(a, req.Principal); err != nil {
		return nil, err
	}
	if req.Mode == ModeExecute {
		if res, err, found := e.committed(ctx, sel, a, actionDigest, req); found {
			return res, err
		}
	}
	now := e.Clock.Now()
	if !now.Before(sel.ExpiresAt) {
		return nil, problem(envelope.ProblemSelectionExpired, "The selection expired at "+sel.ExpiresAt.UTC().Format(time.RFC3339)+".")
	}
	if a.SpecDigest != sel.ActionSpecDigest {
		return nil, problem(envelope.ProblemSelectionStale, "")
	}
	if !sel.Committable {
		p := problem(envelope.ProblemNotCommittable, fmt.Sprintf("The selection has %d blocker(s); it can be reviewed but not committed.", len(sel.Blockers)))
		p.Errors = make([]envelope.FieldError, 0, len(sel.Blockers))
		for _, b := range sel.Blockers {
			p.Errors = append(p.Errors, envelope.FieldError{Field: "selection_id", Code: envelope.FieldCode(b.Code), Message: b.Message})
		}
		return nil, p
	}
	op := &Operation{
		ID: "op_" + uuid.NewString(), SelectionID: sel.ID, Digest: sel.Digest, ActionDigest: actionDigest, Action: req.Action,
		Mode: req.Mode, IdempotencyKey: req.IdempotencyKey, Status: OpRunning, Counts: map[Outcome]int{}, CreatedAt: now, UpdatedAt: now,
		Principal: req.Principal.Recorded(),
	}
	op.Lease = e.newLease(op.ID, now)
	var approval *Approval
	if req.Mode == ModeExecute {
		var gateErr error
		if approval, gateErr = e.gate(ctx, sel, a, req); gateErr != nil {
			// A concurrent commit of this selection and action may have
			// won since: its approval is spent, and it is the answer.
			if res, err, found := e.committed(ctx, sel, a, actionDigest, req); found {
				return res, err
			}
			return nil, gateErr
		}
		if approval != nil {
			op.ApprovalID = approval.ID
		}
	}
	// The operation is the serialization point: one execute operation per
	// selection and action. Concurrent commits that lose the race answer
	// with the winner's operation, whatever approval they found.
	existing, created, err := e.Store.CreateOperation(ctx, op)
	if err != nil {
		return nil, e.internal("create operation", err)
	}
	if !created {
		return e.replay(ctx, existing, sel, a, req)
	}
	if approval != nil {
		// Single use: spend it before anything is written. Only this
		// operation can (it is the one execute operation of the pair), so a
		// conflict means the store was changed under us: write nothing.
		if err := e.Store.UseApproval(ctx, approval.ID, op.ID, now); err != nil {
			op.Status, op.StopReason, op.FinishedAt = OpStopped, "the approval could not be reserved: nothing was written", &now
			_ = e.Store.UpdateOperation(ctx, op)
			if errors.Is(err, ErrConflict) {
				return nil, problem(envelope.ProblemApprovalMismatch, "The approval was used by another operation; approvals are single-use.")
			}
			return nil, e.internal("use approval", err)
		}
	}
	if req.Mode == ModeExecute {
		detail := "no approval required"
		if approval != nil {
			detail = "approval " + approval.ID + " by " + approval.Who + " as " + approval.Principal.String()
			if err := e.rememberCategories(ctx, sel, a); err != nil {
				// The commit goes on: a value not remembered only asks for
				// review again at its next commit.
				e.logger().Error("could not remember the approved group values: their next commit asks for review again", "operation_id", op.ID, "err", err)
			}
		}
		e.audit(ctx, AuditEvent{At: now, Kind: AuditDecision, OperationID: op.ID, SelectionID: sel.ID, Digest: sel.Digest,
			Actor: req.Who, Event: "commit", RequestID: req.RequestID, Detail: detail, Principal: req.Principal.Recorded()})
	}
	n, err := e.Store.InitTargets(ctx, op.ID, sel.ID)
	if err != nil {
		return nil, e.internal("create targets", err)
	}
	op.Total = n
	op.Counts = map[Outcome]int{TargetPending: n}
	if err := e.Store.UpdateOperation(ctx, op); err != nil {
		return nil, e.internal("update operation", err)
	}
	id := op.ID // the run owns op from here on
	r := e.start(op, sel, a, req.Progress)
	go r.execute()
	return e.wait(ctx, r, id, req.Wait, false)
}

// selection is the selection id names: read, unless the caller read it
// already within its call (read, nil when it did not).
func (e *Engine) selection(ctx context.Context, id string, read *Selection) (*Selection, error) {
	if read != nil && read.ID == id {
		return read, nil
	}
	return e.Store.Selection(ctx, id)
}

// committed answers a commit whose selection and action already have an
// execute operation: that operation, replayed (found true).
func (e *Engine) committed(ctx context.Context, sel *Selection, a *upstream.Action, actionDigest string, req CommitRequest) (*CommitResult, error, bool) {
	ops, err := e.Store.OperationsOf(ctx, sel.ID)
	if err != nil {
		return nil, e.internal("read operations", err), true
	}
	for _, op := range ops {
		if op.Mode != ModeExecute || op.ActionDigest != actionDigest {
			continue
		}
		if req.IdempotencyKey != "" && op.IdempotencyKey != "" && req.IdempotencyKey != op.IdempotencyKey {
			return nil, problem(envelope.ProblemAlreadyCommitted, "This selection and action were committed as operation "+op.ID+" under another idempotency key."), true
		}
		res, err := e.replay(ctx, op, sel, a, req)
		return res, err, true
	}
	return nil, nil, false
}

func (e *Engine) internal(what string, err error) *Error {
	if e.Logger != nil {
		e.Logger.Error("commit failed", "step", what, "err", err)
	}
	return &Error{Code: envelope.ProblemInternal, StateChanged: envelope.StateUnknown}
}

// replay answers a repeated commit with the existing operation. With
// resume, an operation that is not running and whose targets do not all
// have a final outcome runs again: unknown targets are reconciled, pending
// ones sent (while its approval is valid), under the same stop rules.
func (e *Engine) replay(ctx context.Context, op *Operation, sel *Selection, a *upstream.Action, req CommitRequest) (*CommitResult, error) {
	e.mu.Lock()
	r := e.running[op.ID]
	e.mu.Unlock()
	if r != nil {
		return e.wait(ctx, r, op.ID, req.Wait, true)
	}
	if req.Resume && op.Status != OpRunning && op.Mode == ModeExecute {
		counts, err := e.Store.CountTargets(ctx, op.ID)
		if err != nil {
			return nil, e.internal("count targets", err)
		}
		if unsettled(counts) > 0 || op.Status == OpInterrupted {
			if err := e.acquireForResume(ctx, op); errors.Is(err, ErrLeaseHeld) {
				// Another process resumed it first.
				fresh, err := e.Operation(ctx, op.ID)
				if err != nil {
					return nil, e.internal("read operation", err)
				}
				return &CommitResult{Operation: fresh, Replayed: true}, nil
			} else if err != nil {
				return nil, e.internal("resume operation", err)
			}
		}
		if unsettled(counts) > 0 {
			send, why, err := e.maySend(ctx, op)
			if err != nil {
				return nil, e.internal("read approval", err)
			}
			if err := e.uncancel(ctx, op.ID); err != nil {
				return nil, e.internal("resume operation", err)
			}
			op.Status, op.StopReason, op.FinishedAt = OpRunning, "", nil
			op.UpdatedAt = e.Clock.Now()
			if err := e.Store.UpdateOperation(ctx, op); err != nil {
				return nil, e.internal("resume operation", err)
			}
			e.audit(ctx, AuditEvent{At: op.UpdatedAt, Kind: AuditDecision, OperationID: op.ID, SelectionID: sel.ID, Digest: sel.Digest,
				Actor: req.Who, Event: "resume", RequestID: req.RequestID, Detail: fmt.Sprintf("%d target(s) without a final outcome", unsettled(counts)),
				Principal: req.Principal.Recorded()})
			id := op.ID // the run owns op from here on
			r := e.start(op, sel, a, req.Progress)
			r.sendPending, r.noSendReason = send, why
			go r.execute()
			return e.wait(ctx, r, id, req.Wait, true)
		}
		if op.Status == OpInterrupted {
			// Every target has its outcome; only the end was not
			// recorded. Record it now.
			now := e.Clock.Now()
			op.Status, op.StopReason, op.Counts, op.UpdatedAt, op.FinishedAt = finalStatus(counts), "", counts, now, &now
			if err := e.Store.UpdateOperation(ctx, op); err != nil {
				return nil, e.internal("finish operation", err)
			}
		}
	}
	fresh, err := e.Operation(ctx, op.ID)
	if err != nil {
		return nil, e.internal("read operation", err)
	}
	return &CommitResult{Operation: fresh, Replayed: true}, nil
}

// finalStatus is the status of an operation whose run ended without a
// stop: completed, or completed with failures when a target failed or has
// no final outcome.
func finalStatus(counts map[Outcome]int) string {
	if counts[TargetFailed] > 0 || unsettled(counts) > 0 {
		return OpCompletedWithFailures
	}
	return OpCompleted
}

// unsettled counts the targets without a final outcome: never sent
// (pending), or sent without an observed outcome (in flight, unknown).
func unsettled(counts map[Outcome]int) int {
	return counts[TargetPending] + counts[TargetInFlight] + counts[TargetUnknown]
}

// maySend says whether a resumed operation may send its pending targets:
// only while the approval it was committed under is still valid.
func (e *Engine) maySend(ctx context.Context, op *Operation) (bool, string, error) {
	if op.ApprovalID == "" {
		return true, "", nil
	}
	aps, err := e.Store.Approvals(ctx, op.SelectionID)
	if err != nil {
		return false, "", err
	}
	for _, ap := range aps {
		if ap.ID == op.ApprovalID && e.Clock.Now().Before(ap.ExpiresAt) {
			return true, "", nil
		}
	}
	return false, "the approval this operation was committed under has expired: pending targets were not sent; preview again and commit the new selection", nil
}

// wait waits for the run up to the wait budget (zero: not at all), then
// returns the operation as it stands.
func (e *Engine) wait(ctx context.Context, r *run, opID string, budget time.Duration, replayed bool) (*CommitResult, error) {
	if budget > 0 {
		t := e.Clock.NewTimer(budget)
		defer t.Stop()
		select {
		case <-r.done:
		case <-t.C():
		case <-ctx.Done():
		}
	}
	op, err := e.Operation(context.WithoutCancel(ctx), opID)
	if err != nil {
		return nil, e.internal("read operation", err)
	}
	return &CommitResult{Operation: op, Replayed: replayed}, nil
}

// Operation returns an operation with its counts read from the journal
// (an interrupted operation's stored counts are those of its last
// heartbeat).
func (e *Engine) Operation(ctx context.Context, id string) (*Operation, error) {
	op, err := e.Store.Operation(ctx, id)
	if err != nil {
		return nil, err
	}
	counts, err := e.Store.CountTargets(ctx, id)
	if err != nil {
		return nil, err
	}
	op.Counts = counts
	if op.Total == 0 {
		for _, n := range counts {
			op.Total += n
		}
	}
	return op, nil
}

// Wait blocks until every operation running in this process has finished
// (for tests and shutdown).
func (e *Engine) Wait() {
	for {
		e.mu.Lock()
		var r *run
		for _, x := range e.running {
			r = x
			break
		}
		e.mu.Unlock()
		if r == nil {
			return
		}
		<-r.done
	}
}
