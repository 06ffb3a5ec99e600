package tools

import (
	"context"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

// The approval view is an HTML view a client that renders MCP Apps shows
// beside preview_selection's result (and a commit's that needs approval):
// the manifest, and Approve and Reject. Its buttons call decide_selection,
// a tool only views may call, with the signed single-use state the result
// carried beside it (AppView, never in the envelope the model reads). The
// decision lands through Engine.Decide, as an elicitation answer does:
// the policy, four eyes and the approvers are the same.

// The decisions decide_selection takes.
const (
	ViewApprove = "approve"
	ViewReject  = "reject"
)

// stateForView marks a state issued to an approval view: an elicitation
// answer cannot carry it, and decide_selection takes no other.
const stateForView = "view"

// AppView is what a client's approval view needs beside a result: which
// selection, and the signed state that lets it decide once. It travels in
// the result's _meta, which hosts give the view and keep out of the
// model's context; the envelope never holds it.
type AppView struct {
	SelectionID string `json:"selection_id"`
	Digest      string `json:"digest"`
	ExpiresAt   string `json:"expires_at"`
	// Mode is the approval the policy wants: none, client or operator.
	Mode    string   `json:"mode"`
	Reasons []string `json:"reasons,omitempty"`
	// State is the signed, single-use approval state; empty when the view
	// cannot decide (no approval needed, an operator must approve, or
	// this principal may not), and then Why says so.
	State       string   `json:"state,omitempty"`
	StateExpiry string   `json:"state_expires_at,omitempty"`
	Why         string   `json:"why,omitempty"`
	Acknowledge []string `json:"acknowledge,omitempty"`
	// Selection is the selection as preview_selection renders it, for a
	// result that does not hold it (a commit's).
	Selection any `json:"selection,omitempty"`
}

// viewFor builds the approval view's data for sel, as the calling
// principal may use it.
func (d *Deps) viewFor(ctx context.Context, call *Call, sel *selection.Selection) (*AppView, *envelope.Problem) {
	v := &AppView{SelectionID: sel.ID, Digest: sel.Digest, ExpiresAt: sel.ExpiresAt.UTC().Format(time.RFC3339), Mode: selection.ApprovalNone}
	act, ok := d.Runtime.Actions[sel.Action.Type]
	if !ok || d.Engine == nil {
		return v, nil
	}
	need := d.Engine.ApprovalRequirement(ctx, sel, act)
	v.Mode, v.Reasons = need.Mode, need.Reasons
	switch {
	case need.Mode == selection.ApprovalNone:
		v.Why = "No approval is needed for this commit."
		return v, nil
	case need.Mode == selection.ApprovalOperator:
		v.Why = "An operator must approve this outside the conversation: airlock approve " + sel.ID + ", or the review page."
		return v, nil
	case !sel.Committable:
		v.Why = "This selection cannot be committed, so it cannot be approved."
		return v, nil
	}
	if err := selection.MayApprove(sel, act, call.Principal); err != nil {
		v.Why = ProblemOf(err).Detail
		return v, nil
	}
	exp := d.Clock.Now().Add(10 * time.Minute)
	if sel.ExpiresAt.Before(exp) {
		exp = sel.ExpiresAt
	}
	state, err := d.signState(ctx, elicitState{Selection: sel.ID, Digest: sel.Digest, ActionDigest: sel.ActionDigest,
		Nonce: uuid.NewString(), Expires: exp.Unix(), Subject: call.Principal.Recorded().Subject, For: stateForView})
	if err != nil {
		return nil, d.internalProblem(ctx, "sign the approval view's state", err)
	}
	v.State, v.StateExpiry, v.Acknowledge = state, exp.UTC().Format(time.RFC3339), selection.Acknowledgements(sel)
	return v, nil
}

type decideArgs struct {
	SelectionID string `json:"selection_id"`
	Digest      string `json:"digest" jsonschema:"The digest the view shows."`
	Decision    string `json:"decision"`
	State       string `json:"state" jsonschema:"The signed state the view received."`
	Acknowledge bool   `json:"acknowledge,omitempty" jsonschema:"The person read what the view lists to acknowledge."`
}

func (decideArgs) schema(s *jsonschema.Schema) {
	p := s.Properties
	p["selection_id"].MinLength = jsonschema.Ptr(1)
	p["digest"].Pattern = digestPattern
	enum(p["decision"], ViewApprove, ViewReject)
	p["state"].MinLength = jsonschema.Ptr(1)
}

var decideInput = generate[decideArgs]()

// decisionData is decide_selection's data: the decision recorded.
type decisionData struct {
	SelectionID string `json:"selection_id"`
	Digest      string `json:"digest"`
	Decision    string `json:"decision"`
	ApprovalID  string `json:"approval_id"`
	ExpiresAt   string `json:"expires_at"`
}

func (decisionData) schema(s *jsonschema.Schema) {
	enum(prop(s, "decision"), selection.DecisionApproved, selection.DecisionRejected)
}

// decideTraits: the tool records a decision in airlock's store and
// changes nothing upstream.
var decideTraits = Traits{Name: DecideSelectionName, Hints: Hints{ReadOnly: No, Destructive: No, Idempotent: No, OpenWorld: No}, Scope: ScopeWrite, WritePath: true}

// DecideSelection is the tool the approval view calls (and only it: a
// server lists it to clients that render views, marked for views only).
// It is not in the catalog of the model's tools.
func DecideSelection(d *Deps) Spec {
	return Spec{
		Traits:      decideTraits,
		Title:       "Approve or reject a selection (approval view only)",
		Description: `Called by airlock's approval view when the person clicks Approve or Reject. Needs the signed state only the view receives.`,
		Input:       decideInput,
		Data:        generate[decisionData](),
		Problems: []envelope.ProblemCode{envelope.ProblemSelectionNotFound, envelope.ProblemSelectionExpired, envelope.ProblemSelectionStale,
			envelope.ProblemStoreUnavailable, envelope.ProblemDigestMismatch, envelope.ProblemNotCommittable, envelope.ProblemApprovalDecided,
			envelope.ProblemElicitationForged, envelope.ProblemElicitationReplayed,
			envelope.ProblemApprovalByRequester, envelope.ProblemApproverNotAllowed},
		Handler: d.decide,
	}
}

func (d *Deps) decide(ctx context.Context, call *Call) *envelope.Envelope {
	var a decideArgs
	errs, _ := decodeArgs(DecideSelectionName, decideInput, call.Raw, &a)
	if len(errs) > 0 {
		return invalidWrite(errs)
	}
	sel, fail := d.loadSelection(ctx, a.SelectionID, call.Principal)
	if fail != nil {
		fail.Problem.StateChanged = envelope.StateNone
		return fail
	}
	refuse := func(p *envelope.Problem) *envelope.Envelope {
		p.StateChanged = envelope.StateNone
		return envelope.ErrorEnvelope(p)
	}
	if !d.Clock.Now().Before(sel.ExpiresAt) {
		// Said before the state is read: an expired selection's state has
		// expired with it, and the truth is the selection's.
		return refuse(envelope.NewProblem(envelope.ProblemSelectionExpired, "The selection expired at "+sel.ExpiresAt.UTC().Format(time.RFC3339)+": preview again."))
	}
	if a.Digest != sel.Digest {
		return refuse(envelope.NewProblem(envelope.ProblemDigestMismatch, "The digest is not this selection's digest: the view shows another selection."))
	}
	acks := selection.Acknowledgements(sel)
	if a.Decision == ViewApprove && len(acks) > 0 && !a.Acknowledge {
		return invalidWrite([]envelope.FieldError{envelope.NewFieldError("acknowledge", envelope.FieldRequired, true)})
	}
	if _, p := d.openState(ctx, a.State, sel, call.Principal, call.RequestID, stateForView); p != nil {
		return refuse(p)
	}
	decision := selection.DecisionRejected
	if a.Decision == ViewApprove {
		decision = selection.DecisionApproved
	}
	ap, err := d.Engine.Decide(ctx, selection.DecisionRequest{SelectionID: sel.ID, Digest: a.Digest, Decision: decision,
		Who: "approval view in " + call.Client, Channel: selection.ChannelClient, Acknowledgements: acks, RequestID: call.RequestID, Principal: call.Principal, Selection: sel})
	if err != nil {
		return refuse(ProblemOf(err))
	}
	return &envelope.Envelope{Data: &decisionData{SelectionID: sel.ID, Digest: sel.Digest, Decision: ap.Decision, ApprovalID: ap.ID,
		ExpiresAt: ap.ExpiresAt.UTC().Format(time.RFC3339)}}
}

// IsAppOnly reports whether the named tool is for approval views only.
func IsAppOnly(name string) bool { return slices.Contains([]string{DecideSelectionName}, name) }
