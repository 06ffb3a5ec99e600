package selection

import (
	"context"
	"errors"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
)

// CompensationRequest asks for the selection that undoes an operation.
type CompensationRequest struct {
	OperationID string
	Budget      upstream.Budget
	RequestID   string
	Environment string
	RequestedBy string
	Principal   Principal
}

// Compensate previews the undoing of an operation: an explicit selection of
// its succeeded targets whose fields still hold what the operation wrote,
// bound to the action's configured compensation, each member carrying the
// journaled before-values it goes back to. It goes through the same
// preview, approval and commit as any selection. What the operation did
// that cannot be undone is said plainly. A refusal is an *Error; a failure
// of the upstream, the *upstream.ScanError its reads ended with.
func (p *Previewer) Compensate(ctx context.Context, rt *upstream.Runtime, req CompensationRequest) (*PreviewResult, error) {
	op, err := p.Store.Operation(ctx, req.OperationID)
	if errors.Is(err, ErrNotFound) {
		return nil, refusal(envelope.ProblemOperationNotFound, "")
	}
	if err != nil {
		return nil, refusal(envelope.ProblemInternal, "")
	}
	if !req.Principal.MayRead(approversOf(rt, op.Action.Type), op.Principal) {
		sel, err := p.Store.Selection(ctx, op.SelectionID)
		if err != nil || !req.Principal.MayRead(approversOf(rt, op.Action.Type), op.Principal, sel.Principal) {
			// Another principal's operation reads as an unknown id.
			return nil, refusal(envelope.ProblemOperationNotFound, "")
		}
	}
	if op.Mode != ModeExecute || op.Status == OpRunning {
		return nil, refusal(envelope.ProblemCompensationUnavailable, "Only a finished execute operation can be compensated.")
	}
	orig, ok := rt.Actions[op.Action.Type]
	if !ok || orig.Config.Compensation == "" {
		return nil, refusal(envelope.ProblemCompensationUnavailable, "The action has no compensation in the configuration.")
	}
	comp := rt.Actions[orig.Config.Compensation]
	if err := MayRun(comp, req.Principal); err != nil {
		return nil, err
	}
	restore := map[string]map[string]any{}
	expect := map[string]map[string]any{}
	var ids []string
	after := ""
	for {
		ts, err := p.Store.Targets(ctx, op.ID, TargetQuery{Outcome: TargetSucceeded, After: after, Limit: 500})
		if err != nil {
			return nil, refusal(envelope.ProblemInternal, "")
		}
		if len(ts) == 0 {
			break
		}
		for _, t := range ts {
			ids = append(ids, t.ID)
			restore[t.ID], expect[t.ID] = map[string]any{}, map[string]any{}
			for _, f := range orig.EffectFields() {
				restore[t.ID][f] = t.Before[f]
				expect[t.ID][f] = t.After[f]
			}
		}
		after = ts[len(ts)-1].ID
	}
	if len(ids) == 0 {
		return nil, refusal(envelope.ProblemCompensationUnavailable, "The operation has no succeeded target to undo.")
	}
	res, err := p.Preview(ctx, PreviewRequest{
		Resource: comp.Resource, Action: comp, Params: compensationParams(comp, op.Action.Params), IDs: ids, Budget: req.Budget, RequestID: req.RequestID,
		Environment: req.Environment, RequestedBy: req.RequestedBy, Principal: req.Principal, Compensates: op.ID, Irreversible: orig.Config.Irreversible,
		Restore: restore, Expect: expect,
	})
	if err != nil {
		var se *upstream.ScanError
		if errors.As(err, &se) {
			// The upstream's failure, as a scan reports it: the edge
			// renders its problem.
			return nil, se
		}
		return nil, refusal(envelope.ProblemInternal, "")
	}
	return res, nil
}

// compensationParams are the operation's parameters that the compensation
// declares too (an untag removes the tag the tag added); the rest of an
// undo comes from the journaled before-values.
func compensationParams(comp *upstream.Action, params map[string]any) map[string]any {
	out := map[string]any{}
	props, _ := comp.Config.Params["properties"].(map[string]any)
	for k, v := range params {
		if _, declared := props[k]; declared {
			out[k] = v
		}
	}
	return out
}
