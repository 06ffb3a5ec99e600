package selection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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

	mu      sync.Mutex
	running map[string]*run
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
	// ApprovalID names the approval to use; by default the latest unused
	// approval of the selection's digest and action.
	ApprovalID string
	Progress   func(done, total int)
}

// CommitResult is the operation as the caller sees it.
type CommitResult struct {
	Operation *Operation
	// Replayed is true when the call returned an existing operation.
	Replayed bool
}

func problem(code, detail string) *envelope.Problem {
	p := envelope.NewProblem(code, detail)
	p.StateChanged = envelope.StateNone
	return p
}

// Commit checks a commit against its selection and runs it. Every refusal
// is a problem with state_changed none: nothing was sent upstream.
func (e *Engine) Commit(ctx context.Context, req CommitRequest) (*CommitResult, *envelope.Problem) {
	sel, err := e.Store.Selection(ctx, req.SelectionID)
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
	if req.Mode == ModeExecute {
		ops, err := e.Store.OperationsOf(ctx, sel.ID)
		if err != nil {
			return nil, e.internal("read operations", err)
		}
		for _, op := range ops {
			if op.Mode != ModeExecute || op.ActionDigest != actionDigest {
				continue
			}
			if req.IdempotencyKey != "" && op.IdempotencyKey != "" && req.IdempotencyKey != op.IdempotencyKey {
				p := problem(envelope.ProblemAlreadyCommitted, "This selection and action were committed as operation "+op.ID+" under another idempotency key.")
				return nil, p
			}
			return e.replay(ctx, op, sel, a, req)
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
		errs := make([]envelope.FieldError, 0, len(sel.Blockers))
		for _, b := range sel.Blockers {
			errs = append(errs, envelope.FieldError{Field: "selection_id", Code: b.Code, Message: b.Message})
		}
		p.SetErrors(errs)
		return nil, p
	}
	op := &Operation{
		ID: "op_" + uuid.NewString(), SelectionID: sel.ID, Digest: sel.Digest, ActionDigest: actionDigest, Action: req.Action,
		Mode: req.Mode, IdempotencyKey: req.IdempotencyKey, Status: OpRunning, Counts: map[string]int{}, CreatedAt: now, UpdatedAt: now,
	}
	var approval *Approval
	if req.Mode == ModeExecute {
		var p *envelope.Problem
		if approval, p = e.gate(ctx, sel, a, req); p != nil {
			return nil, p
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
			detail = "approval " + approval.ID + " by " + approval.Who
			e.rememberCategories(ctx, sel, a)
		}
		e.audit(ctx, AuditEvent{At: now, Kind: AuditDecision, OperationID: op.ID, SelectionID: sel.ID, Digest: sel.Digest,
			Actor: req.Who, Event: "commit", RequestID: req.RequestID, Detail: detail})
	}
	n, err := e.Store.InitTargets(ctx, op.ID, sel.ID)
	if err != nil {
		return nil, e.internal("create targets", err)
	}
	op.Total = n
	op.Counts = map[string]int{TargetPending: n}
	if err := e.Store.UpdateOperation(ctx, op); err != nil {
		return nil, e.internal("update operation", err)
	}
	r := e.start(op, sel, a, req.Progress)
	return e.wait(ctx, r, op.ID, req.Wait, false)
}

func (e *Engine) internal(what string, err error) *envelope.Problem {
	if e.Logger != nil {
		e.Logger.Error("commit failed", "step", what, "err", err)
	}
	p := envelope.NewProblem(envelope.ProblemInternal, "")
	p.StateChanged = envelope.StateUnknown
	return p
}

// replay answers a repeated commit with the existing operation, resuming it
// first when asked and it was interrupted.
func (e *Engine) replay(ctx context.Context, op *Operation, sel *Selection, a *upstream.Action, req CommitRequest) (*CommitResult, *envelope.Problem) {
	e.mu.Lock()
	r := e.running[op.ID]
	e.mu.Unlock()
	if r != nil {
		return e.wait(ctx, r, op.ID, req.Wait, true)
	}
	if req.Resume && op.Status == OpInterrupted {
		op.Status = OpRunning
		op.StopReason = ""
		op.UpdatedAt = e.Clock.Now()
		if err := e.Store.UpdateOperation(ctx, op); err != nil {
			return nil, e.internal("resume operation", err)
		}
		r := e.start(op, sel, a, req.Progress)
		return e.wait(ctx, r, op.ID, req.Wait, true)
	}
	fresh, err := e.Operation(ctx, op.ID)
	if err != nil {
		return nil, e.internal("read operation", err)
	}
	return &CommitResult{Operation: fresh, Replayed: true}, nil
}

// wait waits for the run up to the wait budget, then returns the
// operation as it stands.
func (e *Engine) wait(ctx context.Context, r *run, opID string, budget time.Duration, replayed bool) (*CommitResult, *envelope.Problem) {
	if budget <= 0 {
		budget = 20 * time.Second
	}
	t := time.NewTimer(budget)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
	case <-ctx.Done():
	}
	op, err := e.Operation(context.WithoutCancel(ctx), opID)
	if err != nil {
		return nil, e.internal("read operation", err)
	}
	return &CommitResult{Operation: op, Replayed: replayed}, nil
}

// run is one operation executing in this process.
type run struct {
	e        *Engine
	op       *Operation
	sel      *Selection
	a        *upstream.Action
	j        *journal
	done     chan struct{}
	progress func(done, total int)
	params   map[string]any
	after    map[string]any

	mu         sync.Mutex
	counts     map[string]int
	attempted  int
	failed     int
	stopReason string
	stopped    atomic.Bool
	lastNotify time.Time
	pauseUntil time.Time
	reconciled map[string]bool
	canaryDone bool
}

func (e *Engine) start(op *Operation, sel *Selection, a *upstream.Action, progress func(int, int)) *run {
	after, _ := a.After(op.Action.Params)
	r := &run{e: e, op: op, sel: sel, a: a, done: make(chan struct{}), progress: progress, params: op.Action.Params,
		after: after, reconciled: map[string]bool{}}
	e.mu.Lock()
	if e.running == nil {
		e.running = map[string]*run{}
	}
	e.running[op.ID] = r
	e.mu.Unlock()
	r.j = newJournal(e.Store, op.ID, func(events []AuditEvent) { e.audit(context.Background(), events...) })
	go r.execute()
	return r
}

func (r *run) snapshotCounts() map[string]int {
	counts, err := r.e.Store.CountTargets(context.Background(), r.op.ID)
	if err != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		out := map[string]int{}
		for k, v := range r.counts {
			out[k] = v
		}
		return out
	}
	return counts
}

func (r *run) logger() *slog.Logger {
	if r.e.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.e.Logger.With("operation_id", r.op.ID)
}

func (r *run) execute() {
	ctx := r.e.Background
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() {
		r.e.mu.Lock()
		delete(r.e.running, r.op.ID)
		r.e.mu.Unlock()
		close(r.done)
	}()
	stopBeat := r.heartbeat(ctx)
	// Targets whose outcome was not observed (a crash, a timeout) are
	// reconciled before anything is sent: they are never blindly re-sent.
	r.reconcileUnknown(ctx)
	r.runPending(ctx)
	// Writes that timed out during this run are reconciled the same way;
	// the untouched ones that can be retried safely get one more pass.
	if r.reconcileUnknown(ctx) > 0 {
		r.runPending(ctx)
		r.reconcileUnknown(ctx)
	}
	stopBeat()
	jerr := r.j.close()
	if jerr != nil && r.stopReason == "" {
		r.stop("the journal could not be written: the operation stopped so that no write goes unrecorded")
	}
	counts, err := r.e.Store.CountTargets(context.Background(), r.op.ID)
	if err != nil {
		counts = r.counts
	}
	now := r.e.Clock.Now()
	op := r.op
	op.Counts, op.UpdatedAt, op.FinishedAt = counts, now, &now
	switch {
	case r.stopReason != "":
		op.Status, op.StopReason = OpStopped, r.stopReason
	case counts[TargetFailed] > 0 || counts[TargetUnknown] > 0 || counts[TargetPending] > 0:
		op.Status = OpCompletedWithFailures
	default:
		op.Status = OpCompleted
	}
	if err := r.e.Store.UpdateOperation(context.Background(), op); err != nil {
		r.logger().Error("could not record the operation's end", "err", err)
	}
	r.notify(true)
	r.logger().Info("operation finished", "status", op.Status, "counts", counts)
}

func (r *run) heartbeat(ctx context.Context) func() {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				r.op.UpdatedAt = r.e.Clock.Now()
				r.op.Counts = r.snapshotCounts()
				_ = r.e.Store.UpdateOperation(context.Background(), r.op)
			}
		}
	}()
	return func() { close(stop) }
}

func (r *run) stop(reason string) {
	r.mu.Lock()
	if r.stopReason == "" {
		r.stopReason = reason
	}
	r.mu.Unlock()
	r.stopped.Store(true)
}

// maxPasses bounds how often a run goes back over targets that returned
// to pending (rate limited before processing).
const maxPasses = 20

// runPending sends every pending target through a bounded worker pool, in
// passes, until none is pending or the run stops.
func (r *run) runPending(ctx context.Context) {
	for pass := 0; pass < maxPasses && !r.stopped.Load() && ctx.Err() == nil; pass++ {
		if err := r.j.flush(); err != nil {
			r.stop("the journal could not be written: the operation stopped so that no write goes unrecorded")
			return
		}
		if r.pendingPass(ctx) == 0 {
			return
		}
		r.pauseForRateLimit(ctx)
	}
}

// pendingPass runs one pass over the pending targets and returns how many
// it found.
func (r *run) pendingPass(ctx context.Context) int {
	conc := r.a.Config.Concurrency
	after := ""
	found := 0
	for !r.stopped.Load() && ctx.Err() == nil {
		batch, err := r.e.Store.Targets(ctx, r.op.ID, TargetQuery{Outcome: TargetPending, After: after, Limit: 512})
		if err != nil {
			r.stop("the journal could not be read: the operation stopped")
			return found
		}
		if len(batch) == 0 {
			return found
		}
		found += len(batch)
		after = batch[len(batch)-1].ID
		if r.a.Config.Bulk != nil {
			r.runBulk(ctx, batch)
			continue
		}
		// The first write of a run goes alone: a structural failure (a
		// refused credential, an unexpected status) stops the run before
		// any other target is attempted.
		if !r.canaryDone {
			r.canaryDone = true
			r.one(ctx, batch[0])
			batch = batch[1:]
			if r.stopped.Load() || len(batch) == 0 {
				continue
			}
		}
		work := make(chan Target)
		var wg sync.WaitGroup
		for range min(conc, len(batch)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for t := range work {
					r.one(ctx, t)
				}
			}()
		}
		for _, t := range batch {
			if r.stopped.Load() {
				break
			}
			work <- t
		}
		close(work)
		wg.Wait()
	}
	return found
}

func (r *run) dryRun() bool { return r.op.Mode == ModeDryRun }

// needsReread says whether a target must be read right before its write:
// explicit selections re-verify every member, and the reread mode enforces
// the precondition that way.
func (r *run) needsReread() bool {
	return (r.sel.Kind == KindExplicit || r.a.Config.Conditional == upstream.CondReread || r.dryRun()) && r.a.Resource.Config.Get != nil
}

// verify re-reads a target and checks it is still what was previewed:
// found, precondition true, version unchanged. It returns the fresh
// version and, when the target moved, the skip note.
func (r *run) verify(ctx context.Context, t Target, reqID string) (version, skip string, p *envelope.Problem) {
	start := time.Now()
	doc, ver, found, err := r.a.Resource.Read(ctx, t.ID, reqID)
	r.call(http.MethodGet, r.a.Resource.Config.Get.Path, t.ID, statusOf(err, found), time.Since(start), reqID)
	if err != nil {
		return "", "", readProblem(err)
	}
	if !found {
		return "", "not found when re-read before the write", nil
	}
	for _, rule := range r.a.Config.Precondition {
		if match, ok := r.a.Resource.EvalRule(doc, rule); !ok || !match {
			return ver, "precondition changed: " + rule.Field + " " + rule.Op + " " + describe(rule.Value) + " no longer holds", nil
		}
	}
	if t.Version != "" && ver != "" && ver != t.Version {
		return ver, "version changed since the preview", nil
	}
	return ver, "", nil
}

func describe(v any) string {
	b, err := Canonical(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func statusOf(err error, found bool) int {
	var he *upstream.HTTPError
	if errors.As(err, &he) {
		return he.Status
	}
	if err == nil && !found {
		return http.StatusNotFound
	}
	if err == nil {
		return http.StatusOK
	}
	return 0
}

func readProblem(err error) *envelope.Problem {
	p := upstream.ProblemFor(err, nil)
	p.StateChanged = envelope.StateNone
	return p
}

// one runs one target: re-read when needed, journal the intent, write,
// journal the outcome.
func (r *run) one(ctx context.Context, t Target) {
	reqID := uuid.NewString()
	r.pauseForRateLimit(ctx)
	if r.stopped.Load() {
		return
	}
	version := t.Version
	if r.needsReread() {
		v, skip, p := r.verify(ctx, t, reqID)
		if p != nil {
			r.finish(t, TargetFailed, 0, p, "the re-read before the write failed", nil)
			r.applyStopRules(p.Code, 0)
			return
		}
		if skip != "" {
			out := TargetSkipped
			if r.dryRun() {
				out = TargetWouldSkip
			}
			r.finish(t, out, 0, nil, skip, nil)
			return
		}
		if v != "" {
			version = v
		}
	}
	if r.dryRun() {
		note := "precondition holds and the version is unchanged"
		if !r.needsReread() {
			note = "not re-read: the write will be conditional"
		}
		r.finish(t, TargetWouldSucceed, 0, nil, note, nil)
		return
	}
	vars := upstream.TemplateVars{ID: t.ID, Version: version, Params: r.params, Before: t.Before, After: r.afterFor(t), Restore: t.Restore, OperationID: r.op.ID}
	req, err := r.a.WriteRequest(vars, reqID)
	if err != nil {
		r.finish(t, TargetFailed, 0, envelope.NewProblem(envelope.ProblemInternal, "The write request could not be built from the action's templates."), "", nil)
		r.stop("the action's request template could not be rendered: check the configuration")
		return
	}
	now := r.e.Clock.Now()
	intent := t
	intent.Outcome, intent.Attempts, intent.AttemptAt, intent.RequestID, intent.Version = TargetInFlight, t.Attempts+1, &now, reqID, version
	if err := r.j.intent(intent); err != nil {
		r.stop("the journal could not be written: the operation stopped so that no write goes unrecorded")
		return
	}
	wctx := ctx
	if to := r.a.Config.Timeout; to > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, to)
		defer cancel()
	}
	start := time.Now()
	resp, err := r.a.Resource.Upstream.Do(wctx, req)
	r.call(req.Method, r.a.Config.Request.Path, t.ID, statusOf(err, true), time.Since(start), reqID)
	r.classify(intent, resp, err)
}

// classify turns a write's result into the target's outcome. Every failure
// carries the problem of its failure mode, with state_changed saying
// whether the write may have applied.
func (r *run) classify(t Target, resp *upstream.Response, err error) {
	if err == nil {
		if berr := upstream.CheckWriteResponse(resp); berr != nil {
			// A 2xx whose body is an error or unreadable is never a
			// success: whether it applied is unknown until re-read.
			p := upstream.ProblemFor(berr, nil)
			p.StateChanged = envelope.StateUnknown
			r.finish(t, TargetUnknown, resp.Status, p, "the upstream answered 2xx with a body that is not a success; whether it applied is unknown", nil)
			return
		}
		if vs := r.a.CheckResponse(resp); len(vs) > 0 {
			// The answer does not look like what was approved: the write
			// may have done something else. Stop at the first such answer.
			what := vs[0].Describe()
			p := envelope.NewProblem(envelope.ProblemUpstreamContract, "The upstream's answer broke the action's response contract: "+what+".")
			p.StateChanged = envelope.StateUnknown
			r.finish(t, TargetUnknown, resp.Status, p, "the answer broke the response contract: "+what, nil)
			r.stop(what + " in the upstream's answer: " + r.a.Name + " stopped")
			return
		}
		r.finish(t, TargetSucceeded, resp.Status, nil, "", r.afterFor(t))
		r.applyStopRules("", resp.Status)
		return
	}
	p := upstream.ProblemFor(err, r.a.FieldName)
	var he *upstream.HTTPError
	if !errors.As(err, &he) {
		p.StateChanged = envelope.StateUnknown
		r.finish(t, TargetUnknown, 0, p, "the write failed in an unexpected way; its outcome was not observed", nil)
		return
	}
	switch he.Kind {
	case upstream.FailTimeout, upstream.FailTooLarge, upstream.FailCanceled:
		if he.Kind == upstream.FailCanceled && !he.Sent {
			r.finish(t, TargetPending, 0, nil, "not sent: airlock was stopping", nil)
			return
		}
		p.StateChanged = envelope.StateUnknown
		r.finish(t, TargetUnknown, he.Status, p, "sent, but no answer was observed before the timeout", nil)
		return
	case upstream.FailConnection:
		if !he.Sent {
			p.StateChanged = envelope.StateNone
			r.finish(t, TargetFailed, 0, p, "not sent: the connection could not be made", nil)
			r.applyStopRules(p.Code, 0)
			return
		}
		p.StateChanged = envelope.StateUnknown
		r.finish(t, TargetUnknown, 0, p, "the connection broke after sending", nil)
		return
	}
	st := he.Status
	switch {
	case st == http.StatusNotFound:
		p.StateChanged = envelope.StateNone
		r.finish(t, TargetSkipped, st, p, "not found", nil)
	case st == http.StatusConflict || st == http.StatusPreconditionFailed:
		p.StateChanged = envelope.StateNone
		r.finish(t, TargetSkipped, st, p, "precondition changed: the upstream refused the conditional write", nil)
	case st == http.StatusTooManyRequests:
		// A 429 is a refusal before processing: the target goes back to
		// pending and the run pauses for the upstream's wait.
		r.finish(t, TargetPending, st, nil, "rate limited before processing; it will be sent again", nil)
		r.rateLimited(he.RetryAfter)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		p.StateChanged = envelope.StateNone
		r.finish(t, TargetFailed, st, p, "", nil)
		r.applyStopRules(p.Code, st)
	case st == http.StatusBadRequest || st == http.StatusUnprocessableEntity:
		p.StateChanged = envelope.StateNone
		r.finish(t, TargetFailed, st, p, "", nil)
		r.applyStopRules(p.Code, st)
	case st >= 500:
		p.StateChanged = envelope.StateUnknown
		r.finish(t, TargetUnknown, st, p, "the upstream failed while handling the write", nil)
		r.applyStopRules("", st)
	default:
		p.StateChanged = envelope.StateUnknown
		r.finish(t, TargetFailed, st, p, "", nil)
		r.stop(fmt.Sprintf("unexpected status %d from the upstream: the operation stopped", st))
	}
}

func (r *run) rateLimited(wait time.Duration) {
	if wait <= 0 {
		wait = 5 * time.Second
	}
	maxPause := r.e.MaxRateLimitPause
	if maxPause == 0 {
		maxPause = 2 * time.Minute
	}
	if wait > maxPause {
		r.stop(fmt.Sprintf("rate limited: the upstream asked to wait %d s, longer than airlock pauses an operation", int(wait.Seconds())))
		return
	}
	r.mu.Lock()
	if until := time.Now().Add(wait); until.After(r.pauseUntil) {
		r.pauseUntil = until
	}
	r.mu.Unlock()
}

func (r *run) pauseForRateLimit(ctx context.Context) {
	r.mu.Lock()
	until := r.pauseUntil
	r.mu.Unlock()
	if d := time.Until(until); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// finish journals a target's outcome and counts it.
func (r *run) finish(t Target, outcome string, status int, p *envelope.Problem, note string, after map[string]any) {
	now := r.e.Clock.Now()
	t.Outcome, t.HTTPStatus, t.Problem, t.Note, t.After = outcome, status, p, note, after
	if outcome != TargetPending {
		t.DoneAt = &now
	}
	r.j.outcome(t)
	r.mu.Lock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[outcome]++
	if outcome != TargetPending {
		r.attempted++
	}
	if outcome == TargetFailed {
		r.failed++
	}
	r.mu.Unlock()
	r.notify(false)
}

// applyStopRules stops on structural failures and on the failure ratio.
func (r *run) applyStopRules(code string, status int) {
	switch code {
	case envelope.ProblemUpstreamAuth, envelope.ProblemUpstreamForbidden:
		r.stop(fmt.Sprintf("the upstream answered %d: the credential was refused, so the operation stopped at the first refusal", status))
		return
	}
	cfg := r.a.Config.Stop
	r.mu.Lock()
	attempted, failed := r.attempted, r.failed
	r.mu.Unlock()
	if attempted >= cfg.MinAttempts && float64(failed) > cfg.FailureRatio*float64(attempted) {
		r.stop(fmt.Sprintf("%d of %d attempted targets failed, more than the %.0f%% the stop rule allows", failed, attempted, cfg.FailureRatio*100))
	}
}

func (r *run) notify(final bool) {
	if r.progress == nil {
		return
	}
	r.mu.Lock()
	now := time.Now()
	if !final && now.Sub(r.lastNotify) < 200*time.Millisecond {
		r.mu.Unlock()
		return
	}
	r.lastNotify = now
	done := r.attempted
	r.mu.Unlock()
	r.progress(done, r.op.Total)
}

// runBulk sends pending targets in batches through the bulk endpoint.
func (r *run) runBulk(ctx context.Context, batch []Target) {
	size := r.a.Config.Bulk.MaxBatch
	for len(batch) > 0 && !r.stopped.Load() {
		n := min(size, len(batch))
		chunk := batch[:n]
		batch = batch[n:]
		reqID := uuid.NewString()
		var send []Target
		for _, t := range chunk {
			if r.needsReread() {
				v, skip, p := r.verify(ctx, t, reqID)
				if p != nil {
					r.finish(t, TargetFailed, 0, p, "the re-read before the write failed", nil)
					r.applyStopRules(p.Code, 0)
					continue
				}
				if skip != "" {
					out := TargetSkipped
					if r.dryRun() {
						out = TargetWouldSkip
					}
					r.finish(t, out, 0, nil, skip, nil)
					continue
				}
				if v != "" {
					t.Version = v
				}
			}
			if r.dryRun() {
				r.finish(t, TargetWouldSucceed, 0, nil, "precondition holds", nil)
				continue
			}
			send = append(send, t)
		}
		if len(send) == 0 || r.dryRun() {
			continue
		}
		vars := upstream.TemplateVars{Params: r.params, After: r.after, OperationID: r.op.ID}
		now := r.e.Clock.Now()
		var intents []Target
		for _, t := range send {
			vars.Targets = append(vars.Targets, map[string]any{"id": t.ID, "version": t.Version})
			it := t
			it.Outcome, it.Attempts, it.AttemptAt, it.RequestID = TargetInFlight, t.Attempts+1, &now, reqID
			intents = append(intents, it)
		}
		req, err := r.a.BulkRequest(vars, reqID)
		if err != nil {
			r.stop("the action's bulk template could not be rendered: check the configuration")
			return
		}
		if err := r.j.intent(intents...); err != nil {
			r.stop("the journal could not be written: the operation stopped so that no write goes unrecorded")
			return
		}
		start := time.Now()
		resp, err := r.a.Resource.Upstream.Do(ctx, req)
		r.call(req.Method, r.a.Config.Bulk.Path, strings.Join(idsOf(send), ","), statusOf(err, true), time.Since(start), reqID)
		if err != nil {
			for _, t := range intents {
				r.classify(t, resp, err)
			}
			continue
		}
		results, err := r.a.ParseBulk(resp)
		if err != nil {
			for _, t := range intents {
				p := envelope.NewProblem(envelope.ProblemUpstreamBadResponse, "The bulk response did not list per-target results in the configured shape.")
				p.StateChanged = envelope.StateUnknown
				r.finish(t, TargetUnknown, resp.Status, p, "the bulk response could not be read", nil)
			}
			r.stop("the bulk response broke its declared shape: the operation stopped")
			return
		}
		for _, t := range intents {
			switch results[t.ID] {
			case upstream.BulkApplied:
				r.finish(t, TargetSucceeded, resp.Status, nil, "", r.afterFor(t))
				r.applyStopRules("", resp.Status)
			case upstream.BulkConflict:
				r.finish(t, TargetSkipped, resp.Status, nil, "precondition changed: the upstream refused this target", nil)
			case upstream.BulkNotFound:
				r.finish(t, TargetSkipped, resp.Status, nil, "not found", nil)
			case upstream.BulkFailed:
				p := envelope.NewProblem(envelope.ProblemUpstreamRejected, "The bulk endpoint reported a failure for this target.")
				p.StateChanged = envelope.StateNone
				r.finish(t, TargetFailed, resp.Status, p, "", nil)
				r.applyStopRules(p.Code, resp.Status)
			default:
				p := envelope.NewProblem(envelope.ProblemUpstreamBadResponse, "The bulk response did not mention this target.")
				p.StateChanged = envelope.StateUnknown
				r.finish(t, TargetUnknown, resp.Status, p, "absent from the bulk response", nil)
			}
		}
	}
}

func idsOf(ts []Target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// reconcileUnknown re-reads every unknown target: applied becomes
// succeeded, moved elsewhere becomes skipped, untouched is sent again only
// when the retry cannot apply twice (an idempotency key, or a conditional
// write); otherwise it stays unknown.
func (r *run) reconcileUnknown(ctx context.Context) (resend int) {
	if r.dryRun() || r.a.Resource.Config.Get == nil {
		return 0
	}
	if err := r.j.flush(); err != nil {
		return 0
	}
	safeRetry := r.a.Config.IdempotencyHeader != "" || r.a.Config.Conditional == upstream.CondIfMatch || r.a.Config.Conditional == upstream.CondVersion
	after := ""
	for ctx.Err() == nil {
		batch, err := r.e.Store.Targets(ctx, r.op.ID, TargetQuery{Outcome: TargetUnknown, After: after, Limit: 256})
		if err != nil || len(batch) == 0 {
			return resend
		}
		after = batch[len(batch)-1].ID
		for _, t := range batch {
			if r.reconciled[t.ID] {
				continue
			}
			if t.Problem != nil && t.Problem.Code == envelope.ProblemUpstreamContract {
				// Its answer broke the contract: a re-read would be read
				// through the same broken contract. It stays unknown.
				r.reconciled[t.ID] = true
				continue
			}
			r.reconciled[t.ID] = true
			reqID := uuid.NewString()
			start := time.Now()
			doc, ver, found, err := r.a.Resource.Read(ctx, t.ID, reqID)
			r.call(http.MethodGet, r.a.Resource.Config.Get.Path, t.ID, statusOf(err, found), time.Since(start), reqID)
			if err != nil {
				continue // stays unknown; a later resume tries again
			}
			switch state := r.stateOf(doc, found, t); state {
			case "applied":
				t.Version = ver
				r.finish(t, TargetSucceeded, t.HTTPStatus, nil, "reconciled: the outcome was not observed; a re-read shows the change applied", r.afterFor(t))
			case "moved":
				r.finish(t, TargetSkipped, t.HTTPStatus, nil, "reconciled: the target changed in another way since the preview", nil)
			default:
				if safeRetry && !r.stopped.Load() {
					r.finish(t, TargetPending, 0, nil, "reconciled: untouched; it will be sent again with the same idempotency key or condition", nil)
					resend++
				} else {
					t.Note = "untouched when re-read, but not sent again: the upstream offers no idempotency key or conditional write, so a delayed first write could still apply"
					r.j.outcome(t)
				}
			}
		}
	}
	return resend
}

// afterFor is a target's after-values: per target when the effect refers
// to restore values (a compensation).
func (r *run) afterFor(t Target) map[string]any {
	if len(t.Restore) == 0 {
		return r.after
	}
	m, err := r.a.AfterFor(r.params, t.Restore)
	if err != nil {
		return r.after
	}
	return m
}

// stateOf compares a re-read target with the action's effect.
func (r *run) stateOf(doc map[string]any, found bool, t Target) string {
	if !found {
		return "moved"
	}
	applied, untouched := true, true
	for _, e := range r.a.Config.Effect {
		v, _ := upstream.GetPath(doc, r.a.Resource.FieldPath(e.Field))
		if !e.Applied(v, r.afterFor(t)[e.Field]) {
			applied = false
		}
		if describe(v) != describe(t.Before[e.Field]) {
			untouched = false
		}
	}
	if applied {
		return "applied"
	}
	if !untouched {
		return "moved"
	}
	for _, rule := range r.a.Config.Precondition {
		if match, ok := r.a.Resource.EvalRule(doc, rule); !ok || !match {
			return "moved"
		}
	}
	return "untouched"
}

// Recover marks operations interrupted by a crash; call it once at start-up
// in the process that owns the store.
func (e *Engine) Recover(ctx context.Context) ([]string, error) {
	return e.Store.Recover(ctx, e.Clock.Now())
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
