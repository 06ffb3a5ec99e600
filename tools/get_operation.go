package tools

import (
	"context"
	"errors"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

type getOperationArgs struct {
	OperationID string            `json:"operation_id" jsonschema:"From commit_bulk_action."`
	Cursor      string            `json:"cursor,omitempty" jsonschema:"Next page's cursor."`
	PageSize    *int              `json:"page_size,omitempty" jsonschema:"Default 50."`
	Outcome     selection.Outcome `json:"outcome,omitempty" jsonschema:"Only this outcome."`
}

func (getOperationArgs) schema(s *jsonschema.Schema) {
	p := s.Properties
	p["operation_id"].MinLength, p["operation_id"].Examples = jsonschema.Ptr(1), []any{"op_…"}
	p["cursor"].MinLength, p["cursor"].Examples = jsonschema.Ptr(1), []any{"<continuation.cursor>"}
	pageSize(p["page_size"])
	enum(p["outcome"], targetOutcomes...)
	p["outcome"].Examples = []any{selection.TargetFailed}
}

// pageSize bounds a page_size argument of a tool that pages records.
func pageSize(s *jsonschema.Schema) {
	s.Minimum, s.Maximum, s.Examples = jsonschema.Ptr(1.0), jsonschema.Ptr(500.0), []any{100}
}

var getOperationInput = generate[getOperationArgs]()

// getOperationTraits are the tool's traits, in the catalog.
var getOperationTraits = Traits{Name: GetOperationName, Hints: Hints{ReadOnly: Yes, Destructive: No, Idempotent: Yes, OpenWorld: No}, Scope: ScopeRead}

// GetOperation is the get_operation tool.
func GetOperation(d *Deps) Spec {
	return Spec{
		Traits:      getOperationTraits,
		Title:       "Read an operation and its per-target journal",
		Description: `An operation's status, counts and per-target results, paged; complete:true on a finished one's last page.`,
		Input:       advertised(getOperationInput),
		Data:        generate[operationData](),
		Problems:    []envelope.ProblemCode{envelope.ProblemOperationNotFound, envelope.ProblemStoreUnavailable},
		Handler:     d.getOperation,
	}
}

func (d *Deps) getOperation(ctx context.Context, call *Call) *envelope.Envelope {
	var a getOperationArgs
	errs, bad := decodeArgs(GetOperationName, getOperationInput, call.Raw, &a)
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
	if !d.mayReadOperation(ctx, call.Principal, op) {
		// Another principal's operation reads as an unknown id.
		return envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemOperationNotFound, ""))
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

// mayReadOperation reports whether who may read op: its committer, its
// selection's previewer, the approvers its action names, or an operator.
func (d *Deps) mayReadOperation(ctx context.Context, who selection.Principal, op *selection.Operation) bool {
	if d.Engine.MayReadOperation(who, op, nil) {
		return true
	}
	sel, err := d.Store.Selection(ctx, op.SelectionID)
	return err == nil && d.Engine.MayReadOperation(who, op, sel)
}
