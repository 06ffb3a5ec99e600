package selection

import (
	"slices"
	"strings"
	"unicode"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
)

// Principal is who made a request: the subject a credential authenticated
// and the client it used. Every selection, approval, operation and audit
// event records one (subject and client id only; groups and scopes are
// what the request carried, used by policy and never stored).
type Principal struct {
	Subject  string `json:"subject"`
	ClientID string `json:"client_id,omitempty"`
	// Groups and Scopes are an OAuth access token's; empty for the
	// principals of the other channels.
	Groups []string `json:"-"`
	Scopes []string `json:"-"`
	// OAuth says the subject was authenticated by an access token: only
	// such a principal is bound by an action's or approval's principals
	// restriction (the others, local and static-token, hold the whole
	// server already).
	OAuth bool `json:"-"`
}

// The subjects of the principals that no access token names.
const (
	// SubjectLocal is whoever reaches airlock without a credential: over
	// stdio, at a terminal (airlock approve), or on a loopback listener
	// without a token.
	SubjectLocal = "local"
	// SubjectStaticToken is whoever presents the shared bearer token
	// (AIRLOCK_HTTP_TOKEN): one principal, however many people hold it.
	SubjectStaticToken = "static-token"
	// SubjectReviewToken is whoever presents the review page's own token
	// (AIRLOCK_REVIEW_TOKEN).
	SubjectReviewToken = "review-token"
	// SubjectUnrecorded is what a record written without a principal (by
	// an airlock before principals, or a library caller that gave none)
	// reads as: never empty, and never mistaken for a known principal.
	SubjectUnrecorded = "unrecorded"
)

// ScopeOperator is the OAuth scope that reads every selection and
// operation, whoever made it, as an operator at the review page does.
const ScopeOperator = "airlock:operator"

// MayRead reports whether p may read a record the owners made (a
// selection's previewer, an operation's committer): p is not an OAuth
// principal (stdio, the shared token and the local operator hold the whole
// server), is one of the owners, holds ScopeOperator, or is among the
// approvers the action's policy names (nil: none). Anyone else is told the
// record does not exist, so that its id cannot be probed.
func (p Principal) MayRead(approvers *config.PrincipalsConfig, owners ...Principal) bool {
	if !p.OAuth || slices.Contains(p.Scopes, ScopeOperator) {
		return true
	}
	for _, o := range owners {
		if p.Same(o) {
			return true
		}
	}
	return approvers != nil && p.Allowed(approvers)
}

// approversOf is the approvers restriction of the action a record is for
// (nil when the action is unknown or names none).
func approversOf(rt *upstream.Runtime, action string) *config.PrincipalsConfig {
	if rt == nil {
		return nil
	}
	a, ok := rt.Actions[action]
	if !ok || a.Config.Approval == nil {
		return nil
	}
	return a.Config.Approval.Approvers
}

// MayReadSelection reports whether p may read sel (see MayRead).
func (e *Engine) MayReadSelection(p Principal, sel *Selection) bool {
	return p.MayRead(approversOf(e.Runtime, sel.Action.Type), sel.Principal)
}

// MayReadOperation reports whether p may read op: its committer, its
// selection's previewer (sel, when known) and the approvers may (see
// MayRead).
func (e *Engine) MayReadOperation(p Principal, op *Operation, sel *Selection) bool {
	owners := []Principal{op.Principal}
	if sel != nil {
		owners = append(owners, sel.Principal)
	}
	return p.MayRead(approversOf(e.Runtime, op.Action.Type), owners...)
}

// Recorded is p as a store records it: an empty subject is
// SubjectUnrecorded, and both values are kept printable and bounded.
func (p Principal) Recorded() Principal {
	out := Principal{Subject: printable(p.Subject, 256), ClientID: printable(p.ClientID, 256)}
	if out.Subject == "" {
		out.Subject = SubjectUnrecorded
	}
	return out
}

// String renders p for people: "subject (client)".
func (p Principal) String() string {
	r := p.Recorded()
	if r.ClientID == "" || r.ClientID == r.Subject {
		return r.Subject
	}
	return r.Subject + " (" + r.ClientID + ")"
}

// Same reports whether p and q are one principal: the same subject. An
// unrecorded subject is nobody's, so it is never the same as another.
func (p Principal) Same(q Principal) bool {
	a, b := p.Recorded().Subject, q.Recorded().Subject
	return a == b && a != SubjectUnrecorded
}

// Allowed reports whether p may do what rule restricts: rule is nil, p is
// not an OAuth principal, or p holds one of the rule's groups or scopes.
func (p Principal) Allowed(rule *config.PrincipalsConfig) bool {
	if rule == nil || !p.OAuth {
		return true
	}
	for _, g := range rule.Groups {
		if slices.Contains(p.Groups, g) {
			return true
		}
	}
	for _, s := range rule.Scopes {
		if slices.Contains(p.Scopes, s) {
			return true
		}
	}
	return false
}

// printable keeps s to printable characters and at most n bytes: a subject
// comes from a token and is shown on pages and in problems.
func printable(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len()+len(string(r)) > n {
			break
		}
		if unicode.IsPrint(r) {
			b.WriteRune(r)
		} else {
			b.WriteRune('?')
		}
	}
	return b.String()
}

// MayRun refuses a principal that the action's principals restriction
// does not let through (PRINCIPAL_NOT_ALLOWED): it may neither preview nor
// commit the action.
func MayRun(a *upstream.Action, p Principal) error {
	if a == nil || p.Allowed(a.Config.Principals) {
		return nil
	}
	return problem(envelope.ProblemPrincipalNotAllowed, "The action "+a.Name+" is restricted to other groups or scopes than this principal's ("+safeWho(p.String())+").")
}

// MayApprove refuses an approval the action's policy does not allow from
// this principal: by the principal who previewed the selection when the
// policy wants four eyes (APPROVAL_BY_REQUESTER), or by a principal outside
// the policy's approvers (APPROVER_NOT_ALLOWED).
func MayApprove(sel *Selection, a *upstream.Action, p Principal) error {
	if a == nil || a.Config.Approval == nil {
		return nil
	}
	pol := a.Config.Approval
	if pol.FourEyes && p.Same(sel.Principal) {
		return problem(envelope.ProblemApprovalByRequester, "The selection was previewed by "+safeWho(sel.Principal.String())+", who cannot approve it: the action's policy wants four eyes.")
	}
	return mayDecide(a, p)
}

// mayDecide refuses a decision (an approval or a rejection) by a principal
// outside the policy's approvers.
func mayDecide(a *upstream.Action, p Principal) error {
	if a == nil || a.Config.Approval == nil || p.Allowed(a.Config.Approval.Approvers) {
		return nil
	}
	return problem(envelope.ProblemApproverNotAllowed, "The approval of "+a.Name+" is restricted to other groups or scopes than this principal's ("+safeWho(p.String())+").")
}
