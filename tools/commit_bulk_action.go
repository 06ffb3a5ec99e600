package tools

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

type commitArgs struct {
	SelectionID    string     `json:"selection_id"`
	ExpectedDigest string     `json:"expected_digest"`
	Action         *actionArg `json:"action"`
	Mode           string     `json:"mode"`
	IdempotencyKey string     `json:"idempotency_key"`
	Resume         bool       `json:"resume"`
	WaitMS         *int       `json:"wait_ms"`
	ApprovalID     string     `json:"approval_id"`
}

var commitInput = commitInputSchema()

func commitInputSchema() map[string]any {
	return map[string]any{
		"type": "object", "additionalProperties": false,
		"required": []any{"selection_id", "expected_digest", "action", "mode"},
		"properties": map[string]any{
			"selection_id":    map[string]any{"type": "string", "minLength": 1, "examples": []any{"sel_…"}, "description": "From preview_selection."},
			"expected_digest": map[string]any{"type": "string", "pattern": "^sha256:[0-9a-f]{64}$", "examples": []any{"sha256:…"}, "description": "The preview's digest."},
			"action":          actionSchema,
			"mode": map[string]any{"type": "string", "enum": []any{"execute", "dry_run"}, "examples": []any{"dry_run"},
				"description": "dry_run writes nothing."},
			"idempotency_key": map[string]any{"type": "string", "minLength": 8, "maxLength": 200, "examples": []any{"pause-eu-2026-12-02"},
				"description": "Optional."},
			"resume": map[string]any{"type": "boolean", "examples": []any{true},
				"description": "Continue an interrupted operation."},
			"wait_ms": map[string]any{"type": "integer", "minimum": 0, "maximum": 120000, "examples": []any{20000},
				"description": "Wait, ms (default 20000)."},
			"approval_id": map[string]any{"type": "string", "minLength": 1, "examples": []any{"apr_…"},
				"description": "Approval to use (default: latest)."},
		},
	}
}

func operationDataSchema() map[string]any {
	return map[string]any{
		"type":     "object",
		"required": []any{"operation_id", "status", "mode", "counts", "total", "results"},
		"properties": map[string]any{
			"operation_id": map[string]any{"type": "string"},
			"status":       map[string]any{"enum": []any{"running", "completed", "completed_with_failures", "stopped", "interrupted"}},
			"mode":         map[string]any{"enum": []any{"execute", "dry_run"}},
			"counts":       map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}},
			"total":        map[string]any{"type": "integer"},
			"results":      map[string]any{"type": "array"},
		},
	}
}

// CommitBulkAction is the commit_bulk_action tool.
func CommitBulkAction(d *Deps) Spec {
	return Spec{
		Name:        "commit_bulk_action",
		Title:       "Commit an action to a frozen selection",
		Description: `Run a previewed action on exactly a selection's members; each target's outcome is journaled (unknown: sent, unobserved, never re-sent blindly). Committing again returns the same operation. May ask the user to approve.`,
		Input:       advertised(commitInput),
		Data:        operationDataSchema(),
		Hints:       NewHints(false, true, true, true),
		Writes:      true,
		Problems: []envelope.ProblemCode{envelope.ProblemSelectionNotFound, envelope.ProblemSelectionExpired, envelope.ProblemSelectionStale,
			envelope.ProblemDigestMismatch, envelope.ProblemActionMismatch, envelope.ProblemNotCommittable, envelope.ProblemAlreadyCommitted,
			envelope.ProblemUpstreamRateLimited, envelope.ProblemApprovalRequired, envelope.ProblemApprovalRejected,
			envelope.ProblemApprovalDeclined, envelope.ProblemApprovalCancelled, envelope.ProblemApprovalMismatch,
			envelope.ProblemApprovalExpired, envelope.ProblemApprovalDecided,
			envelope.ProblemClientApprovalMissing, envelope.ProblemElicitationForged, envelope.ProblemElicitationReplayed,
			envelope.ProblemPrincipalNotAllowed, envelope.ProblemApprovalByRequester, envelope.ProblemApproverNotAllowed},
		Handler: d.commit,
	}
}

func (d *Deps) commit(ctx context.Context, call *Call) *envelope.Envelope {
	var a commitArgs
	errs, bad := decodeArgs("commit_bulk_action", commitInput, call.Raw, &a)
	if bad["selection_id"] {
		return invalidWrite(errs)
	}
	sel, fail := d.loadSelection(ctx, a.SelectionID)
	if fail != nil {
		fail.Problem.StateChanged = envelope.StateNone
		return fail
	}
	if r := d.Runtime.Resources[sel.Resource]; r != nil && a.Action != nil && !bad["action"] {
		if _, aerrs := checkAction(r, d.Runtime, a.Action, "action"); len(aerrs) > 0 {
			errs = append(errs, aerrs...)
		}
	}
	if len(errs) > 0 {
		return invalidWrite(errs)
	}
	if r := d.Runtime.Resources[sel.Resource]; r != nil && a.Mode == selection.ModeExecute {
		if env := coolingDown(r.Upstream, true); env != nil {
			return env
		}
	}
	wait := 20 * time.Second
	if a.WaitMS != nil {
		wait = time.Duration(*a.WaitMS) * time.Millisecond
	}
	if inTask(ctx) {
		// A task answers once its operation exists; tasks/get follows it.
		wait = 0
	}
	params := a.Action.Params
	if params == nil {
		params = map[string]any{}
	}
	req := selection.CommitRequest{
		SelectionID: a.SelectionID, ExpectedDigest: a.ExpectedDigest, Action: selection.Action{Type: a.Action.Type, Params: params},
		Mode: a.Mode, IdempotencyKey: a.IdempotencyKey, Resume: a.Resume, Wait: wait, RequestID: call.RequestID, Who: call.Client,
		ApprovalID: a.ApprovalID, Principal: call.Principal,
	}
	var waiting atomic.Bool
	waiting.Store(true)
	defer waiting.Store(false)
	if tok := progressToken(call); tok != nil {
		srv := server.ServerFromContext(ctx)
		req.Progress = func(done, total int) {
			// A notification sent as the handler returns can arrive after
			// the result; send only while the handler still waits.
			if srv == nil || !waiting.Load() {
				return
			}
			_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": tok, "progress": done, "total": total, "message": "targets with an outcome",
			})
		}
	}
	res, p := d.Engine.Commit(ctx, req)
	if p != nil && p.Code == envelope.ProblemApprovalRequired {
		// The policy wants a person: through this client when it says so.
		if act, ok := d.Runtime.Actions[a.Action.Type]; ok {
			if need := d.Engine.ApprovalRequirement(ctx, sel, act); need.Mode == selection.ApprovalClient {
				mrt := call.Request.Params.MultiRoundTripParams
				if p2 := selection.MayApprove(sel, act, call.Principal); p2 != nil {
					// The person at this client may not approve: asking
					// them would only record a refusal.
					return envelope.ErrorEnvelope(p2)
				}
				if mrt.RequestState == "" && len(mrt.InputResponses) == 0 {
					ask, p2 := d.askApproval(ctx, sel, need, call.Principal)
					if p2 != nil {
						return envelope.ErrorEnvelope(p2)
					}
					call.InputRequired = ask
					return &envelope.Envelope{}
				}
				ap, p2 := d.takeAnswer(ctx, call, sel)
				if p2 != nil {
					return envelope.ErrorEnvelope(p2)
				}
				if ap != nil {
					req.ApprovalID = ap.ID
				}
				res, p = d.Engine.Commit(ctx, req)
			}
		}
	}
	waiting.Store(false)
	if p != nil {
		return envelope.ErrorEnvelope(p)
	}
	return d.operationEnvelope(ctx, res.Operation, res.Replayed, selection.TargetQuery{Limit: 20}, false)
}

func invalidWrite(errs []envelope.FieldError) *envelope.Envelope {
	env := invalid(errs)
	env.Problem.StateChanged = envelope.StateNone
	return env
}

func progressToken(call *Call) any {
	if m := call.Request.Params.Meta; m != nil {
		return m.ProgressToken
	}
	return nil
}

// operationEnvelope renders an operation with a page of its results. When
// paged is false (commit_bulk_action), the results are the first ones and
// the counts account for every target; get_operation pages through all.
func (d *Deps) operationEnvelope(ctx context.Context, op *selection.Operation, replayed bool, q selection.TargetQuery, paged bool) *envelope.Envelope {
	limit := q.Limit
	q.Limit = limit + 1
	ts, err := d.Store.Targets(ctx, op.ID, q)
	if err != nil {
		return d.internalError(ctx, "read the operation's targets", err)
	}
	more := len(ts) > limit
	ts = ts[:min(len(ts), limit)]
	cut := false
	if n := fitCount(ts, pageBudget); n < len(ts) {
		ts, more, cut = ts[:n], true, true
	}
	next := ""
	if more {
		next = d.Cursors.encode(cursorPayload{Scan: op.ID, After: ts[len(ts)-1].ID, Fingerprint: fingerprint(op.ID, q.Outcome)})
	}
	results := make([]selection.Target, 0, len(ts))
	results = append(results, ts...)
	data := map[string]any{
		"operation_id": op.ID, "selection_id": op.SelectionID, "digest": op.Digest, "action": op.Action,
		"mode": op.Mode, "status": op.Status, "counts": op.Counts, "total": op.Total, "replayed": replayed,
		"results": results, "created_at": op.CreatedAt.UTC().Format(time.RFC3339),
	}
	if op.StopReason != "" {
		data["stop_reason"] = op.StopReason
	}
	if op.FinishedAt != nil {
		data["finished_at"] = op.FinishedAt.UTC().Format(time.RFC3339)
	}
	if op.ApprovalID != "" {
		data["approval_id"] = op.ApprovalID
	}
	env := &envelope.Envelope{Data: data}
	switch {
	case op.Status == selection.OpRunning:
		env.IncompleteReasons = []envelope.Reason{envelope.NewReason(envelope.OperationRunning)}
		env.Continuation = envelope.Continuation{Kind: envelope.ContinueRetryAfter, RetryAfterSeconds: envelope.Ptr(2)}
	case next != "" && paged:
		env.IncompleteReasons = []envelope.Reason{envelope.NewReason(envelope.MorePagesAvailable)}
		env.Continuation = envelope.Continuation{Kind: envelope.ContinueNextCursor, Cursor: next}
	}
	if n := op.Counts[selection.TargetPending] + op.Counts[selection.TargetInFlight] + op.Counts[selection.TargetUnknown]; n > 0 && op.Status != selection.OpRunning {
		// Finished, stopped or interrupted with targets that have no final
		// outcome: the operation's answer is not complete.
		rs := envelope.NewReason(envelope.TargetsUnsettled)
		rs.Count = envelope.Ptr(n)
		env.IncompleteReasons = append(env.IncompleteReasons, rs)
	}
	if next != "" {
		data["results_cursor"] = next
	}
	if cut && paged {
		rs := envelope.NewReason(envelope.ResultLimitReached)
		rs.Limit, rs.LimitSource = envelope.Ptr(pageBudget), envelope.LimitAirlock
		env.IncompleteReasons = append(env.IncompleteReasons, rs)
	}
	return env
}
