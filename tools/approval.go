package tools

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/signing"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/selection"
)

// ApprovalKey names the input request that asks for approval.
const ApprovalKey = "airlock_approval"

// elicitState is the round trip's state: opaque to the client, bound to the
// exact selection and action and to the principal asked, single-use, and
// signed with a key airlock generates and keeps in its store.
type elicitState struct {
	Selection    string `json:"s"`
	Digest       string `json:"d"`
	ActionDigest string `json:"a"`
	Nonce        string `json:"n"`
	Expires      int64  `json:"e"`
	// Subject is the principal asked: only its answer is taken.
	Subject string `json:"p,omitempty"`
	// For names who the state was issued to: "" for an elicitation form,
	// stateForView for an approval view. Neither takes the other's.
	For string `json:"f,omitempty"`
}

// ExpiresAt is when the state stops being accepted.
func (st elicitState) ExpiresAt() time.Time { return time.Unix(st.Expires, 0) }

// elicitSealer signs the states with the whole HMAC.
func (d *Deps) elicitSealer(ctx context.Context) (signing.Sealer, error) {
	key, err := d.key(ctx, "elicitation_key")
	if err != nil {
		return signing.Sealer{}, err
	}
	return signing.NewSealer(key, signing.FullTag), nil
}

func (d *Deps) signState(ctx context.Context, st elicitState) (string, error) {
	s, err := d.elicitSealer(ctx)
	if err != nil {
		return "", err
	}
	return s.Seal(st), nil
}

// openState verifies a returned state: signed by airlock, for this
// selection and action, issued to this kind of asker (for: "" for an
// elicitation form, stateForView for an approval view), answered by the
// principal asked, not expired, not answered before.
func (d *Deps) openState(ctx context.Context, raw string, sel *selection.Selection, who selection.Principal, requestID, issuedFor string) (*elicitState, *envelope.Problem) {
	forged := func() *envelope.Problem {
		p := envelope.NewProblem(envelope.ProblemElicitationForged, "")
		p.StateChanged = envelope.StateNone
		return p
	}
	sealer, err := d.elicitSealer(ctx)
	if err != nil {
		return nil, d.internalProblem(ctx, "read the approval key", err)
	}
	var st elicitState
	if sealer.Open(raw, d.Clock.Now(), &st) != nil ||
		st.Selection != sel.ID || st.Digest != sel.Digest || st.ActionDigest != sel.ActionDigest || st.Subject != who.Recorded().Subject || st.For != issuedFor {
		return nil, forged()
	}
	// Kept an hour past the state's expiry (replicas' clocks differ), then
	// dropped: the state is refused as expired by then.
	first, err := d.Store.UseNonce(ctx, st.Nonce, requestID, time.Unix(st.Expires, 0).Add(time.Hour), d.Clock.Now())
	if err != nil {
		return nil, d.internalProblem(ctx, "record the approval answer's use", err)
	}
	if first != requestID {
		p := envelope.NewProblem(envelope.ProblemElicitationReplayed, "")
		p.StateChanged = envelope.StateNone
		return nil, p
	}
	return &st, nil
}

// ApprovalSummary is what the person sees: where the write goes, what it
// does, to how many and which records, what was excluded, what is missing
// or cannot be undone.
func ApprovalSummary(sel *selection.Selection, need selection.Requirement, acks []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Approve %s on %d %s in %s (%s)?\n", sel.Action.Type, sel.Summary.Members, sel.Resource, sel.Environment, sel.Upstream)
	if len(sel.Action.Params) > 0 {
		p, _ := jsonvalue.Canonical(sel.Action.Params)
		fmt.Fprintf(&b, "Parameters: %s\n", p)
	}
	for _, e := range sel.Summary.Effect {
		var before []string
		for _, g := range e.Before {
			v, _ := jsonvalue.Canonical(g.Value)
			before = append(before, fmt.Sprintf("%s (%d)", v, g.Count))
		}
		after, _ := jsonvalue.Canonical(e.After)
		fmt.Fprintf(&b, "Effect: %s %s -> %s\n", e.Field, strings.Join(before, ", "), after)
	}
	for _, w := range sel.Summary.Warnings {
		if w.Code == envelope.WarnNotConditional {
			fmt.Fprintf(&b, "Not conditional: %s\n", w.Message)
		}
	}
	dims := make([]string, 0, len(sel.Summary.Groups))
	for k := range sel.Summary.Groups {
		dims = append(dims, k)
	}
	sort.Strings(dims)
	for _, dim := range dims {
		var parts []string
		for i, g := range sel.Summary.Groups[dim] {
			if i == 8 {
				parts = append(parts, "…")
				break
			}
			v, _ := jsonvalue.Canonical(g.Value)
			parts = append(parts, fmt.Sprintf("%s %d", v, g.Count))
		}
		fmt.Fprintf(&b, "By %s: %s\n", dim, strings.Join(parts, ", "))
	}
	for _, x := range sel.Summary.Exclusions {
		if x.Count == 0 {
			continue
		}
		if x.Field != "" {
			v, _ := jsonvalue.Canonical(x.Value)
			fmt.Fprintf(&b, "Excluded %d: %s %s %s (%s)\n", x.Count, x.Field, x.Op, v, x.Reason)
		} else {
			fmt.Fprintf(&b, "Excluded %d: %s\n", x.Count, x.Reason)
		}
	}
	fmt.Fprintf(&b, "Why approval: %s\n", strings.Join(need.Reasons, "; "))
	for _, a := range acks {
		fmt.Fprintf(&b, "Acknowledge: %s\n", a)
	}
	fmt.Fprintf(&b, "Selection %s, digest %s", sel.ID, sel.Digest)
	return b.String()
}

// askApproval returns the input request that asks the user, through the
// client, to approve this exact selection and action.
func (d *Deps) askApproval(ctx context.Context, call *Call, sel *selection.Selection, need selection.Requirement) (*InputRequest, *envelope.Problem) {
	if !call.CanAsk {
		p := envelope.NewProblem(envelope.ProblemClientApprovalMissing, "This commit needs approval through the MCP client ("+strings.Join(need.Reasons, "; ")+"), and this client cannot show an approval request. An operator can approve it: airlock approve "+sel.ID+".")
		p.StateChanged = envelope.StateNone
		return nil, p
	}
	acks := selection.Acknowledgements(sel)
	state, err := d.signState(ctx, elicitState{Selection: sel.ID, Digest: sel.Digest, ActionDigest: sel.ActionDigest,
		Nonce: uuid.NewString(), Expires: d.Clock.Now().Add(10 * time.Minute).Unix(), Subject: call.Principal.Recorded().Subject})
	if err != nil {
		return nil, d.internalProblem(ctx, "sign the approval request", err)
	}
	props := map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Run this action on exactly these targets."},
	}
	required := []string{"approve"}
	if len(acks) > 0 {
		props["acknowledge"] = map[string]any{"type": "boolean", "title": "I have read what is listed under Acknowledge",
			"description": strings.Join(acks, "; ")}
		required = append(required, "acknowledge")
	}
	return &InputRequest{Key: ApprovalKey, Message: ApprovalSummary(sel, need, acks), State: state,
		Schema: map[string]any{"type": "object", "properties": props, "required": required}}, nil
}

// takeAnswer records the user's answer to an approval request. It returns
// the approval when the user approved (and acknowledged what had to be);
// nil and no problem when the user approved but another call's approval of
// the same selection stands.
func (d *Deps) takeAnswer(ctx context.Context, call *Call, sel *selection.Selection) (*selection.Approval, *envelope.Problem) {
	ans := call.Answer
	if _, p := d.openState(ctx, ans.State, sel, call.Principal, call.RequestID, ""); p != nil {
		return nil, p
	}
	acks := selection.Acknowledgements(sel)
	decision := selection.DecisionCancelled
	if ans.Key == ApprovalKey {
		switch ans.Action {
		case AnswerAccept:
			approve, _ := ans.Content["approve"].(bool)
			acked, _ := ans.Content["acknowledge"].(bool)
			decision = selection.DecisionDeclined
			if approve && (len(acks) == 0 || acked) {
				decision = selection.DecisionApproved
			}
		case AnswerDecline:
			decision = selection.DecisionDeclined
		}
	}
	ap, err := d.Engine.Decide(ctx, selection.DecisionRequest{SelectionID: sel.ID, Digest: sel.Digest, Decision: decision,
		Who: call.Client, Channel: selection.ChannelClient, Acknowledgements: acks, RequestID: call.RequestID, Principal: call.Principal, Selection: sel})
	if selection.ErrorCode(err) == envelope.ProblemApprovalDecided && decision == selection.DecisionApproved {
		// A concurrent call of the same commit was approved first: the
		// commit uses that approval (or answers with its operation).
		return nil, nil
	}
	if err != nil {
		return nil, ProblemOf(err)
	}
	var p *envelope.Problem
	switch decision {
	case selection.DecisionApproved:
		return ap, nil
	case selection.DecisionDeclined:
		p = envelope.NewProblem(envelope.ProblemApprovalDeclined, "")
	default:
		p = envelope.NewProblem(envelope.ProblemApprovalCancelled, "")
	}
	p.StateChanged = envelope.StateNone
	return nil, p
}
