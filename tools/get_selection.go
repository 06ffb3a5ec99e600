package tools

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

type getSelectionArgs struct {
	SelectionID string         `json:"selection_id" jsonschema:"From preview_selection."`
	Cursor      string         `json:"cursor,omitempty" jsonschema:"Next page's cursor."`
	PageSize    *int           `json:"page_size,omitempty" jsonschema:"Default 50."`
	Disposition string         `json:"disposition,omitempty" jsonschema:"Default: member."`
	Group       map[string]any `json:"group,omitempty" jsonschema:"One group, e.g. {\"region\":\"eu\"}."`
	Fields      []string       `json:"fields,omitempty" jsonschema:"Review fields."`
}

func (getSelectionArgs) schema(s *jsonschema.Schema) {
	p := s.Properties
	p["selection_id"].MinLength, p["selection_id"].Examples = jsonschema.Ptr(1), []any{"sel_…"}
	p["cursor"].MinLength, p["cursor"].Examples = jsonschema.Ptr(1), []any{"<manifest.next_cursor>"}
	pageSize(p["page_size"])
	enum(p["disposition"], selection.Member, selection.Excluded, selection.Ambiguous)
	p["disposition"].Examples = []any{selection.Member}
	p["group"].Examples = []any{map[string]any{"region": "eu"}}
	p["fields"].Examples = []any{[]any{"id", "customer_name"}}
}

var getSelectionInput = generate[getSelectionArgs]()

// recordsData is get_selection's data: a page of one disposition's
// records and the selection they belong to.
type recordsData struct {
	SelectionID  string           `json:"selection_id"`
	Digest       string           `json:"digest"`
	ActionDigest string           `json:"action_digest"`
	Kind         string           `json:"kind"`
	ExpiresAt    string           `json:"expires_at"`
	Expired      bool             `json:"expired"`
	Committable  bool             `json:"committable"`
	Disposition  string           `json:"disposition"`
	Items        []manifestRecord `json:"items"`
	Counts       recordCounts     `json:"counts"`
}

type recordCounts struct {
	Members   int `json:"members"`
	Excluded  int `json:"excluded"`
	Ambiguous int `json:"ambiguous"`
}

func (recordsData) schema(s *jsonschema.Schema) {
	prop(s, "digest").Pattern = digestPattern
	prop(s, "action_digest").Pattern = digestPattern
	enum(prop(s, "kind"), selection.KindScope, selection.KindExplicit)
	enum(prop(s, "disposition"), selection.Member, selection.Excluded, selection.Ambiguous)
}

// getSelectionTraits are the tool's traits, in the catalog.
var getSelectionTraits = Traits{Name: GetSelectionName, Hints: Hints{ReadOnly: Yes, Destructive: No, Idempotent: Yes, OpenWorld: No}, Scope: ScopeRead}

// GetSelection is the get_selection tool.
func GetSelection(d *Deps) Spec {
	return Spec{
		Traits:      getSelectionTraits,
		Title:       "Page through a frozen selection",
		Description: `Page through a frozen selection's members, excluded or ambiguous records. complete:true on the last page.`,
		Input:       advertised(getSelectionInput),
		Data:        generate[recordsData](),
		Problems:    []envelope.ProblemCode{envelope.ProblemSelectionNotFound, envelope.ProblemStoreUnavailable},
		Handler:     d.getSelection,
	}
}

// loadSelection reads a selection that who may read: one made by another
// principal, who may not, answers SELECTION_NOT_FOUND as an unknown id
// does.
func (d *Deps) loadSelection(ctx context.Context, id string, who selection.Principal) (*selection.Selection, *envelope.Envelope) {
	if d.Store == nil {
		return nil, envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemInternal, "airlock runs without a store; selections are unavailable."))
	}
	sel, err := d.Store.Selection(ctx, id)
	if errors.Is(err, selection.ErrNotFound) {
		return nil, envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemSelectionNotFound, ""))
	}
	if err != nil {
		return nil, d.internalError(ctx, "read the selection", err)
	}
	if d.Engine != nil && !d.Engine.MayReadSelection(who, sel) {
		return nil, envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemSelectionNotFound, ""))
	}
	return sel, nil
}

func (d *Deps) getSelection(ctx context.Context, call *Call) *envelope.Envelope {
	var a getSelectionArgs
	errs, bad := decodeArgs(GetSelectionName, getSelectionInput, call.Raw, &a)
	if len(errs) > 0 && bad["selection_id"] {
		return invalid(errs)
	}
	sel, fail := d.loadSelection(ctx, a.SelectionID, call.Principal)
	if fail != nil {
		return fail
	}
	if a.Cursor != "" && !bad["cursor"] {
		// A cursor continues the query it was issued for: what the
		// caller leaves out is taken from it.
		if p, state := d.Cursors.decode(a.Cursor); state == cursorOK && p.Q != nil {
			if a.Disposition == "" && !bad["disposition"] {
				a.Disposition = p.Q.Disposition
			}
			if a.Group == nil && !bad["group"] && len(p.Q.Group) > 0 {
				a.Group = map[string]any{}
				for k, raw := range p.Q.Group {
					v, err := envelope.DecodeJSON(raw)
					if err != nil {
						continue // the fingerprint below refuses the cursor
					}
					a.Group[k] = v
				}
			}
			if a.Fields == nil && !bad["fields"] {
				a.Fields = p.Q.Fields
			}
		}
	}
	r := d.Runtime.Resources[sel.Resource]
	if r != nil && !bad["fields"] {
		errs = append(errs, checkReviewFields(r, a.Fields)...)
	}
	q := selection.RecordQuery{Disposition: a.Disposition, Limit: 50, Group: map[string]string{}}
	if q.Disposition == "" {
		q.Disposition = selection.Member
	}
	if a.PageSize != nil {
		q.Limit = *a.PageSize
	}
	if r != nil && !bad["group"] {
		var uses []queryUse
		for _, k := range slices.Sorted(maps.Keys(a.Group)) {
			uses = append(uses, queryUse{path: "group." + k, field: k})
		}
		errs = append(errs, checkSensitive(r, uses)...)
	}
	for k, v := range a.Group {
		if r != nil {
			if fc, ok := r.Field(k); ok && fc.Sensitive && !fc.Queryable {
				continue // refused above
			}
		}
		if _, ok := sel.Summary.Groups[k]; !ok {
			errs = append(errs, envelope.NewFieldError("group."+k, envelope.FieldUnknownField, slices.Sorted(maps.Keys(sel.Summary.Groups))))
			continue
		}
		b, err := jsonvalue.Canonical(groupValue(sel.Summary.Groups[k], v))
		if err != nil {
			errs = append(errs, envelope.NewFieldError("group."+k, envelope.FieldType, nil))
			continue
		}
		q.Group[k] = string(b)
	}
	if a.Cursor != "" && !bad["cursor"] {
		p, state := d.Cursors.decode(a.Cursor)
		switch {
		case state != cursorOK:
			errs = append(errs, envelope.NewFieldError("cursor", envelope.FieldCursorTampered, nil))
		case p.Scan != sel.ID || p.Fingerprint != manifestFingerprint(sel.ID, q, a.Fields):
			errs = append(errs, envelope.NewFieldError("cursor", envelope.FieldCursorMismatch, nil))
		default:
			q.After = p.After
		}
	}
	if len(errs) > 0 {
		return invalid(errs)
	}
	items, next, cut, err := d.manifestPage(ctx, sel, q, a.Fields, pageBudget)
	if err != nil {
		return d.internalError(ctx, "read the manifest", err)
	}
	env := &envelope.Envelope{
		Scope: &envelope.Scope{Resource: sel.Resource, Environment: sel.Environment, Upstream: sel.Upstream, Filter: orEmpty(sel.Selector.Filter),
			Visibility: d.visibility(sel.Resource), Snapshot: sel.Summary.Snapshot, Consistency: sel.Summary.Consistency, Search: d.searchScope(sel.Resource, sel.Selector.Filter)},
		Data: &recordsData{
			SelectionID: sel.ID, Digest: sel.Digest, ActionDigest: sel.ActionDigest, Kind: sel.Kind,
			ExpiresAt: sel.ExpiresAt.UTC().Format(time.RFC3339), Expired: !d.Clock.Now().Before(sel.ExpiresAt),
			Committable: sel.Committable, Disposition: q.Disposition, Items: items,
			Counts: recordCounts{Members: sel.Summary.Members, Excluded: sel.Summary.Excluded, Ambiguous: sel.Summary.Ambiguous},
		},
	}
	for _, w := range sel.Summary.Warnings {
		if w.Code == envelope.WarnNotConditional {
			// What a person deciding from the manifest must know of how
			// its writes are made.
			env.Warnings = append(env.Warnings, w)
		}
	}
	if next != "" {
		env.IncompleteReasons = []envelope.Reason{envelope.NewReason(envelope.MorePagesAvailable)}
		env.Continuation = envelope.Continuation{Kind: envelope.ContinueNextCursor, Cursor: next}
	}
	if cut {
		// The page ended before page_size: the response budget did.
		rs := envelope.NewReason(envelope.ResultLimitReached)
		rs.Limit, rs.LimitSource = envelope.Ptr(pageBudget), envelope.LimitAirlock
		env.IncompleteReasons = append(env.IncompleteReasons, rs)
	}
	return env
}

// groupValue is the group a caller names with v: v itself, or, for a
// string, the number airlock handed out as that string because a double
// would round it (envelope.IJSON), when the groups hold that number and
// not the string itself.
func groupValue(groups []upstream.Group, v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	var number any
	for _, g := range groups {
		if g.Value == s {
			return v
		}
		if n, isNum := g.Value.(json.Number); isNum && string(n) == s && !jsonvalue.Interoperable(s) {
			number = n
		}
	}
	if number == nil {
		return v
	}
	return number
}
