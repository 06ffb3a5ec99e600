package tools

import (
	"context"
	"errors"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

type getOperationArgs struct {
	OperationID string            `json:"operation_id"`
	Cursor      string            `json:"cursor"`
	PageSize    *int              `json:"page_size"`
	Outcome     selection.Outcome `json:"outcome"`
}

var getOperationInput = getOperationInputSchema()

func getOperationInputSchema() map[string]any {
	return map[string]any{
		"type": "object", "required": []any{"operation_id"}, "additionalProperties": false,
		"properties": map[string]any{
			"operation_id": map[string]any{"type": "string", "minLength": 1, "examples": []any{"op_…"}, "description": "From commit_bulk_action."},
			"cursor":       map[string]any{"type": "string", "minLength": 1, "examples": []any{"<continuation.cursor>"}, "description": "Next page's cursor."},
			"page_size":    map[string]any{"type": "integer", "minimum": 1, "maximum": 500, "examples": []any{100}, "description": "Page size (default 50)."},
			"outcome": map[string]any{"type": "string", "enum": []any{"pending", "in_flight", "succeeded", "failed", "skipped", "unknown", "would_succeed", "would_skip"},
				"examples": []any{"failed"}, "description": "Only this outcome."},
		},
	}
}

// GetOperation is the get_operation tool.
func GetOperation(d *Deps) Spec {
	return Spec{
		Name:        "get_operation",
		Title:       "Read an operation and its per-target journal",
		Description: `An operation's status, counts and per-target results, paged; complete:true on a finished one's last page. commit_bulk_action resume:true resumes it.`,
		Input:       advertised(getOperationInput),
		Data:        operationDataSchema(),
		Hints:       NewHints(true, false, true, false),
		Problems:    []envelope.ProblemCode{envelope.ProblemOperationNotFound},
		Handler:     d.getOperation,
	}
}

func (d *Deps) getOperation(ctx context.Context, call *Call) *envelope.Envelope {
	var a getOperationArgs
	errs, bad := decodeArgs("get_operation", getOperationInput, call.Raw, &a)
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
		return d.internalError(ctx, "read the operation", err)
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
