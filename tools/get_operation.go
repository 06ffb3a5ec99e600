package tools

import (
	"context"
	"errors"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

type getOperationArgs struct {
	OperationID string `json:"operation_id"`
	Cursor      string `json:"cursor"`
	PageSize    *int   `json:"page_size"`
	Outcome     string `json:"outcome"`
}

func getOperationInputSchema() map[string]any {
	return map[string]any{
		"type": "object", "required": []any{"operation_id"}, "additionalProperties": false,
		"properties": map[string]any{
			"operation_id": map[string]any{"type": "string", "minLength": 1, "examples": []any{"op_…"}},
			"cursor":       map[string]any{"type": "string", "minLength": 1, "examples": []any{"<continuation.cursor>"}},
			"page_size":    map[string]any{"type": "integer", "minimum": 1, "maximum": 500, "examples": []any{100}},
			"outcome": map[string]any{"enum": []any{"pending", "in_flight", "succeeded", "failed", "skipped", "unknown", "would_succeed", "would_skip"},
				"examples": []any{"failed"}, "description": "Only targets with this outcome."},
		},
	}
}

// GetOperation is the get_operation tool.
func GetOperation(d *Deps) Spec {
	return Spec{
		Name:  "get_operation",
		Title: "Read an operation and its per-target journal",
		Description: `Read an operation: status (running, completed, completed_with_failures, stopped, interrupted), stop_reason, counts per outcome, and per-target results (id, outcome, http_status, problem, before, after, time), paged and filterable by outcome.
complete is true once the operation finished and this page holds its last results. An operation that is interrupted can be resumed with commit_bulk_action and resume: true.`,
		Input:    getOperationInputSchema(),
		Data:     operationDataSchema(),
		Hints:    NewHints(true, false, true, false),
		Problems: []string{envelope.ProblemOperationNotFound},
		Handler:  d.getOperation,
	}
}

func (d *Deps) getOperation(ctx context.Context, call *Call) *envelope.Envelope {
	var a getOperationArgs
	errs, bad := decodeArgs("get_operation", getOperationInputSchema(), call.Raw, &a)
	if len(errs) > 0 && bad["operation_id"] {
		return invalid(errs)
	}
	if d.Store == nil {
		return envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemInternal, "airlock runs without a store; operations are unavailable."))
	}
	op, err := d.Engine.Operation(ctx, a.OperationID)
	if errors.Is(err, selection.ErrNotFound) {
		return envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemOperationNotFound, ""))
	}
	if err != nil {
		return envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemInternal, ""))
	}
	q := selection.TargetQuery{Limit: 50, Outcome: a.Outcome}
	if a.PageSize != nil {
		q.Limit = *a.PageSize
	}
	if a.Cursor != "" && !bad["cursor"] {
		p, state := d.Cursors.decode(a.Cursor)
		switch {
		case state != cursorOK:
			errs = append(errs, envelope.NewFieldError("cursor", envelope.FieldCursorTampered, nil))
		case p.Scan != op.ID || p.Fingerprint != fingerprint(op.ID, q.Outcome):
			errs = append(errs, envelope.NewFieldError("cursor", envelope.FieldCursorMismatch, nil))
		default:
			q.After = p.After
		}
	}
	if len(errs) > 0 {
		return invalid(errs)
	}
	return d.operationEnvelope(ctx, op, false, q, true)
}
