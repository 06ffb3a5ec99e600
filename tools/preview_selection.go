package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

type actionArg struct {
	Type   string         `json:"type" jsonschema:"Action name."`
	Params map[string]any `json:"params,omitempty"`
}

func (actionArg) schema(s *jsonschema.Schema) {
	s.Examples = []any{map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}}
	prop(s, "type").MinLength = jsonschema.Ptr(1)
}

type previewArgs struct {
	Resource   string              `json:"resource,omitempty" jsonschema:"Resource name."`
	Filter     map[string]any      `json:"filter,omitempty" jsonschema:"As in search_all."`
	Exclude    []config.RuleConfig `json:"exclude,omitempty" jsonschema:"Exclusions, each counted."`
	Action     *actionArg          `json:"action,omitempty"`
	IDs        []string            `json:"ids,omitempty" jsonschema:"Targets by id, not a scan."`
	Fields     []string            `json:"fields,omitempty" jsonschema:"Manifest review fields."`
	PageSize   *int                `json:"page_size,omitempty" jsonschema:"Manifest size (default 20)."`
	MaxPages   *int                `json:"max_pages,omitempty" jsonschema:"Most upstream pages read."`
	DeadlineMS *int                `json:"deadline_ms,omitempty" jsonschema:"Time budget (at most 120000)."`
	Compensate string              `json:"compensate,omitempty" jsonschema:"Operation to undo instead."`
}

func (previewArgs) schema(s *jsonschema.Schema) {
	p := s.Properties
	p["resource"].MinLength, p["resource"].Examples = jsonschema.Ptr(1), []any{"subscriptions"}
	p["filter"].AdditionalProperties = filterValue()
	p["filter"].Examples = []any{map[string]any{"status": "past_due", "region": "eu"}}
	ex := p["exclude"]
	ex.MaxItems = jsonschema.Ptr(50)
	ex.Examples = []any{[]any{map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"}}}
	rule := ex.Items
	rule.Required = []string{"field", "op", "value", "reason"}
	rule.Properties["field"].MinLength = jsonschema.Ptr(1)
	enum(rule.Properties["op"], "eq", "ne", "in", "not_in", "contains", "not_contains", "gt", "gte", "lt", "lte")
	rule.Properties["value"] = filterValue()
	reason := rule.Properties["reason"]
	reason.MinLength, reason.MaxLength, reason.Description = jsonschema.Ptr(3), jsonschema.Ptr(200), "Shown to the user."
	p["ids"].Items.MinLength, p["ids"].MaxItems = jsonschema.Ptr(1), jsonschema.Ptr(1000)
	p["ids"].Examples = []any{[]any{"sub_00104", "sub_00219"}}
	p["fields"].Examples = []any{[]any{"id", "customer_name"}}
	p["page_size"].Minimum, p["page_size"].Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(200.0)
	p["page_size"].Examples = []any{20}
	p["compensate"].MinLength, p["compensate"].Examples = jsonschema.Ptr(1), []any{"op_…"}
	setBudget(s)
}

var previewInput = generate[previewArgs]()

// selectionData is preview_selection's data: the frozen selection, what
// it counts and changes, its first manifest page, and what committing it
// takes.
type selectionData struct {
	SelectionID        string                      `json:"selection_id"`
	Digest             string                      `json:"digest"`
	ActionDigest       string                      `json:"action_digest"`
	ExpiresAt          string                      `json:"expires_at"`
	Kind               string                      `json:"kind"`
	Committable        bool                        `json:"committable"`
	CommittableReasons []envelope.Reason           `json:"committable_reasons"`
	Environment        string                      `json:"environment"`
	Upstream           string                      `json:"upstream"`
	Resource           string                      `json:"resource"`
	Action             selection.Action            `json:"action"`
	Counts             previewCounts               `json:"counts"`
	Groups             map[string][]upstream.Group `json:"groups"`
	Exclusions         []selection.ExclusionCount  `json:"exclusions"`
	Effect             []selection.Effect          `json:"effect"`
	Ambiguous          []manifestRecord            `json:"ambiguous"`
	Manifest           manifestList                `json:"manifest"`
	CannotBeUndone     []string                    `json:"cannot_be_undone,omitempty"`
	Compensates        string                      `json:"compensates,omitempty"`
	Approval           *approvalNeed               `json:"approval,omitempty"`
}

func (selectionData) schema(s *jsonschema.Schema) {
	prop(s, "digest").Pattern = digestPattern
	prop(s, "action_digest").Pattern = digestPattern
	enum(prop(s, "kind"), selection.KindScope, selection.KindExplicit)
}

type previewCounts struct {
	Members   int `json:"members"`
	Excluded  int `json:"excluded"`
	Ambiguous int `json:"ambiguous"`
	Scanned   int `json:"scanned"`
}

// manifestList is a page of member records.
type manifestList struct {
	Items      []manifestRecord `json:"items"`
	PageSize   int              `json:"page_size"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

// manifestRecord is one record of a selection as a reviewer reads it: its
// review fields and before-values (the upstream's values), and why it is
// not a member when it is not.
type manifestRecord struct {
	ID          string         `json:"id"`
	Fields      map[string]any `json:"fields"`
	Before      map[string]any `json:"before"`
	Version     string         `json:"version,omitempty"`
	Disposition string         `json:"disposition,omitempty"`
	// Rule is the exclusion rule's index (of excluded records).
	Rule *int   `json:"rule,omitempty"`
	Note string `json:"note,omitempty"`
}

func (manifestRecord) schema(s *jsonschema.Schema) {
	enum(prop(s, "disposition"), selection.Excluded, selection.Ambiguous)
}

// approvalNeed is who must approve a commit, and why.
type approvalNeed struct {
	Mode    string   `json:"mode"`
	Reasons []string `json:"reasons,omitempty"`
}

func (approvalNeed) schema(s *jsonschema.Schema) {
	enum(prop(s, "mode"), selection.ApprovalNone, selection.ApprovalClient, selection.ApprovalOperator)
}

// hasAction reports whether a commit can run an action on r.
func hasAction(rt *upstream.Runtime, r *upstream.Resource) bool {
	for _, a := range rt.Actions {
		if a.Resource == r {
			return true
		}
	}
	return false
}

// previewTraits are the tool's traits, in the catalog.
var previewTraits = Traits{Name: PreviewSelectionName, Hints: Hints{ReadOnly: No, Destructive: No, Idempotent: No, OpenWorld: Yes}, Scope: ScopeWrite,
	WritePath: true, Tasks: AlwaysTask}

// PreviewSelection is the preview_selection tool.
func PreviewSelection(d *Deps) Spec {
	return Spec{
		Traits:      previewTraits,
		Title:       "Preview and freeze the targets of a bulk action",
		Description: `Freeze one action's exact targets (scan or ids, exclusions, precondition) with counts, effect and manifest. Show them to the user; commit with selection_id, digest as expected_digest and the same action. Incomplete scans never commit.`,
		Input:       resourceSchema(previewInput, d.Runtime, "", false, func(r *upstream.Resource) bool { return hasAction(d.Runtime, r) }),
		Data:        generate[selectionData](),
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
	errs, bad := decodeArgs(PreviewSelectionName, previewInput, call.Raw, &a)
	if a.Compensate != "" && !bad["compensate"] {
		return d.compensate(ctx, call, a, errs)
	}
	if a.Resource == "" && !bad["resource"] {
		errs = append(errs, envelope.NewFieldError("resource", envelope.FieldRequired, "subscriptions"))
	}
	if a.Action == nil && !bad["action"] {
		errs = append(errs, envelope.NewFieldError("action", envelope.FieldRequired, exampleAt(previewInput, "action")))
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
		typed, ferrs := r.TypedFilter(a.Filter)
		errs = append(errs, ferrs...)
		if a.IDs == nil {
			// Named ids are read one by one, never listed.
			errs = append(errs, r.CheckListFilter(typed)...)
		}
		errs = append(errs, checkSensitive(r, filterUses(r, a.Filter))...)
		if a.Filter != nil {
			a.Filter = typed
		}
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
	if err := selection.MayRun(act, call.Principal); err != nil {
		return envelope.ErrorEnvelope(ProblemOf(err))
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
	return d.withView(ctx, call, res.Selection, d.selectionEnvelope(ctx, res.Selection, a.Fields, pageSize, warnings))
}

// withView sets the approval view's data beside a selection's envelope for
// a client that renders the view.
func (d *Deps) withView(ctx context.Context, call *Call, sel *selection.Selection, env *envelope.Envelope) *envelope.Envelope {
	if !call.Apps || env.Problem != nil {
		return env
	}
	v, p := d.viewFor(ctx, call, sel)
	if p != nil {
		return envelope.ErrorEnvelope(p)
	}
	call.View = v
	return env
}

// compensate previews undoing an operation.
func (d *Deps) compensate(ctx context.Context, call *Call, a previewArgs, errs []envelope.FieldError) *envelope.Envelope {
	if a.Resource != "" || a.Action != nil || a.IDs != nil || a.Filter != nil || a.Exclude != nil {
		errs = append(errs, envelope.NewFieldError("compensate", envelope.FieldInvalid, nil))
	}
	if len(errs) > 0 {
		return invalid(errs)
	}
	res, err := d.Previewer().Compensate(ctx, d.Runtime, selection.CompensationRequest{OperationID: a.Compensate, RequestID: call.RequestID,
		Environment: d.Runtime.Environment, RequestedBy: call.Client, Principal: call.Principal,
		Budget: upstream.Budget{MaxPages: config.DefaultMaxPages, PagesLimitSource: envelope.LimitAirlock, Deadline: config.DefaultDeadlineMS * time.Millisecond}})
	if err != nil {
		return envelope.ErrorEnvelope(ProblemOf(err))
	}
	d.Engine.Audit(ctx, selection.AuditEvent{At: d.Clock.Now(), Kind: selection.AuditDecision, SelectionID: res.Selection.ID,
		Digest: res.Selection.Digest, Actor: call.Client, Event: "preview", RequestID: call.RequestID, Principal: call.Principal.Recorded(),
		Detail: "compensation of " + a.Compensate})
	pageSize := 20
	if a.PageSize != nil {
		pageSize = *a.PageSize
	}
	return d.withView(ctx, call, res.Selection, d.selectionEnvelope(ctx, res.Selection, nil, pageSize, nil))
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
		Scope: &envelope.Scope{Resource: sel.Resource, Environment: sel.Environment, Upstream: sel.Upstream, Filter: orEmpty(sel.Selector.Filter),
			Visibility: d.visibility(sel.Resource), Snapshot: sum.Snapshot, Consistency: sum.Consistency, Search: d.searchScope(sel.Resource, sel.Selector.Filter)},
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
	manifest := manifestList{Items: members, PageSize: pageSize, NextCursor: next}
	// Review groups and before-value distributions keep their largest
	// values; the rest is folded into one other_values group per field.
	groups, _ := fitGroups(sum.Groups, previewGroups)
	effect := make([]selection.Effect, len(sum.Effect))
	for i, e := range sum.Effect {
		kept, _ := fitGroups(map[string][]upstream.Group{e.Field: e.Before}, previewEffect/max(len(sum.Effect), 1))
		e.Before = kept[e.Field]
		effect[i] = e
	}
	data := &selectionData{
		SelectionID: sel.ID, Digest: sel.Digest, ActionDigest: sel.ActionDigest,
		ExpiresAt: sel.ExpiresAt.UTC().Format(time.RFC3339), Kind: sel.Kind,
		Committable: sel.Committable, CommittableReasons: sel.Blockers,
		Environment: sel.Environment, Upstream: sel.Upstream, Resource: sel.Resource,
		Action: selection.Action{Type: sel.Action.Type, Params: orEmpty(sel.Action.Params)},
		Counts: previewCounts{Members: sum.Members, Excluded: sum.Excluded, Ambiguous: sum.Ambiguous, Scanned: sum.Scanned},
		Groups: groups, Exclusions: sum.Exclusions, Effect: effect,
		Ambiguous: ambiguous, Manifest: manifest,
		CannotBeUndone: sum.Irreversible, Compensates: sel.Compensates,
	}
	if a, ok := d.Runtime.Actions[sel.Action.Type]; ok && d.Engine != nil {
		need := d.Engine.ApprovalRequirement(ctx, sel, a)
		data.Approval = &approvalNeed{Mode: need.Mode, Reasons: need.Reasons}
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

// searchScope names the upstream searches of a selection's filter (nil
// when the resource is gone or has none).
func (d *Deps) searchScope(resource string, filter map[string]any) *envelope.ScopeSearch {
	if r, ok := d.Runtime.Resources[resource]; ok {
		return r.SearchScope(filter)
	}
	return nil
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
func (d *Deps) manifestPage(ctx context.Context, sel *selection.Selection, q selection.RecordQuery, fields []string, budget int) (items []manifestRecord, next string, cut bool, err error) {
	limit := q.Limit
	if limit == 0 {
		return []manifestRecord{}, "", false, nil
	}
	q.Limit = limit + 1
	recs, err := d.Store.Records(ctx, sel.ID, q)
	if err != nil {
		return nil, "", false, err
	}
	more := len(recs) > limit
	recs = recs[:min(len(recs), limit)]
	out := make([]manifestRecord, 0, len(recs))
	for _, r := range recs {
		out = append(out, renderRecord(r, fields))
	}
	if n := fitCount(out, budget); n < len(out) {
		out, recs, more, cut = out[:n], recs[:n], true, true
	}
	if more {
		mq := &manifestQuery{Disposition: q.Disposition, Fields: fields}
		for k, v := range q.Group {
			if mq.Group == nil {
				mq.Group = map[string]json.RawMessage{}
			}
			mq.Group[k] = json.RawMessage(v)
		}
		next = d.Cursors.encode(cursorPayload{Scan: sel.ID, After: recs[len(recs)-1].ID, Fingerprint: manifestFingerprint(sel.ID, q, fields), Q: mq})
	}
	return out, next, cut, nil
}

func manifestFingerprint(selID string, q selection.RecordQuery, fields []string) string {
	return fingerprint(selID, q.Disposition, q.Group, fields)
}

func renderRecord(r selection.Record, fields []string) manifestRecord {
	review := r.Review
	if len(fields) > 0 {
		review = map[string]any{}
		for _, f := range fields {
			if v, ok := r.Review[f]; ok {
				review[f] = v
			}
		}
	}
	m := manifestRecord{ID: r.ID, Fields: review, Before: r.Before, Version: r.Version}
	if r.Disposition != selection.Member {
		m.Disposition, m.Rule, m.Note = r.Disposition, envelope.Ptr(r.Rule), r.Note
	}
	return m
}

func clientName(call *Call) string {
	if call == nil {
		return ""
	}
	return call.Client
}
