package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

type actionArg struct {
	Type   string         `json:"type"`
	Params map[string]any `json:"params"`
}

type previewArgs struct {
	Resource   string              `json:"resource"`
	Filter     map[string]any      `json:"filter"`
	Exclude    []config.RuleConfig `json:"exclude"`
	Action     *actionArg          `json:"action"`
	IDs        []string            `json:"ids"`
	Fields     []string            `json:"fields"`
	PageSize   *int                `json:"page_size"`
	MaxPages   *int                `json:"max_pages"`
	DeadlineMS *int                `json:"deadline_ms"`
	Compensate string              `json:"compensate"`
}

var actionSchema = map[string]any{
	"type": "object", "required": []any{"type"}, "additionalProperties": false,
	"examples": []any{map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}},
	"properties": map[string]any{
		"type":   map[string]any{"type": "string", "minLength": 1, "description": "Action name."},
		"params": map[string]any{"type": "object", "description": "Parameters."},
	},
}

var previewInput = previewInputSchema()

// hasAction reports whether a commit can run an action on r.
func hasAction(rt *upstream.Runtime, r *upstream.Resource) bool {
	for _, a := range rt.Actions {
		if a.Resource == r {
			return true
		}
	}
	return false
}

func previewInputSchema() map[string]any {
	props := map[string]any{
		"resource": map[string]any{"type": "string", "minLength": 1, "examples": []any{"subscriptions"}, "description": "Resource name."},
		"filter": map[string]any{"type": "object", "examples": []any{map[string]any{"status": "past_due", "region": "eu"}},
			"description": "As in search_all.", "additionalProperties": filterValue},
		"exclude": map[string]any{"type": "array", "maxItems": 50, "description": "Exclusions, each counted.",
			"examples": []any{[]any{map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"}}},
			"items": map[string]any{"type": "object", "required": []any{"field", "op", "value", "reason"}, "additionalProperties": false,
				"properties": map[string]any{
					"field":  map[string]any{"type": "string", "minLength": 1, "description": "Field."},
					"op":     map[string]any{"type": "string", "enum": []any{"eq", "ne", "in", "not_in", "contains", "not_contains", "gt", "gte", "lt", "lte"}, "description": "Comparison."},
					"value":  map[string]any{"description": "Compared value.", "anyOf": filterValue["anyOf"]},
					"reason": map[string]any{"type": "string", "minLength": 3, "maxLength": 200, "description": "Shown to the user."},
				}}},
		"action": actionSchema,
		"ids": map[string]any{"type": "array", "items": map[string]any{"type": "string", "minLength": 1}, "maxItems": 1000,
			"examples":    []any{[]any{"sub_00104", "sub_00219"}},
			"description": "Targets by id, instead of a scan."},
		"fields": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "examples": []any{[]any{"id", "customer_name"}},
			"description": "Manifest review fields."},
		"page_size": map[string]any{"type": "integer", "minimum": 0, "maximum": 200, "examples": []any{20},
			"description": "Manifest size (default 20)."},
		"compensate": map[string]any{"type": "string", "minLength": 1, "examples": []any{"op_…"},
			"description": "Operation to undo instead."},
	}
	props["max_pages"] = budgetProps["max_pages"]
	props["deadline_ms"] = budgetProps["deadline_ms"]
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

func selectionDataSchema() map[string]any {
	return map[string]any{
		"type":     "object",
		"required": []any{"selection_id", "digest", "action_digest", "expires_at", "kind", "committable", "committable_reasons", "counts"},
		"properties": map[string]any{
			"selection_id":        map[string]any{"type": "string"},
			"digest":              map[string]any{"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
			"action_digest":       map[string]any{"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
			"expires_at":          map[string]any{"type": "string"},
			"kind":                map[string]any{"enum": []any{"scope", "explicit"}},
			"committable":         map[string]any{"type": "boolean"},
			"committable_reasons": map[string]any{"type": "array"},
			"counts":              map[string]any{"type": "object", "required": []any{"members", "excluded", "ambiguous"}},
		},
	}
}

// PreviewSelection is the preview_selection tool.
func PreviewSelection(d *Deps) Spec {
	return Spec{
		Name:        "preview_selection",
		Title:       "Preview and freeze the targets of a bulk action",
		Description: `Freeze one action's exact targets (scan or ids, exclusions, precondition): selection_id, digest, committable, counts, exclusions, ambiguous, effect, manifest. Show them to the user; commit with selection_id, digest as expected_digest and the same action. Incomplete scans never commit.`,
		Input:       resourceSchema(previewInput, d.Runtime, "Resource.", false, func(r *upstream.Resource) bool { return hasAction(d.Runtime, r) }),
		Data:        selectionDataSchema(),
		Hints:       NewHints(false, false, false, true),
		// Named ids are read one by one: their failures end the preview.
		Problems: append(append([]envelope.ProblemCode(nil), readProblems...), envelope.ProblemUpstreamUnavailable, envelope.ProblemUpstreamServerError,
			envelope.ProblemUpstreamTimeout, envelope.ProblemUpstreamConnection, envelope.ProblemOperationNotFound, envelope.ProblemCompensationUnavailable,
			envelope.ProblemPrincipalNotAllowed),
		Handler: d.preview,
	}
}

// checkAction validates an action for a resource: known type, params
// matching its schema (every bad field at once).
func checkAction(r *upstream.Resource, rt *upstream.Runtime, a *actionArg, path string) (*upstream.Action, []envelope.FieldError) {
	if a == nil {
		return nil, nil
	}
	act, ok := rt.Actions[a.Type]
	if !ok || act.Resource != r {
		var names []string
		for _, n := range rt.ActionNames() {
			if rt.Actions[n].Resource == r {
				names = append(names, n)
			}
		}
		return nil, []envelope.FieldError{envelope.NewFieldError(path+".type", envelope.FieldUnknownAction, names)}
	}
	return act, checkParams(act, a.Params, path+".params")
}

func checkParams(act *upstream.Action, params map[string]any, path string) []envelope.FieldError {
	schema := act.Config.Params
	if schema == nil {
		schema = map[string]any{"type": "object", "maxProperties": 0}
	}
	v, err := schemaFor("action/"+act.Name+"/"+act.SpecDigest, schema)
	if err != nil {
		return []envelope.FieldError{envelope.NewFieldError(path, envelope.FieldInvalid, nil)}
	}
	if params == nil {
		params = map[string]any{}
	}
	b, _ := json.Marshal(params)
	doc, _ := envelope.DecodeJSON(b)
	var errs []envelope.FieldError
	for _, vio := range v.Violations(doc) {
		errs = append(errs, violationErrors(path, vio, schema)...)
	}
	return errs
}

func (d *Deps) preview(ctx context.Context, call *Call) *envelope.Envelope {
	if d.Store == nil {
		return envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemInternal, "airlock runs without a store; selections are unavailable."))
	}
	var a previewArgs
	errs, bad := decodeArgs("preview_selection", previewInput, call.Raw, &a)
	if a.Compensate != "" && !bad["compensate"] {
		return d.compensate(ctx, call, a, errs)
	}
	if a.Resource == "" && !bad["resource"] {
		errs = append(errs, envelope.NewFieldError("resource", envelope.FieldRequired, "subscriptions"))
	}
	if a.Action == nil && !bad["action"] {
		errs = append(errs, envelope.NewFieldError("action", envelope.FieldRequired, actionSchema["examples"].([]any)[0]))
	}
	r, ok := d.Runtime.Resources[a.Resource]
	if !ok && !bad["resource"] && a.Resource != "" {
		errs = append(errs, envelope.NewFieldError("resource", envelope.FieldUnknownResource, d.Runtime.ResourceNames()))
	}
	if !ok {
		return invalid(errs)
	}
	var act *upstream.Action
	if !bad["action"] {
		var aerrs []envelope.FieldError
		act, aerrs = checkAction(r, d.Runtime, a.Action, "action")
		errs = append(errs, aerrs...)
	}
	if !bad["filter"] {
		errs = append(errs, r.CheckFilter(a.Filter)...)
		errs = append(errs, checkSensitive(r, filterUses(r, a.Filter))...)
	}
	if !bad["exclude"] {
		errs = append(errs, checkRules(r, a.Exclude)...)
		errs = append(errs, checkSensitive(r, ruleUses("exclude", a.Exclude))...)
	}
	if !bad["fields"] {
		errs = append(errs, checkReviewFields(r, a.Fields)...)
	}
	b, berrs := checkBudget(r, nil, a.MaxPages, a.DeadlineMS, bad)
	errs = append(errs, berrs...)
	if len(errs) > 0 || act == nil {
		return invalid(errs)
	}
	if p := selection.MayRun(act, call.Principal); p != nil {
		return envelope.ErrorEnvelope(p)
	}
	if env := coolingDown(r.Upstream, false); env != nil {
		return env
	}
	filter, warnings := effectiveFilter(r, a.Filter)
	req := selection.PreviewRequest{
		Resource: r, Action: act, Params: a.Action.Params, Filter: filter, Exclude: a.Exclude, IDs: a.IDs,
		Budget:    upstream.Budget{MaxPages: b.maxPages, PagesLimitSource: b.pagesSource, Deadline: b.deadline},
		RequestID: call.RequestID, Environment: d.Runtime.Environment, RequestedBy: clientName(call), Principal: call.Principal,
	}
	if req.Params == nil {
		req.Params = map[string]any{}
	}
	progress, stopProgress := d.startProgress(ctx, call)
	req.Progress = progress
	res, err := d.Previewer().Preview(ctx, req)
	stopProgress()
	if err != nil {
		return d.scanProblem(ctx, err)
	}
	d.Engine.Audit(ctx, selection.AuditEvent{At: d.Clock.Now(), Kind: selection.AuditDecision, SelectionID: res.Selection.ID,
		Digest: res.Selection.Digest, Actor: call.Client, Event: "preview", RequestID: call.RequestID, Principal: call.Principal.Recorded(),
		Detail: fmt.Sprintf("%s on %d %s", act.Name, res.Selection.Summary.Members, r.Name)})
	pageSize := 20
	if a.PageSize != nil {
		pageSize = *a.PageSize
	}
	return d.selectionEnvelope(ctx, res.Selection, a.Fields, pageSize, warnings)
}

// compensate previews undoing an operation.
func (d *Deps) compensate(ctx context.Context, call *Call, a previewArgs, errs []envelope.FieldError) *envelope.Envelope {
	if a.Resource != "" || a.Action != nil || a.IDs != nil || a.Filter != nil || a.Exclude != nil {
		errs = append(errs, envelope.NewFieldError("compensate", envelope.FieldInvalid, nil))
	}
	if len(errs) > 0 {
		return invalid(errs)
	}
	res, p := d.Previewer().Compensate(ctx, d.Runtime, selection.CompensationRequest{OperationID: a.Compensate, RequestID: call.RequestID,
		Environment: d.Runtime.Environment, RequestedBy: call.Client, Principal: call.Principal,
		Budget: upstream.Budget{MaxPages: config.DefaultMaxPages, PagesLimitSource: envelope.LimitAirlock, Deadline: config.DefaultDeadlineMS * time.Millisecond}})
	if p != nil {
		return envelope.ErrorEnvelope(p)
	}
	d.Engine.Audit(ctx, selection.AuditEvent{At: d.Clock.Now(), Kind: selection.AuditDecision, SelectionID: res.Selection.ID,
		Digest: res.Selection.Digest, Actor: call.Client, Event: "preview", RequestID: call.RequestID, Principal: call.Principal.Recorded(),
		Detail: "compensation of " + a.Compensate})
	pageSize := 20
	if a.PageSize != nil {
		pageSize = *a.PageSize
	}
	return d.selectionEnvelope(ctx, res.Selection, nil, pageSize, nil)
}

func checkRules(r *upstream.Resource, rules []config.RuleConfig) []envelope.FieldError {
	var errs []envelope.FieldError
	for i, rule := range rules {
		if _, ok := r.Field(rule.Field); !ok {
			errs = append(errs, envelope.NewFieldError("exclude["+strconv.Itoa(i)+"].field", envelope.FieldUnknownField, r.DefaultFields()[0]))
		}
	}
	return errs
}

func checkReviewFields(r *upstream.Resource, fields []string) []envelope.FieldError {
	allowed := map[string]bool{}
	for _, f := range r.ReviewFields() {
		allowed[f] = true
	}
	var errs []envelope.FieldError
	for i, f := range fields {
		if !allowed[f] {
			code := envelope.FieldUnknownField
			if fc, ok := r.Field(f); ok && fc.Sensitive {
				code = envelope.FieldSensitive
			}
			errs = append(errs, envelope.NewFieldError("fields["+strconv.Itoa(i)+"]", code, r.ReviewFields()))
		}
	}
	return errs
}

// selectionEnvelope renders a selection as preview_selection answers it.
func (d *Deps) selectionEnvelope(ctx context.Context, sel *selection.Selection, fields []string, pageSize int, warnings []envelope.Warning) *envelope.Envelope {
	sum := sel.Summary
	env := &envelope.Envelope{
		Scope: &envelope.Scope{Resource: sel.Resource, Environment: sel.Environment, Upstream: sel.Upstream, Filter: nonNilMap(sel.Selector.Filter),
			Visibility: d.visibility(sel.Resource), Snapshot: sum.Snapshot, Consistency: sum.Consistency},
		Coverage:          sum.Coverage,
		IncompleteReasons: append([]envelope.Reason(nil), sum.ScanReasons...),
		Warnings:          append(warnings, sum.Warnings...),
	}
	if len(env.IncompleteReasons) > 0 {
		env.Continuation = previewContinuation(sum)
	}
	members, next, _, err := d.manifestPage(ctx, sel, selection.RecordQuery{Disposition: selection.Member, Limit: pageSize}, fields, previewManifest)
	if err != nil {
		return d.internalError(ctx, "read the manifest", err)
	}
	ambiguous, _, _, err := d.manifestPage(ctx, sel, selection.RecordQuery{Disposition: selection.Ambiguous, Limit: 20}, fields, previewAmbig)
	if err != nil {
		return d.internalError(ctx, "read the ambiguous records", err)
	}
	manifest := map[string]any{"items": members, "page_size": pageSize}
	if next != "" {
		manifest["next_cursor"] = next
	}
	// Review groups and before-value distributions keep their largest
	// values; the rest is folded into one other_values group per field.
	groups, _ := fitGroups(sum.Groups, previewGroups)
	effect := make([]selection.Effect, len(sum.Effect))
	for i, e := range sum.Effect {
		kept, _ := fitGroups(map[string][]upstream.Group{e.Field: e.Before}, previewEffect/max(len(sum.Effect), 1))
		e.Before = kept[e.Field]
		effect[i] = e
	}
	data := map[string]any{
		"selection_id": sel.ID, "digest": sel.Digest, "action_digest": sel.ActionDigest,
		"expires_at": sel.ExpiresAt.UTC().Format(time.RFC3339), "kind": sel.Kind,
		"committable": sel.Committable, "committable_reasons": sel.Blockers,
		"environment": sel.Environment, "upstream": sel.Upstream, "resource": sel.Resource,
		"action": map[string]any{"type": sel.Action.Type, "params": nonNilMap(sel.Action.Params)},
		"counts": map[string]any{"members": sum.Members, "excluded": sum.Excluded, "ambiguous": sum.Ambiguous, "scanned": sum.Scanned},
		"groups": groups, "exclusions": sum.Exclusions, "effect": effect,
		"ambiguous": ambiguous, "manifest": manifest,
	}
	if len(sum.Irreversible) > 0 {
		data["cannot_be_undone"] = sum.Irreversible
	}
	if sel.Compensates != "" {
		data["compensates"] = sel.Compensates
	}
	if a, ok := d.Runtime.Actions[sel.Action.Type]; ok && d.Engine != nil {
		need := d.Engine.ApprovalRequirement(ctx, sel, a)
		ap := map[string]any{"mode": need.Mode}
		if len(need.Reasons) > 0 {
			ap["reasons"] = need.Reasons
		}
		data["approval"] = ap
	}
	env.Data = data
	return env
}

func (d *Deps) visibility(resource string) string {
	if r, ok := d.Runtime.Resources[resource]; ok {
		return r.Visibility()
	}
	return ""
}

// previewContinuation maps the scan's recovery route to what a caller of
// preview_selection can do: previews are not resumable, so a budget cut
// means "preview again with a larger budget".
func previewContinuation(sum selection.Summary) envelope.Continuation {
	kind := envelope.ContinueNone
	retryAfter := 0
	for _, r := range sum.ScanReasons {
		c, _ := envelope.Lookup(r.Code)
		switch {
		case c.Continuation == envelope.ContinueRestart:
			kind = envelope.ContinueRestart
		case c.Continuation == envelope.ContinueRetryAfter && kind != envelope.ContinueRestart:
			kind = envelope.ContinueRetryAfter
			if r.RetryAfterSeconds != nil {
				retryAfter = max(retryAfter, *r.RetryAfterSeconds)
			}
		case c.Continuation == envelope.ContinueNextCursor && (kind == envelope.ContinueNone || kind == envelope.ContinueNarrowQuery):
			kind = envelope.ContinueRetryWithDeadline
		case c.Continuation == envelope.ContinueNarrowQuery && kind == envelope.ContinueNone:
			kind = envelope.ContinueNarrowQuery
		}
	}
	cont := envelope.Continuation{Kind: kind}
	switch kind {
	case envelope.ContinueRetryAfter:
		cont.RetryAfterSeconds = envelope.Ptr(max(retryAfter, 1))
	case envelope.ContinueRetryWithDeadline:
		secs := 30
		if sum.Coverage != nil {
			secs = max(int(sum.Coverage.ElapsedMS/1000)*2, 30)
		}
		cont.MinimumSeconds = envelope.Ptr(secs)
	case envelope.ContinueNarrowQuery:
		cont.Narrow = []string{"filter"}
	}
	return cont
}

// manifestPage reads a page of records and renders it, bounded by the
// page size and by budget bytes on the wire; cut says the bytes ended the
// page before the page size did (next then continues after it).
func (d *Deps) manifestPage(ctx context.Context, sel *selection.Selection, q selection.RecordQuery, fields []string, budget int) (items []map[string]any, next string, cut bool, err error) {
	limit := q.Limit
	if limit == 0 {
		return []map[string]any{}, "", false, nil
	}
	q.Limit = limit + 1
	recs, err := d.Store.Records(ctx, sel.ID, q)
	if err != nil {
		return nil, "", false, err
	}
	more := len(recs) > limit
	recs = recs[:min(len(recs), limit)]
	out := make([]map[string]any, 0, len(recs))
	for _, r := range recs {
		out = append(out, renderRecord(r, fields))
	}
	if n := fitCount(out, budget); n < len(out) {
		out, recs, more, cut = out[:n], recs[:n], true, true
	}
	if more {
		next = d.Cursors.encode(cursorPayload{Scan: sel.ID, After: recs[len(recs)-1].ID, Fingerprint: manifestFingerprint(sel.ID, q, fields)})
	}
	return out, next, cut, nil
}

func manifestFingerprint(selID string, q selection.RecordQuery, fields []string) string {
	return fingerprint(selID, q.Disposition, q.Group, fields)
}

func renderRecord(r selection.Record, fields []string) map[string]any {
	review := r.Review
	if len(fields) > 0 {
		review = map[string]any{}
		for _, f := range fields {
			if v, ok := r.Review[f]; ok {
				review[f] = v
			}
		}
	}
	m := map[string]any{"id": r.ID, "fields": review, "before": r.Before}
	if r.Version != "" {
		m["version"] = r.Version
	}
	if r.Disposition != selection.Member {
		m["disposition"] = r.Disposition
		m["rule"] = r.Rule
		if r.Note != "" {
			m["note"] = r.Note
		}
	}
	return m
}

func clientName(call *Call) string {
	if call == nil {
		return ""
	}
	return call.Client
}
