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

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
	"github.com/airlock-mcp/airlock/write"
)

// run is one operation executing in this process.
type run struct {
	e        *Engine
	op       *Operation
	sel      *Selection
	a        *upstream.Action
	j        *journal
	fence    *fence
	done     chan struct{}
	progress func(done, total int)
	params   map[string]any
	after    map[string]any
	// sendPending is false when a resumed operation may only settle its
	// unknown targets (its approval expired); noSendReason says why.
	sendPending  bool
	noSendReason string

	mu         sync.Mutex
	attempted  int
	failed     int
	stopReason string
	stopped    atomic.Bool
	// leaseGone says the run stopped because its lease was lost or came
	// too close to its expiry: its end is the takeover's to record.
	leaseGone atomic.Bool
	// endLeft says a store failure kept the run from settling targets
	// whose outcome it had not observed: their end is a takeover's.
	endLeft    atomic.Bool
	pauseUntil time.Time
	canaryDone bool
}

// start registers a run of op; the caller starts it with go r.execute().
func (e *Engine) start(op *Operation, sel *Selection, a *upstream.Action, progress func(int, int)) *run {
	after, _ := a.After(op.Action.Params)
	r := &run{e: e, op: op, sel: sel, a: a, done: make(chan struct{}), progress: progress, params: op.Action.Params,
		after: after, sendPending: true}
	e.mu.Lock()
	if e.running == nil {
		e.running = map[string]*run{}
	}
	e.running[op.ID] = r
	e.mu.Unlock()
	r.fence = newFence(op.Lease, e.Clock, e.leaseTTL())
	r.j = newJournal(e.Store, r.fence, e.Clock, func(events []AuditEvent) { e.audit(context.Background(), events...) })
	r.j.observe = e.journaled
	r.j.onLost = func() {
		r.leaseGone.Store(true)
		r.stop("this process lost the operation's lease: it sends no more writes, and the process that takes the operation over finishes it")
	}
	return r
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
	stopWatch := r.watchCancel(ctx)
	r.notify()
	// Targets whose outcome was not observed (a crash, a timeout) are
	// settled by re-reading before anything is sent: never blindly re-sent.
	again := r.reconcile(ctx)
	if r.sendPending {
		// Writes whose outcome this run did not observe are settled the
		// same way; those a re-read shows untouched, and that a re-send
		// cannot apply twice, go out again, up to max_attempts.
		for attempt := 0; ; attempt++ {
			r.resend(ctx, again)
			r.runPending(ctx)
			if attempt == r.a.Config.MaxAttempts || r.stopped.Load() || ctx.Err() != nil {
				break
			}
			if again = r.reconcile(ctx); len(again) == 0 {
				break
			}
		}
	}
	if !r.leaseGone.Load() {
		r.settleInFlight()
	}
	stopWatch()
	stopBeat()
	if jerr := r.j.close(); jerr != nil && !r.leaseGone.Load() {
		r.leaveEnd("writing the journal", jerr)
	}
	var counts map[Outcome]int
	err := retryUnavailable(r.e.Clock, r.e.storeWait(), r.fence.holds, func() (err error) {
		counts, err = r.e.Store.CountTargets(context.Background(), r.op.ID)
		return err
	})
	if err != nil {
		// Without the journal's counts the end cannot be told (this run's
		// own tally misses every target it did not touch): none is
		// recorded, the lease runs out, and a takeover records it.
		r.logger().Error("could not count the operation's targets: its end is left to the process that takes it over", "err", err)
		r.notify()
		return
	}
	if n := counts[TargetInFlight]; n > 0 && !r.leaseGone.Load() {
		r.leaveEnd("recording the outcomes of the targets in flight", fmt.Errorf("%d still in flight", n))
	}
	if r.endLeft.Load() {
		r.notify() // the cause is logged; a takeover records the end
		return
	}
	if ctx.Err() != nil && r.stopReason == "" && unsettled(counts) > 0 {
		// This process is stopping, not the operation: it records no end.
		// Its lease runs out without a heartbeat, and whichever process
		// takes it over (this one, restarted, included) re-reads what was
		// in flight and sends what is pending.
		r.logger().Warn("this process is stopping: the operation is left to the process that takes it over once its lease expires")
		r.notify()
		return
	}
	now := r.e.Clock.Now()
	r.mu.Lock()
	op := *r.op
	r.mu.Unlock()
	op.Counts, op.UpdatedAt, op.FinishedAt, op.Lease = counts, now, &now, r.fence.current()
	switch {
	case r.stopReason != "":
		op.Status, op.StopReason = OpStopped, r.stopReason
	case !r.sendPending && counts[TargetPending] > 0:
		op.Status, op.StopReason = OpStopped, r.noSendReason
	default:
		op.Status = finalStatus(counts)
	}
	if kept := r.e.FlushAudit(context.Background()); kept > 0 {
		// The store took the journal but not the audit lines: they are
		// kept, and the end waits for them.
		r.leaveEnd("writing the audit trail", fmt.Errorf("%d audit lines kept", kept))
		r.notify()
		return
	}
	if !r.fence.holds() || r.leaseGone.Load() {
		// Lost, or expiring without renewal (even if renewed since): the
		// run stopped for its lease, not for the operation, so it records
		// no end. Its lease runs out without a heartbeat, and whichever
		// process takes the operation over (this one included) finishes
		// it and records its end.
		r.logger().Warn("the operation's lease is lost or expiring: its end is left to the process that takes it over")
		r.notify()
		return
	}
	if err := r.e.Store.UpdateOperation(context.Background(), &op); errors.Is(err, ErrLeaseLost) {
		r.logger().Warn("this process lost the operation's lease; the process that took it over records its end")
	} else if err != nil {
		r.logger().Error("could not record the operation's end", "err", err)
	}
	r.notify()
	r.logger().Info("operation finished", "status", op.Status, "counts", counts)
}

// settleInFlight makes unknown the targets a run ends with in flight: an
// intent was journaled and no outcome was (the journal failed in between).
// The write may have gone out; an operation that ends says so, and a
// resume re-reads them.
func (r *run) settleInFlight() {
	if err := r.j.flush(); err != nil {
		r.leaveEnd("writing the journal before settling the targets in flight", err)
		return
	}
	ctx := context.Background()
	after := ""
	for {
		batch, err := r.e.Store.Targets(ctx, r.op.ID, TargetQuery{Outcome: TargetInFlight, After: after, Limit: 512})
		if err != nil {
			r.leaveEnd("reading the targets in flight", err)
			return
		}
		if len(batch) == 0 {
			return
		}
		after = batch[len(batch)-1].ID
		for _, t := range batch {
			t.Unobserved++
			p := envelope.NewProblem(envelope.ProblemUpstreamTimeout, "The write's outcome was not recorded before the run ended.")
			p.StateChanged = envelope.StateUnknown
			r.finish(t, TargetUnknown, 0, p, "in flight when the run ended: the write may have been sent and its outcome was not recorded", nil)
		}
	}
}

// journalFailed stops a run whose journal write failed. A lost or
// expiring lease already stopped it (the takeover finishes). Otherwise the
// store failed for longer than the run waits for it: the run sends
// nothing more and leaves the operation to whichever process takes it over
// once its lease expires (this one included, once the store is back),
// which re-reads what was in flight and sends what is pending. A store
// blip never ends an operation for good.
func (r *run) journalFailed(err error) {
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, errLeaseExpiring) || r.leaseGone.Load() {
		r.stop("this process lost the operation's lease: it sends no more writes, and the process that takes the operation over finishes it")
		return
	}
	r.leaveEnd("writing the journal", err)
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
			r.journalFailed(err)
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
	after := ""
	found := 0
	for !r.stopped.Load() && ctx.Err() == nil {
		var batch []Target
		err := retryUnavailable(r.e.Clock, r.e.storeWait(), r.fence.holds, func() (err error) {
			batch, err = r.e.Store.Targets(ctx, r.op.ID, TargetQuery{Outcome: TargetPending, After: after, Limit: 512})
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				r.leaveEnd("reading the targets to send", err)
			}
			return found
		}
		if len(batch) == 0 {
			return found
		}
		found += len(batch)
		after = batch[len(batch)-1].ID
		// The first write of a run goes alone: a structural failure (a
		// refused credential, an unexpected status) stops the run before
		// any other target is attempted.
		if !r.canaryDone && r.a.Config.Bulk == nil {
			r.canaryDone = true
			r.one(ctx, batch[0])
			batch = batch[1:]
			if r.stopped.Load() || len(batch) == 0 {
				continue
			}
		}
		r.send(ctx, batch)
	}
	return found
}

// send runs targets through a pool of the action's concurrency, or in
// bulk batches, until the run stops. It returns the targets it did not
// take up because the run stopped.
func (r *run) send(ctx context.Context, batch []Target) (unsent []Target) {
	if r.a.Config.Bulk != nil {
		return r.runBulk(ctx, batch)
	}
	var mu sync.Mutex
	rest := r.fanOut(batch, r.stopped.Load, func(t Target) {
		if !r.one(ctx, t) {
			mu.Lock()
			unsent = append(unsent, t)
			mu.Unlock()
		}
	})
	return append(unsent, rest...)
}

// fanOut runs each over the targets on as many workers as the action's
// concurrency. Once stop (when set) says so it hands out no more, and
// returns the targets it did not hand out.
func (r *run) fanOut(batch []Target, stop func() bool, each func(Target)) (rest []Target) {
	work := make(chan Target)
	var wg sync.WaitGroup
	for range min(r.a.Config.Concurrency, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				each(t)
			}
		}()
	}
	for i, t := range batch {
		if stop != nil && stop() {
			rest = batch[i:]
			break
		}
		work <- t
	}
	close(work)
	wg.Wait()
	return rest
}

// resend sends again the targets a reconcile found untouched. Those the
// run stops before sending stay unknown, with the reason they were not
// sent again.
func (r *run) resend(ctx context.Context, again []Target) {
	if len(again) == 0 {
		return
	}
	if err := r.j.flush(); err != nil {
		r.journalFailed(err)
	}
	for _, t := range r.send(ctx, again) {
		t.Note = r.untouchedNote(t)
		r.j.outcome(t)
	}
}

func (r *run) dryRun() bool { return r.op.Mode == ModeDryRun }

// needsReread says whether a target must be read right before its write:
// explicit selections re-verify every member, and the reread mode enforces
// the precondition that way.
func (r *run) needsReread() bool {
	return (r.sel.Kind == KindExplicit || r.a.Config.Conditional == config.CondReread || r.a.WholeRecord() || r.dryRun()) && r.a.Resource.Config.Get != nil
}

// safeRetry says whether a write may be sent again after an outcome that
// was not observed without applying twice: the upstream tells a repeat
// apart by its idempotency key, or refuses it by its condition.
func (r *run) safeRetry() bool {
	c := r.a.Config
	if c.Bulk != nil {
		// A bulk key covers one batch; a re-sent target goes in another.
		return c.Conditional == config.CondVersion
	}
	return c.IdempotencyHeader != "" || c.Conditional == config.CondIfMatch || c.Conditional == config.CondVersion
}

// prepare makes a target ready to be written: it re-reads it when the
// action needs it and checks it is still what was previewed. It returns
// the version to write with, and the record as the upstream sent it when
// it was re-read; when the target must not be written it journals its
// outcome and returns ok false.
func (r *run) prepare(ctx context.Context, t Target, reqID string) (version string, raw map[string]any, ok bool) {
	version = t.Version
	if !r.needsReread() {
		return version, nil, true
	}
	doc, raw, ver, found, p := r.rereadRaw(ctx, t, reqID)
	if p != nil {
		if transport.IsTokenProblem(p.Code) {
			r.noToken(t, p, "not re-read and not sent: no access token could be obtained")
			return "", nil, false
		}
		if ctx.Err() != nil {
			// Stopping, not a failure: nothing was sent (finish keeps a
			// target an earlier attempt may have reached unknown).
			r.finish(t, TargetPending, 0, nil, "not re-read and not sent: airlock was stopping", nil)
			return "", nil, false
		}
		if t.Unobserved > 0 {
			p.StateChanged = envelope.StateUnknown
			r.finish(t, TargetUnknown, 0, p, "the re-read before sending again failed; an earlier attempt may have applied", nil)
			return "", nil, false
		}
		r.finish(t, TargetFailed, 0, p, "the re-read before the write failed", nil)
		r.applyStopRules(p.Code, 0)
		return "", nil, false
	}
	if t.Unobserved > 0 {
		// An earlier attempt may have applied: the re-read decides before
		// any check can call the target moved.
		switch state, _ := r.stateOf(doc, found, t); state {
		case stateApplied:
			t.Version = ver
			r.finish(t, TargetSucceeded, t.HTTPStatus, nil, "reconciled: a re-read shows an earlier attempt applied", r.afterFor(t))
			return "", nil, false
		case stateMoved, stateGone, stateOther:
			p := envelope.NewProblem(envelope.ProblemUpstreamConflict, "")
			p.StateChanged = envelope.StateUnknown
			r.finish(t, TargetUnknown, 0, p, "the target changed since an earlier attempt whose outcome was not observed; not sent again", nil)
			return "", nil, false
		}
	}
	if skip := r.stillSelected(doc, found, t, ver); skip != "" {
		out := TargetSkipped
		if r.dryRun() {
			out = TargetWouldSkip
		}
		r.finish(t, out, 0, nil, skip, nil)
		return "", nil, false
	}
	if ver != "" {
		version = ver
	}
	return version, raw, true
}

// reread reads a target through the resource's get endpoint, auditing the
// call.
func (r *run) reread(ctx context.Context, t Target, reqID string) (doc map[string]any, version string, found bool, p *envelope.Problem) {
	doc, _, version, found, p = r.rereadRaw(ctx, t, reqID)
	return doc, version, found, p
}

// rereadRaw is reread that also returns the record as the upstream sent
// it.
func (r *run) rereadRaw(ctx context.Context, t Target, reqID string) (doc, raw map[string]any, version string, found bool, p *envelope.Problem) {
	start := time.Now()
	doc, raw, ver, found, err := read.Raw(ctx, r.a.Resource, t.ID, reqID)
	r.call(http.MethodGet, r.a.Resource.Config.Get.Path, t.ID, statusOf(err, found), time.Since(start), reqID)
	if err != nil {
		return nil, nil, "", false, readProblem(err)
	}
	return doc, raw, ver, found, nil
}

// stillSelected checks a re-read target against everything its selection
// was made of: found, inside the previewed filter and outside its
// exclusions, the action's precondition true, the version unchanged. It
// returns why the target is no longer selected ("" when it is).
func (r *run) stillSelected(doc map[string]any, found bool, t Target, ver string) string {
	if !found {
		return "not found when re-read before the write"
	}
	res := r.a.Resource
	if !res.Matches(doc, r.sel.Selector.Filter) {
		return "no longer matches the previewed filter"
	}
	for i, rule := range r.sel.Selector.Exclude {
		if match, ok := res.EvalRule(doc, rule); !ok || match {
			return fmt.Sprintf("now matches exclusion rule %d (%s)", i, rule.Reason)
		}
	}
	for _, rule := range r.a.Config.Precondition {
		if match, ok := res.EvalRule(doc, rule); !ok || !match {
			return "precondition changed: " + rule.Field + " " + rule.Op + " " + describe(rule.Value) + " no longer holds"
		}
	}
	if t.Version != "" && ver != "" && ver != t.Version {
		return "version changed since the preview"
	}
	return ""
}

func describe(v any) string {
	b, err := jsonvalue.Canonical(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func statusOf(err error, found bool) int {
	var he *transport.HTTPError
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
	p := transport.ProblemFor(err, nil)
	p.StateChanged = envelope.StateNone
	return p
}

// unwritable journals a target whose request cannot be expressed (an id
// that is no URL path segment, a conditional write without a version):
// nothing is sent.
func (r *run) unwritable(t Target, err error) {
	p := envelope.NewProblem(envelope.ProblemNotCommittable, "The write could not be expressed for this target; it was not sent.")
	p.StateChanged = envelope.StateNone
	if t.Unobserved > 0 {
		p.StateChanged = envelope.StateUnknown
		r.finish(t, TargetUnknown, 0, p, "not sent again: "+err.Error()+"; an earlier attempt may have applied", nil)
		return
	}
	r.finish(t, TargetFailed, 0, p, "not sent: "+err.Error(), nil)
}

// one runs one target: re-read when needed, journal the intent, write,
// journal the outcome. It returns false, having done nothing, when the run
// stopped before it could start.
func (r *run) one(ctx context.Context, t Target) bool {
	reqID := uuid.NewString()
	r.pauseForRateLimit(ctx)
	if r.stopped.Load() || ctx.Err() != nil {
		// A stopping process starts no write: the target stays pending.
		return false
	}
	version, raw, ok := r.prepare(ctx, t, reqID)
	if !ok {
		return true
	}
	if r.dryRun() {
		note := "precondition holds and the version is unchanged"
		if !r.needsReread() {
			note = "not re-read: the write will be conditional"
		}
		r.finish(t, TargetWouldSucceed, 0, nil, note, nil)
		return true
	}
	vars := template.Vars{ID: t.ID, Version: version, Params: r.params, Before: t.Before, After: r.afterFor(t), Restore: t.Restore, OperationID: r.op.ID}
	if raw != nil && r.a.WholeRecord() {
		// The record as the upstream holds it, the effect applied: a
		// write that replaces it keeps every other field.
		vars.Record = r.a.RecordAfter(raw, vars.After)
	}
	req, err := write.Request(r.a, vars, reqID)
	if errors.Is(err, write.ErrNoVersion) || errors.Is(err, read.ErrUnsafeID) {
		r.unwritable(t, err)
		return true
	}
	if err != nil {
		r.finish(t, TargetFailed, 0, envelope.NewProblem(envelope.ProblemInternal, "The write request could not be built from the action's templates."), "", nil)
		r.stop("the action's request template could not be rendered: check the configuration")
		return true
	}
	now := r.e.Clock.Now()
	intent := t
	intent.Outcome, intent.Attempts, intent.AttemptAt, intent.RequestID, intent.Version = TargetInFlight, t.Attempts+1, &now, reqID, version
	if err := r.j.intent(intent); err != nil {
		if errors.Is(err, errLeaseExpiring) {
			// The intent may be durable, but the write is not sent: the
			// target goes back to what it was, unless the lease is
			// already another process's (then that one reads it in
			// flight and reconciles it).
			r.j.outcome(t)
		}
		r.journalFailed(err)
		return true
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
	return true
}

// classify journals what the judge finds of a write's result (see
// write.Judge, the one place that decides an outcome) and does what the
// finding asks of the run: the stop rules, a stop, a pause.
func (r *run) classify(t Target, resp *transport.Response, err error) {
	r.record(t, write.Judge(r.a, resp, err, r.judged(t)))
}

// record journals a finding. Once an attempt may have reached the upstream
// without an observed outcome, a later attempt's refusal proves nothing
// about it: finish keeps the target unknown until a re-read decides.
func (r *run) record(t Target, f write.Finding) {
	final := t.Unobserved == 0
	switch f.Outcome {
	case write.Succeeded:
		r.finish(t, TargetSucceeded, f.Status, nil, f.Note, r.afterFor(t))
	case write.Failed:
		r.finish(t, TargetFailed, f.Status, f.Problem, f.Note, nil)
	case write.Skipped:
		r.finish(t, TargetSkipped, f.Status, f.Problem, f.Note, nil)
	case write.Unknown:
		t.Unobserved++
		r.finish(t, TargetUnknown, f.Status, f.Problem, f.Note, nil)
	default:
		r.finish(t, TargetPending, f.Status, f.Problem, f.Note, nil)
	}
	switch {
	case f.NoToken:
		r.stop("no access token could be obtained (" + string(f.Problem.Code) + "): the operation stopped before sending more; resume it once the authorization server issues tokens again")
	case f.RateLimited:
		r.rateLimited(f.Wait)
	}
	if f.Rules && (final || !f.OnlyIfFinal) {
		var code envelope.ProblemCode
		if f.Problem != nil {
			code = f.Problem.Code
		}
		r.applyStopRules(code, f.Status)
	}
	if f.Stop != "" {
		r.stop(f.Stop)
	}
}

// noToken puts back a target that was not sent because no access token
// could be obtained, and stops the run: every other write would fail the
// same way until the authorization server issues tokens again. (A target
// an earlier attempt may have reached stays unknown: see finish.)
func (r *run) noToken(t Target, p *envelope.Problem, note string) {
	p.StateChanged = envelope.StateNone
	r.finish(t, TargetPending, 0, p, note, nil)
	r.stop("no access token could be obtained (" + string(p.Code) + "): the operation stopped before sending more; resume it once the authorization server issues tokens again")
}

// finish journals a target's outcome and counts it for the stop rules and
// progress. A target an earlier attempt may have reached is never said
// untouched (pending, skipped, failed): that attempt may still land, so it
// stays unknown, for a re-read to decide.
func (r *run) finish(t Target, outcome Outcome, status int, p *envelope.Problem, note string, after map[string]any) {
	if t.Unobserved > 0 && (outcome == TargetPending || outcome == TargetSkipped || outcome == TargetFailed) {
		outcome = TargetUnknown
		note = strings.TrimPrefix(note+"; ", "; ") + "an earlier attempt was not observed, so a re-read decides"
		switch {
		case p != nil:
			cp := *p
			p = &cp
		case t.Problem != nil:
			cp := *t.Problem
			p = &cp
		default:
			p = envelope.NewProblem(envelope.ProblemUpstreamTimeout, "An earlier attempt's outcome was not observed.")
		}
		p.StateChanged = envelope.StateUnknown
	}
	now := r.e.Clock.Now()
	t.Outcome, t.HTTPStatus, t.Problem, t.Note, t.After = outcome, status, p, note, after
	t.DoneAt = nil
	if outcome != TargetPending {
		t.DoneAt = &now
	}
	r.j.outcome(t)
	r.mu.Lock()
	if outcome != TargetPending {
		r.attempted++
	}
	if outcome == TargetFailed {
		r.failed++
	}
	r.mu.Unlock()
	r.notify()
}

// applyStopRules stops on structural failures and on the failure ratio.
func (r *run) applyStopRules(code envelope.ProblemCode, status int) {
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

// notify tells the commit's progress hook where the run stands. The hook
// is called after every outcome and paces what it sends on its own.
func (r *run) notify() {
	if r.progress == nil {
		return
	}
	r.mu.Lock()
	done := r.attempted
	total := r.op.Total
	r.mu.Unlock()
	r.progress(done, total)
}

// judged is what the judge knows of a target.
func (r *run) judged(t Target) write.Target {
	return write.Target{ID: t.ID, Version: t.Version, Before: t.Before, After: r.afterFor(t), Frame: t.Frame}
}

// afterFor is a target's whole after-values: computed from its
// before-values when an effect adds to or removes from a list, or from its
// restore values (a compensation).
func (r *run) afterFor(t Target) map[string]any {
	if len(t.Restore) == 0 && !r.a.PerTarget() {
		return r.after
	}
	m, err := r.a.AfterFor(r.params, t.Before, t.Restore)
	if err != nil {
		return r.after
	}
	return m
}
