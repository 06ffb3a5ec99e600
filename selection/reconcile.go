package selection

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/write"
)

// What a re-read shows of a target a write may have reached.
const (
	stateApplied   = "applied"   // the effect is there
	stateUntouched = "untouched" // the fields still hold their before-values and the precondition holds
	stateMoved     = "moved"     // something else changed it
	stateGone      = "gone"      // not found
	stateOther     = "other"     // the read answered another record
)

// reconcile settles unknown targets by re-reading them: rounds of re-reads,
// the first at once and each later one after a wait that doubles from
// reconcile.backoff up to reconcile.max_backoff, up to reconcile.rereads
// rounds or until none is undecided. A re-read that shows the effect makes
// the target succeeded. One that shows it untouched makes it a target to
// send again when a re-send cannot apply twice (an idempotency key or a
// condition) and attempts remain; otherwise the target stays unknown, and
// the last re-read's finding is noted. Waiting matters: a write can land
// after its answer was lost, so one untouched re-read proves nothing.
//
// It returns the targets to send again. They stay unknown in the journal
// until their next intent: a target an attempt may have reached is never
// pending (never sent), whatever stops the run before it goes out.
func (r *run) reconcile(ctx context.Context) (again []Target) {
	if r.dryRun() || r.a.Resource.Config.Get == nil {
		return nil
	}
	if err := r.j.flush(); err != nil {
		r.leaveEnd("writing the journal before reconciling", err)
		return nil
	}
	settled := map[string]bool{}
	cfg := r.a.Config.Reconcile
	wait := time.Duration(0)
	for round := range cfg.Rereads {
		if round > 0 {
			wait = min(max(wait*2, cfg.Backoff), cfg.MaxBackoff)
			clock.Sleep(r.e.Clock, wait, ctx.Done())
		}
		if ctx.Err() != nil {
			return again
		}
		undecided, sent := r.reconcileRound(ctx, round+1 == cfg.Rereads, settled)
		if r.endLeft.Load() {
			return nil
		}
		again = append(again, sent...)
		if undecided == 0 {
			break
		}
	}
	if err := r.j.flush(); err != nil {
		r.leaveEnd("writing what the re-reads showed", err)
		return nil
	}
	return again
}

// leaveEnd stops a run whose store failed while it settled targets whose
// outcome was not observed. The run cannot tell where those targets
// stand: recording an end would close the operation on unknown or
// in-flight targets that no re-read settled, and sending more would act
// on a journal it cannot read. It logs the cause and records no end; the
// lease runs out without a heartbeat, and the process that takes the
// operation over (or a resume) settles the targets and records the end.
func (r *run) leaveEnd(doing string, err error) {
	if !r.leaseGone.Load() {
		r.logger().Error("the store failed while "+doing+": the operation stops, and its end is left to the process that takes it over", "err", err)
	}
	r.endLeft.Store(true)
	r.stop("the store failed while " + doing + ": the operation stopped, and its end is left to the process that takes it over")
}

// reconcileRound re-reads every unknown target once, but those an earlier
// round already settled. last says it is the final round: targets still
// undecided get a note saying so.
func (r *run) reconcileRound(ctx context.Context, last bool, settled map[string]bool) (undecided int, again []Target) {
	var mu sync.Mutex
	after := ""
	for ctx.Err() == nil {
		batch, err := r.e.Store.Targets(ctx, r.op.ID, TargetQuery{Outcome: TargetUnknown, After: after, Limit: 256})
		if err != nil {
			if ctx.Err() == nil {
				r.leaveEnd("reading the targets to reconcile", err)
			}
			return undecided, again
		}
		if len(batch) == 0 {
			return undecided, again
		}
		after = batch[len(batch)-1].ID
		batch = slices.DeleteFunc(batch, func(t Target) bool { return settled[t.ID] })
		r.fanOut(batch, nil, func(t Target) {
			// The target is unknown: at least one attempt was not observed
			// (a taken-over intent carries no count).
			t.Unobserved = max(t.Unobserved, 1)
			decided, resend := r.settle(ctx, t, last)
			mu.Lock()
			defer mu.Unlock()
			if !decided {
				undecided++
			}
			if resend {
				settled[t.ID] = true
				again = append(again, t)
			}
		})
	}
	return undecided, again
}

// settle re-reads one unknown target. decided is false while a later
// re-read could still tell more; resend says it is to be sent again.
func (r *run) settle(ctx context.Context, t Target, last bool) (decided, resend bool) {
	if t.Problem != nil && t.Problem.Code == envelope.ProblemUpstreamContract {
		// Its answer broke the contract: a re-read would be read through
		// the same broken contract. It stays unknown.
		return true, false
	}
	reqID := uuid.NewString()
	doc, ver, found, p := r.reread(ctx, t, reqID)
	if p != nil {
		if last {
			t.Note = "still unknown: the re-read failed (" + string(p.Code) + "); resume the operation to try again"
			r.j.outcome(t)
		}
		return false, false
	}
	state, changed := r.stateOf(doc, found, t)
	switch state {
	case stateApplied:
		t.Version = ver
		r.finish(t, TargetSucceeded, t.HTTPStatus, t.Problem, "reconciled: the outcome was not observed; a re-read shows the change applied", r.afterFor(t))
		return true, false
	case stateUntouched:
		if r.safeRetry() && t.Attempts < r.a.Config.MaxAttempts && r.sendPending && !r.stopped.Load() {
			return true, true
		}
		if last {
			t.Note = r.untouchedNote(t)
			r.j.outcome(t)
		}
		return false, false
	case stateGone:
		if last {
			t.Note = "not found when re-read; whether this write applied before it went was not observed"
			r.j.outcome(t)
		}
		return false, false
	case stateOther:
		if last {
			t.Note = "the read by id answered another record than the target; whether this write applied was not observed"
			r.j.outcome(t)
		}
		return false, false
	default:
		if last {
			t.Note = "the target changed in another way since the preview; whether this write applied was not observed"
			if len(changed) > 0 {
				t.Note = "the target shows fields the action does not change changed (" + strings.Join(changed, ", ") + "): this write, or another, did more than the effect"
			}
			r.j.outcome(t)
		}
		return false, false
	}
}

func (r *run) untouchedNote(t Target) string {
	cfg := r.a.Config.Reconcile
	why := "the upstream offers no idempotency key or conditional write, so a delayed first write could still apply and a re-send could apply twice"
	switch {
	case !r.sendPending:
		why = r.noSendReason
	case t.Attempts >= r.a.Config.MaxAttempts:
		why = fmt.Sprintf("it was sent %d times (max_attempts)", t.Attempts)
	case r.stopped.Load():
		why = "the operation stopped"
	}
	return fmt.Sprintf("untouched after %d re-reads over about %s; not sent again: %s", cfg.Rereads, reconcileSpan(cfg), why)
}

// reconcileSpan is how long a reconcile's rounds wait in all.
func reconcileSpan(cfg config.ReconcileConfig) time.Duration {
	var total, wait time.Duration
	for range cfg.Rereads - 1 {
		wait = min(max(wait*2, cfg.Backoff), cfg.MaxBackoff)
		total += wait
	}
	return total
}

// stateOf compares a re-read target with the action's effect, through the
// judge: applied only when the target's record shows the change and every
// other declared field as the preview read it. changed names the fields
// outside the effect that moved.
func (r *run) stateOf(doc map[string]any, found bool, t Target) (state string, changed []string) {
	if !found {
		if r.a.Deletes() {
			return stateApplied, nil // a delete's effect is the target's absence
		}
		return stateGone, nil
	}
	switch ex := write.Examine(r.a, doc, r.judged(t)); ex.State {
	case write.StateApplied:
		return stateApplied, nil
	case write.StateUntouched:
		for _, rule := range r.a.Config.Precondition {
			if match, ok := r.a.Resource.EvalRule(doc, rule); !ok || !match {
				return stateMoved, nil
			}
		}
		return stateUntouched, nil
	case write.StateOther:
		return stateOther, nil
	default:
		return stateMoved, ex.Changed
	}
}
