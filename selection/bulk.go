package selection

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/write"
)

// runBulk sends targets in batches through the bulk endpoint. It returns
// the targets it did not take up because the run stopped.
func (r *run) runBulk(ctx context.Context, batch []Target) (unsent []Target) {
	size := r.a.Config.Bulk.MaxBatch
	for len(batch) > 0 && !r.stopped.Load() {
		n := min(size, len(batch))
		chunk := batch[:n]
		batch = batch[n:]
		reqID := uuid.NewString()
		var send []Target
		for _, t := range chunk {
			version, _, ok := r.prepare(ctx, t, reqID)
			if !ok {
				continue
			}
			if r.dryRun() {
				r.finish(t, TargetWouldSucceed, 0, nil, "precondition holds", nil)
				continue
			}
			t.Version = version
			send = append(send, t)
		}
		if len(send) == 0 || r.dryRun() {
			continue
		}
		vars := template.Vars{Params: r.params, After: r.after, OperationID: r.op.ID}
		now := r.e.Clock.Now()
		var intents []Target
		var each []template.Vars
		for _, t := range send {
			vars.Targets = append(vars.Targets, map[string]any{"id": t.ID, "version": t.Version})
			if r.a.Config.Bulk.Each != nil {
				each = append(each, template.Vars{ID: t.ID, Version: t.Version, Params: r.params, Before: t.Before,
					After: r.afterFor(t), Restore: t.Restore, OperationID: r.op.ID})
			}
			it := t
			it.Outcome, it.Attempts, it.AttemptAt, it.RequestID = TargetInFlight, t.Attempts+1, &now, reqID
			intents = append(intents, it)
		}
		req, err := write.BulkRequest(r.a, vars, each, reqID)
		if errors.Is(err, write.ErrNoVersion) {
			for _, t := range send {
				r.unwritable(t, err)
			}
			continue
		}
		if err != nil {
			r.stop("the action's bulk template could not be rendered: check the configuration")
			return append(send, batch...)
		}
		if err := r.j.intent(intents...); err != nil {
			if errors.Is(err, errLeaseExpiring) {
				r.j.outcome(send...) // not sent: back to what they were
			}
			r.journalFailed(err)
			return append(send, batch...)
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
		results, err := write.ParseBulk(r.a, resp, idsOf(send))
		if err != nil {
			for _, t := range intents {
				t.Unobserved++
				p := envelope.NewProblem(envelope.ProblemUpstreamBadResponse, "The bulk response did not list per-target results in the configured shape.")
				p.StateChanged = envelope.StateUnknown
				r.finish(t, TargetUnknown, resp.Status, p, "the bulk response could not be read", nil)
			}
			r.stop("the bulk response broke its declared shape: the operation stopped")
			return batch
		}
		for _, t := range intents {
			res, answered := results[t.ID]
			r.bulkOutcome(t, res, answered, resp.Status)
		}
	}
	return batch
}

// bulkOutcome journals what the judge finds of one target's result in a
// bulk response (answered false: the response holds none for it).
func (r *run) bulkOutcome(t Target, result write.BulkResult, answered bool, status int) {
	r.record(t, write.JudgeBulk(r.a, result, answered, status, r.judged(t)))
}

func idsOf(ts []Target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}
