package selection

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
)

// Approval modes.
const (
	ApprovalNone     = "none"
	ApprovalClient   = "client"
	ApprovalOperator = "operator"
)

// Approval channels.
const (
	ChannelClient     = "client"
	ChannelOperator   = "operator_cli"
	ChannelReviewPage = "review_page"
)

// DefaultApprovalTTL is how long an approval stays usable.
const DefaultApprovalTTL = 10 * time.Minute

// Requirement says whether a selection's commit needs a person's approval,
// which kind, and why (plain words for the approval screen).
type Requirement struct {
	Mode    string              `json:"mode"`
	Reasons []string            `json:"reasons,omitempty"`
	Unseen  map[string][]string `json:"unseen_categories,omitempty"`
	TTL     time.Duration       `json:"-"`
}

// Required reports whether anyone must approve.
func (r Requirement) Required() bool { return r.Mode != ApprovalNone }

// ApprovalRequirement applies the action's policy to a selection: the mode
// is required when any configured threshold triggers (or always when none
// is configured); a group value never approved before requires review even
// when the thresholds do not.
func (e *Engine) ApprovalRequirement(ctx context.Context, sel *Selection, a *upstream.Action) Requirement {
	req := Requirement{Mode: ApprovalNone, TTL: DefaultApprovalTTL}
	p := a.Config.Approval
	if p == nil {
		return req
	}
	if p.TTL > 0 {
		req.TTL = p.TTL
	}
	var reasons []string
	triggers := 0
	if p.AboveTargets > 0 {
		triggers++
		if sel.Summary.Members > p.AboveTargets {
			reasons = append(reasons, fmt.Sprintf("%d targets, more than %d", sel.Summary.Members, p.AboveTargets))
		}
	}
	if p.Destructive {
		triggers++
		if a.Config.Destructive {
			reasons = append(reasons, "the action is destructive")
		}
	}
	if len(p.Environments) > 0 {
		triggers++
		for _, env := range p.Environments {
			if env == sel.Environment {
				reasons = append(reasons, "the environment is "+env)
			}
		}
	}
	mode := p.Mode
	if mode == "" {
		mode = ApprovalNone
	}
	if mode != ApprovalNone && triggers == 0 {
		reasons = append(reasons, "the action's policy requires approval")
	}
	unseen, unreadable := e.unseenCategories(ctx, sel, a)
	if len(unseen) > 0 || len(unreadable) > 0 {
		for _, dim := range slices.Sorted(maps.Keys(unseen)) {
			reasons = append(reasons, fmt.Sprintf("%s %s never approved before for %s", dim, strings.Join(unseen[dim], ", "), a.Name))
		}
		for _, dim := range unreadable {
			reasons = append(reasons, fmt.Sprintf("the %s values approved before for %s could not be read", dim, a.Name))
		}
		if len(unseen) > 0 {
			req.Unseen = unseen
		}
		if mode == ApprovalNone {
			mode = ApprovalOperator
		}
	}
	if len(reasons) > 0 && mode != ApprovalNone {
		req.Mode, req.Reasons = mode, reasons
	}
	return req
}

// unseenCategories lists the group values of the selection's members that
// no earlier approved commit of the action had, per unknown_category
// dimension. A dimension whose memory cannot be read is listed in
// unreadable, and the cause logged: its values count as never approved.
func (e *Engine) unseenCategories(ctx context.Context, sel *Selection, a *upstream.Action) (unseen map[string][]string, unreadable []string) {
	p := a.Config.Approval
	if p == nil {
		return nil, nil
	}
	unseen = map[string][]string{}
	for _, dim := range p.UnknownGroup {
		seen, err := e.Store.ApprovedCategories(ctx, a.Name, dim)
		if err != nil {
			e.logger().Error("could not read the values approved before: each one of this selection asks for review", "action", a.Name, "dimension", dim, "err", err)
			unreadable = append(unreadable, dim)
			continue
		}
		for _, g := range sel.Summary.Groups[dim] {
			k := string(mustCanonical(g.Value))
			if !seen[k] {
				unseen[dim] = append(unseen[dim], k)
			}
		}
		sort.Strings(unseen[dim])
		if len(unseen[dim]) == 0 {
			delete(unseen, dim)
		}
	}
	return unseen, unreadable
}

// rememberCategories records the group values of an approved commit. A
// value it fails to record is asked about again at its next commit.
func (e *Engine) rememberCategories(ctx context.Context, sel *Selection, a *upstream.Action) error {
	p := a.Config.Approval
	if p == nil {
		return nil
	}
	var errs []error
	for _, dim := range p.UnknownGroup {
		var vals []string
		for _, g := range sel.Summary.Groups[dim] {
			vals = append(vals, string(mustCanonical(g.Value)))
		}
		if err := e.Store.AddApprovedCategories(ctx, a.Name, dim, vals); err != nil {
			errs = append(errs, fmt.Errorf("remember the approved values of %q: %w", dim, err))
		}
	}
	return errors.Join(errs...)
}

// gate checks the approval a commit needs and reserves it. It returns the
// approval to mark used once the operation exists.
func (e *Engine) gate(ctx context.Context, sel *Selection, a *upstream.Action, req CommitRequest) (*Approval, error) {
	need := e.ApprovalRequirement(ctx, sel, a)
	if !need.Required() && req.ApprovalID == "" {
		return nil, nil
	}
	approvals, err := e.Store.Approvals(ctx, sel.ID)
	if err != nil {
		return nil, e.internal("read approvals", err)
	}
	now := e.Clock.Now()
	if req.ApprovalID != "" {
		for _, ap := range approvals {
			if ap.ID != req.ApprovalID {
				continue
			}
			if ap.Decision != DecisionApproved || ap.Digest != sel.Digest || ap.ActionDigest != sel.ActionDigest {
				return nil, problem(envelope.ProblemApprovalMismatch, "The approval named is not an approval of this selection's digest and action.")
			}
			if ap.UsedBy != "" {
				return nil, problem(envelope.ProblemApprovalMismatch, "The approval named was used by operation "+ap.UsedBy+"; approvals are single-use.")
			}
			if !now.Before(ap.ExpiresAt) {
				return nil, problem(envelope.ProblemApprovalExpired, "")
			}
			return ap, nil
		}
		return nil, problem(envelope.ProblemApprovalMismatch, "No approval with this id belongs to this selection.")
	}
	// The latest decision about this exact pair counts.
	expired := false
	for i := len(approvals) - 1; i >= 0; i-- {
		ap := approvals[i]
		if ap.Digest != sel.Digest || ap.ActionDigest != sel.ActionDigest {
			continue
		}
		switch {
		case ap.Decision == DecisionRejected:
			return nil, problem(envelope.ProblemApprovalRejected, "The selection was rejected by "+safeWho(ap.Who)+".")
		case ap.Decision != DecisionApproved:
			continue
		case ap.UsedBy != "":
			continue
		case !now.Before(ap.ExpiresAt):
			expired = true
			continue
		}
		return ap, nil
	}
	code, detail := envelope.ProblemApprovalRequired, approvalDetail(need, sel)
	if expired {
		code, detail = envelope.ProblemApprovalExpired, "The approval of this selection expired before it was used: "+detail
	}
	p := problem(code, detail)
	p.Approval = &need
	return nil, p
}

// safeWho renders a recorded decider for a problem's detail: the parts
// airlock composed it from are sanitized already; this keeps it to
// printable words so that nothing in it reads as an instruction.
func safeWho(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 120 {
			b.WriteString("…")
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(" .:-_@'/[]", r) {
			b.WriteRune(r)
		} else {
			b.WriteRune('?')
		}
	}
	return b.String()
}

func approvalDetail(need Requirement, sel *Selection) string {
	who := "a person must approve it through the MCP client"
	if need.Mode == ApprovalOperator {
		who = "an operator must approve it outside this conversation (airlock approve " + sel.ID + ", or the review page)"
	}
	return "This commit needs approval (" + strings.Join(need.Reasons, "; ") + "): " + who + "."
}

// DecisionRequest is a person's decision about a selection.
type DecisionRequest struct {
	SelectionID      string
	Digest           string
	Decision         string
	Who              string
	Channel          string
	Acknowledgements []string
	RequestID        string
	// Principal is who decides: checked against the action's approval
	// policy (four eyes, approvers) and recorded with the decision.
	Principal Principal
	// Selection, when set, is the selection SelectionID names, as the
	// caller read it within this call: Decide does not read it again.
	Selection *Selection
}

// Decide records a person's decision about a selection and its action. An
// approval is bound to (digest, action digest), expires soon, and is used
// once; a second decision about the same pair is refused.
func (e *Engine) Decide(ctx context.Context, d DecisionRequest) (*Approval, error) {
	sel, err := e.selection(ctx, d.SelectionID, d.Selection)
	if errors.Is(err, ErrNotFound) || (err == nil && sel.State != StateReady) {
		return nil, problem(envelope.ProblemSelectionNotFound, "")
	}
	if err != nil {
		return nil, e.internal("read selection", err)
	}
	if d.Digest != "" && d.Digest != sel.Digest {
		return nil, problem(envelope.ProblemDigestMismatch, "The digest typed is not this selection's digest.")
	}
	now := e.Clock.Now()
	if !now.Before(sel.ExpiresAt) {
		return nil, problem(envelope.ProblemSelectionExpired, "The selection expired at "+sel.ExpiresAt.UTC().Format(time.RFC3339)+".")
	}
	if e.Runtime != nil {
		if a, ok := e.Runtime.Actions[sel.Action.Type]; ok && a.SpecDigest != sel.ActionSpecDigest {
			return nil, problem(envelope.ProblemSelectionStale, "")
		}
	}
	if d.Decision == DecisionApproved && !sel.Committable {
		return nil, problem(envelope.ProblemNotCommittable, "A selection that cannot be committed cannot be approved.")
	}
	if e.Runtime != nil {
		a := e.Runtime.Actions[sel.Action.Type]
		switch d.Decision {
		case DecisionApproved:
			if err := MayApprove(sel, a, d.Principal); err != nil {
				return nil, err
			}
		case DecisionRejected:
			if err := mayDecide(a, d.Principal); err != nil {
				return nil, err
			}
		}
	}
	approvals, err := e.Store.Approvals(ctx, sel.ID)
	if err != nil {
		return nil, e.internal("read approvals", err)
	}
	for _, ap := range approvals {
		if ap.Digest == sel.Digest && ap.ActionDigest == sel.ActionDigest && (ap.Decision == DecisionRejected || ap.Decision == DecisionApproved && ap.UsedBy == "" && now.Before(ap.ExpiresAt)) {
			return nil, problem(envelope.ProblemApprovalDecided, "This selection was already "+ap.Decision+" by "+safeWho(ap.Who)+".")
		}
	}
	ttl := DefaultApprovalTTL
	if e.Runtime != nil {
		if a, ok := e.Runtime.Actions[sel.Action.Type]; ok && a.Config.Approval != nil && a.Config.Approval.TTL > 0 {
			ttl = a.Config.Approval.TTL
		}
	}
	expires := now.Add(ttl)
	if sel.ExpiresAt.Before(expires) {
		expires = sel.ExpiresAt
	}
	ap := &Approval{
		ID: "apr_" + uuid.NewString(), RequestID: d.RequestID, SelectionID: sel.ID, Digest: sel.Digest, ActionDigest: sel.ActionDigest,
		TargetCount: sel.Summary.Members, Decision: d.Decision, Who: d.Who, Channel: d.Channel, Acknowledgements: d.Acknowledgements,
		CreatedAt: now, ExpiresAt: expires, Principal: d.Principal.Recorded(),
	}
	if ap.Acknowledgements == nil {
		ap.Acknowledgements = []string{}
	}
	if err := e.Store.PutApproval(ctx, ap); err != nil {
		return nil, e.internal("record approval", err)
	}
	if e.Observer != nil {
		e.Observer.Decided(d.Channel, d.Decision, now.Sub(sel.CreatedAt))
	}
	e.audit(ctx, AuditEvent{At: now, Kind: AuditDecision, SelectionID: sel.ID, Digest: sel.Digest, Actor: d.Who, Event: d.Decision,
		RequestID: d.RequestID, Detail: fmt.Sprintf("channel %s, %d targets, action %s", d.Channel, sel.Summary.Members, sel.Action.Type),
		Principal: d.Principal.Recorded()})
	return ap, nil
}

// Acknowledgements lists what a person approving the selection must
// acknowledge: evidence that is missing or effects that cannot be undone.
func Acknowledgements(sel *Selection) []string {
	var out []string
	for _, w := range sel.Summary.Warnings {
		out = append(out, string(w.Code)+": "+w.Message)
	}
	for _, x := range sel.Summary.Exclusions {
		if x.Rule == RuleNotFound && x.Count > 0 {
			out = append(out, fmt.Sprintf("%d named id(s) were not found", x.Count))
		}
	}
	if sel.Kind == KindExplicit {
		out = append(out, "the targets were named, not found by a complete scan: this selection proves nothing about records it does not list")
	}
	for _, ir := range sel.Summary.Irreversible {
		out = append(out, "cannot be undone: "+ir)
	}
	return out
}
