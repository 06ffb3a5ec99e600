package tools

import (
	"context"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

type commitArgs struct {
	SelectionID    string     `json:"selection_id" jsonschema:"From preview_selection."`
	ExpectedDigest string     `json:"expected_digest" jsonschema:"The preview's digest."`
	Action         *actionArg `json:"action"`
	Mode           string     `json:"mode" jsonschema:"dry_run writes nothing."`
	IdempotencyKey string     `json:"idempotency_key,omitempty"`
	Resume         bool       `json:"resume,omitempty" jsonschema:"Continue an interrupted operation."`
	WaitMS         *int       `json:"wait_ms,omitempty" jsonschema:"Default 20000."`
	ApprovalID     string     `json:"approval_id,omitempty" jsonschema:"Default: latest."`
}

func (commitArgs) schema(s *jsonschema.Schema) {
	p := s.Properties
	p["selection_id"].MinLength, p["selection_id"].Examples = jsonschema.Ptr(1), []any{"sel_…"}
	p["expected_digest"].Pattern, p["expected_digest"].Examples = digestPattern, []any{"sha256:…"}
	enum(p["mode"], selection.ModeExecute, selection.ModeDryRun)
	p["mode"].Examples = []any{selection.ModeDryRun}
	p["idempotency_key"].MinLength, p["idempotency_key"].MaxLength = jsonschema.Ptr(8), jsonschema.Ptr(200)
	p["idempotency_key"].Examples = []any{"pause-eu-2026-12-02"}
	p["resume"].Examples = []any{true}
	p["wait_ms"].Minimum, p["wait_ms"].Maximum, p["wait_ms"].Examples = jsonschema.Ptr(0.0), jsonschema.Ptr(120000.0), []any{20000}
	p["approval_id"].MinLength, p["approval_id"].Examples = jsonschema.Ptr(1), []any{"apr_…"}
}

var commitInput = generate[commitArgs]()

// operationData is the data of commit_bulk_action and get_operation: the
// operation, its counts and a page of its per-target results.
type operationData struct {
	OperationID string                    `json:"operation_id"`
	SelectionID string                    `json:"selection_id"`
	Digest      string                    `json:"digest"`
	Action      selection.Action          `json:"action"`
	Mode        string                    `json:"mode"`
	Status      string                    `json:"status"`
	Counts      map[selection.Outcome]int `json:"counts"`
	Total       int                       `json:"total"`
	Replayed    bool                      `json:"replayed"`
	Results     []selection.Target        `json:"results"`
	CreatedAt   string                    `json:"created_at"`
	StopReason  string                    `json:"stop_reason,omitempty"`
	FinishedAt  string                    `json:"finished_at,omitempty"`
	ApprovalID  string                    `json:"approval_id,omitempty"`
	// ResultsCursor continues the results after this page.
	ResultsCursor string `json:"results_cursor,omitempty"`
}

// targetOutcomes are every target outcome, in the order of a target's life.
var targetOutcomes = []selection.Outcome{selection.TargetPending, selection.TargetInFlight, selection.TargetSucceeded, selection.TargetFailed,
	selection.TargetSkipped, selection.TargetUnknown, selection.TargetWouldSucceed, selection.TargetWouldSkip}

func (operationData) schema(s *jsonschema.Schema) {
	enum(prop(s, "mode"), selection.ModeExecute, selection.ModeDryRun)
	enum(prop(s, "status"), selection.OpRunning, selection.OpCompleted, selection.OpCompletedWithFailures, selection.OpStopped, selection.OpInterrupted)
	counts := prop(s, "counts")
	counts.PropertyNames = &jsonschema.Schema{}
	enum(counts.PropertyNames, targetOutcomes...)
	target := prop(s, "results", "[]")
	enum(prop(target, "outcome"), targetOutcomes...)
}

// commitTraits are the tool's traits, in the catalog.
var commitTraits = Traits{Name: CommitBulkActionName, Hints: Hints{ReadOnly: No, Destructive: Yes, Idempotent: Yes, OpenWorld: Yes}, Scope: ScopeWrite,
	WritePath: true, Writes: true, Tasks: AlwaysTask}

// CommitBulkAction is the commit_bulk_action tool.
func CommitBulkAction(d *Deps) Spec {
	return Spec{
		Traits:      commitTraits,
		Title:       "Commit an action to a frozen selection",
		Description: `Run a previewed action on exactly a selection's members, each outcome journaled (unknown: sent, unobserved, never re-sent blindly). Repeating returns the same operation. May ask the user to approve.`,
		Input:       advertised(commitInput),
		Data:        generate[operationData](),
		Problems: []envelope.ProblemCode{envelope.ProblemSelectionNotFound, envelope.ProblemSelectionExpired, envelope.ProblemSelectionStale, envelope.ProblemStoreUnavailable,
			envelope.ProblemDigestMismatch, envelope.ProblemActionMismatch, envelope.ProblemNotCommittable, envelope.ProblemAlreadyCommitted,
			envelope.ProblemUpstreamRateLimited, envelope.ProblemApprovalRequired, envelope.ProblemApprovalRejected,
			envelope.ProblemApprovalDeclined, envelope.ProblemApprovalCancelled, envelope.ProblemApprovalMismatch,
			envelope.ProblemApprovalExpired, envelope.ProblemApprovalDecided,
			envelope.ProblemClientApprovalMissing, envelope.ProblemElicitationForged, envelope.ProblemElicitationReplayed, envelope.ProblemElicitationMisrouted,
			envelope.ProblemPrincipalNotAllowed, envelope.ProblemApprovalByRequester, envelope.ProblemApproverNotAllowed},
		Handler: d.commit,
	}
}

func (d *Deps) commit(ctx context.Context, call *Call) *envelope.Envelope {
	var a commitArgs
	errs, bad := decodeArgs(CommitBulkActionName, commitInput, call.Raw, &a)
	if bad["selection_id"] {
		return invalidWrite(errs)
	}
	sel, fail := d.loadSelection(ctx, a.SelectionID, call.Principal)
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
	if call.Task {
		// A task answers once its operation exists; the task follows it.
		wait = 0
	}
	params := a.Action.Params
	if params == nil {
		params = map[string]any{}
	}
	req := selection.CommitRequest{
		SelectionID: a.SelectionID, ExpectedDigest: a.ExpectedDigest, Action: selection.Action{Type: a.Action.Type, Params: params},
		Mode: a.Mode, IdempotencyKey: a.IdempotencyKey, Resume: a.Resume, Wait: wait, RequestID: call.RequestID, Who: call.Client,
		ApprovalID: a.ApprovalID, Principal: call.Principal, Selection: sel,
	}
	var stopProgress func()
	req.Progress, stopProgress = d.commitProgress(ctx, call)
	defer stopProgress()
	res, err := d.Engine.Commit(ctx, req)
	if need := selection.ApprovalOf(err); need != nil && selection.ErrorCode(err) == envelope.ProblemApprovalRequired {
		// The policy wants a person: through this client when it says so.
		if act, ok := d.Runtime.Actions[a.Action.Type]; ok {
			if need.Mode == selection.ApprovalClient {
				if err := selection.MayApprove(sel, act, call.Principal); err != nil {
					// The person at this client may not approve: asking
					// them would only record a refusal.
					return envelope.ErrorEnvelope(ProblemOf(err))
				}
				if call.Apps {
					return d.askInView(ctx, call, sel, *need)
				}
				if call.Answer == nil {
					ask, p2 := d.askApproval(ctx, call, sel, *need)
					if p2 != nil {
						return envelope.ErrorEnvelope(p2)
					}
					call.Ask = ask
					return &envelope.Envelope{}
				}
				ap, p2 := d.takeAnswer(ctx, call, sel)
				if p2 != nil {
					return envelope.ErrorEnvelope(p2)
				}
				if ap != nil {
					req.ApprovalID = ap.ID
				}
				res, err = d.Engine.Commit(ctx, req)
			}
		}
	}
	stopProgress()
	if err != nil {
		return envelope.ErrorEnvelope(ProblemOf(err))
	}
	return d.operationEnvelope(ctx, res.Operation, res.Replayed, selection.TargetQuery{Limit: 20}, false)
}

// askInView answers a commit that needs the user's approval, for a client
// that renders the approval view: APPROVAL_REQUIRED, with the view's data
// (the selection and the signed state) beside it. The person decides in
// the view; the commit is called again.
func (d *Deps) askInView(ctx context.Context, call *Call, sel *selection.Selection, need selection.Requirement) *envelope.Envelope {
	v, p := d.viewFor(ctx, call, sel)
	if p != nil {
		return envelope.ErrorEnvelope(p)
	}
	if shown := d.selectionEnvelope(ctx, sel, nil, 20, nil); shown.Problem == nil {
		v.Selection = shown.Data
	}
	call.View = v
	p = envelope.NewProblem(envelope.ProblemApprovalRequired, "This commit needs approval ("+strings.Join(need.Reasons, "; ")+
		"): the user approves or rejects it in the approval view shown with this result; then commit again.")
	p.StateChanged = envelope.StateNone
	return envelope.ErrorEnvelope(p)
}

func invalidWrite(errs []envelope.FieldError) *envelope.Envelope {
	env := invalid(errs)
	env.Problem.StateChanged = envelope.StateNone
	return env
}

// OperationID is the operation a commit_bulk_action or get_operation
// envelope answers for ("" for any other envelope).
func OperationID(env *envelope.Envelope) string {
	if data, ok := env.Data.(*operationData); ok {
		return data.OperationID
	}
	return ""
}

// OperationEnvelope is commit_bulk_action's answer for op, with its first
// page of results, as it stands now.
func (d *Deps) OperationEnvelope(ctx context.Context, op *selection.Operation) *envelope.Envelope {
	return d.operationEnvelope(ctx, op, false, selection.TargetQuery{Limit: 20}, false)
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
	data := &operationData{
		OperationID: op.ID, SelectionID: op.SelectionID, Digest: op.Digest, Action: op.Action,
		Mode: op.Mode, Status: op.Status, Counts: op.Counts, Total: op.Total, Replayed: replayed,
		Results: append(make([]selection.Target, 0, len(ts)), ts...), CreatedAt: op.CreatedAt.UTC().Format(time.RFC3339),
		StopReason: op.StopReason, ApprovalID: op.ApprovalID,
	}
	if op.FinishedAt != nil {
		data.FinishedAt = op.FinishedAt.UTC().Format(time.RFC3339)
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
	data.ResultsCursor = next
	if cut && paged {
		rs := envelope.NewReason(envelope.ResultLimitReached)
		rs.Limit, rs.LimitSource = envelope.Ptr(pageBudget), envelope.LimitAirlock
		env.IncompleteReasons = append(env.IncompleteReasons, rs)
	}
	return env
}
