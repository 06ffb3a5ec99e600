package selection_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

var (
	alice = selection.Principal{Subject: "alice", ClientID: "agent", Groups: []string{"dev"}, Scopes: []string{"airlock:write"}, OAuth: true}
	bob   = selection.Principal{Subject: "bob", ClientID: "agent", Groups: []string{"dev"}, Scopes: []string{"airlock:write"}, OAuth: true}
	carol = selection.Principal{Subject: "carol", ClientID: "console", Groups: []string{"leads"}, Scopes: []string{"airlock:write"}, OAuth: true}
	local = selection.Principal{Subject: selection.SubjectLocal, ClientID: "airlock-approve"}
)

// previewAs freezes the lab's active accounts for action, asked by who.
func (l *lab) previewAs(action string, who selection.Principal) *selection.Selection {
	l.t.Helper()
	a := l.rt.Actions[action]
	p := &selection.Previewer{Store: l.store, Clock: upstream.WallClock}
	res, err := p.Preview(context.Background(), selection.PreviewRequest{Resource: a.Resource, Action: a, Params: map[string]any{"reason": labReason},
		Filter: map[string]any{"status": "active"}, Budget: upstream.Budget{MaxPages: 1000, Deadline: time.Minute}, RequestID: "lab",
		Environment: "lab", Principal: who})
	if err != nil {
		l.t.Fatalf("preview: %v", err)
	}
	return res.Selection
}

func (l *lab) decide(sel *selection.Selection, decision string, who selection.Principal) (*selection.Approval, error) {
	return l.e.Decide(context.Background(), selection.DecisionRequest{SelectionID: sel.ID, Digest: sel.Digest, Decision: decision,
		Who: who.Subject, Channel: selection.ChannelOperator, Principal: who})
}

func wantProblem(t *testing.T, what string, p error, code envelope.ProblemCode) {
	t.Helper()
	if selection.ErrorCode(p) != code {
		t.Fatalf("%s: problem %v, want %s", what, p, code)
	}
}

// TestFourEyes_TheRequesterCannotApproveItsOwnSelection: under a four-eyes
// policy the principal who previewed a selection cannot approve it (and
// nothing is recorded); another principal can, and the selection, the
// approval, the operation and every audit line name who did what.
func TestFourEyes_TheRequesterCannotApproveItsOwnSelection(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testFourEyesTheRequesterCannotApproveItsOwnSelection)
}

func testFourEyesTheRequesterCannotApproveItsOwnSelection(t *testing.T) {
	l := newLab(t, t.TempDir(), fixtures.NewWriteLab(4), time.Second)
	l.rt.Actions["archive_keyed"].Config.Approval = &config.ApprovalConfig{Mode: selection.ApprovalOperator, FourEyes: true}
	sel := l.previewAs("archive_keyed", alice)
	if sel.Principal.Subject != "alice" || sel.Principal.ClientID != "agent" {
		t.Fatalf("the selection records %+v as who asked", sel.Principal)
	}
	_, p := l.decide(sel, selection.DecisionApproved, alice)
	wantProblem(t, "alice approves her own selection", p, envelope.ProblemApprovalByRequester)
	if aps, _ := l.store.Approvals(context.Background(), sel.ID); len(aps) != 0 {
		t.Fatalf("a refused approval was recorded: %+v", aps)
	}
	commit := selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action, Mode: selection.ModeExecute,
		Wait: time.Minute, RequestID: "lab", Principal: alice}
	_, p = l.e.Commit(context.Background(), commit)
	wantProblem(t, "commit without another's approval", p, envelope.ProblemApprovalRequired)

	// A rejection by the requester is no approval: four eyes allows it.
	if _, p := l.decide(l.previewAs("archive_keyed", alice), selection.DecisionRejected, alice); p != nil {
		t.Fatalf("alice rejects her own selection: %v", p)
	}

	ap, p := l.decide(sel, selection.DecisionApproved, bob)
	if p != nil {
		t.Fatalf("bob approves alice's selection: %v", p)
	}
	if ap.Principal.Subject != "bob" {
		t.Fatalf("the approval records %+v", ap.Principal)
	}
	res, p := l.e.Commit(context.Background(), commit)
	if p != nil {
		t.Fatalf("commit after bob's approval: %v", p)
	}
	l.e.Wait()
	op, err := l.store.Operation(context.Background(), res.Operation.ID)
	if err != nil || op.Principal.Subject != "alice" || op.ApprovalID != ap.ID {
		t.Fatalf("the operation: %+v %v", op, err)
	}
	trail, err := l.store.AuditTrail(context.Background(), op.ID)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, ev := range trail {
		switch {
		case ev.Event == selection.DecisionApproved && ev.Principal.Subject != "bob":
			t.Errorf("approval line names %q", ev.Principal.Subject)
		case ev.Event == "commit" && ev.Principal.Subject != "alice":
			t.Errorf("commit line names %q", ev.Principal.Subject)
		case ev.Kind == selection.AuditCall:
			calls++
			if ev.Principal.Subject != "alice" {
				t.Errorf("call line names %q, want the committer", ev.Principal.Subject)
			}
		}
	}
	if calls == 0 {
		t.Fatal("no external call in the audit trail")
	}
}

// TestFourEyes_ASharedPrincipalIsOnePerson: everyone behind the static
// token, or at this machine, is one principal: four eyes refuses their
// approval of a selection they previewed.
func TestFourEyes_ASharedPrincipalIsOnePerson(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testFourEyesASharedPrincipalIsOnePerson)
}

func testFourEyesASharedPrincipalIsOnePerson(t *testing.T) {
	l := newLab(t, t.TempDir(), fixtures.NewWriteLab(4), time.Second)
	l.rt.Actions["archive_keyed"].Config.Approval = &config.ApprovalConfig{Mode: selection.ApprovalOperator, FourEyes: true}
	static := selection.Principal{Subject: selection.SubjectStaticToken, ClientID: "static-token"}
	_, p := l.decide(l.previewAs("archive_keyed", static), selection.DecisionApproved, static)
	wantProblem(t, "the static token approves what it previewed", p, envelope.ProblemApprovalByRequester)
	_, p = l.decide(l.previewAs("archive_keyed", selection.Principal{Subject: selection.SubjectLocal, ClientID: "stdio"}), selection.DecisionApproved, local)
	wantProblem(t, "local approves what local previewed", p, envelope.ProblemApprovalByRequester)
}

// TestApprovers_OnlyNamedGroupsOrScopesDecide: an approval policy with
// approvers lets only OAuth principals holding one of its groups or scopes
// approve or reject; an operator at this machine is not an OAuth principal
// and is not bound.
func TestApprovers_OnlyNamedGroupsOrScopesDecide(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testApproversOnlyNamedGroupsOrScopesDecide)
}

func testApproversOnlyNamedGroupsOrScopesDecide(t *testing.T) {
	l := newLab(t, t.TempDir(), fixtures.NewWriteLab(4), time.Second)
	l.rt.Actions["archive_keyed"].Config.Approval = &config.ApprovalConfig{Mode: selection.ApprovalOperator,
		Approvers: &config.PrincipalsConfig{Groups: []string{"leads"}, Scopes: []string{"airlock:approve"}}}
	sel := l.previewAs("archive_keyed", alice)
	_, p := l.decide(sel, selection.DecisionApproved, bob)
	wantProblem(t, "bob (dev) approves", p, envelope.ProblemApproverNotAllowed)
	_, p = l.decide(sel, selection.DecisionRejected, bob)
	wantProblem(t, "bob (dev) rejects", p, envelope.ProblemApproverNotAllowed)
	scoped := bob
	scoped.Scopes = []string{"airlock:approve"}
	if _, p := l.decide(sel, selection.DecisionApproved, scoped); p != nil {
		t.Fatalf("bob with airlock:approve: %v", p)
	}
	if _, p := l.decide(l.previewAs("archive_keyed", alice), selection.DecisionApproved, carol); p != nil {
		t.Fatalf("carol (leads): %v", p)
	}
	if _, p := l.decide(l.previewAs("archive_keyed", alice), selection.DecisionApproved, local); p != nil {
		t.Fatalf("an operator at this machine: %v", p)
	}
}

// TestActionPrincipals_OnlyNamedGroupsOrScopesCommit: an action restricted
// to a group refuses a commit by an OAuth principal outside it before
// anything is reserved or written.
func TestActionPrincipals_OnlyNamedGroupsOrScopesCommit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testActionPrincipalsOnlyNamedGroupsOrScopesCommit)
}

func testActionPrincipalsOnlyNamedGroupsOrScopesCommit(t *testing.T) {
	api := fixtures.NewWriteLab(4)
	l := newLab(t, t.TempDir(), api, time.Second)
	l.rt.Actions["archive_keyed"].Config.Principals = &config.PrincipalsConfig{Groups: []string{"leads"}}
	sel := l.previewAs("archive_keyed", carol)
	req := selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action, Mode: selection.ModeExecute,
		Wait: time.Minute, RequestID: "lab", Principal: alice}
	_, p := l.e.Commit(context.Background(), req)
	wantProblem(t, "alice (dev) commits", p, envelope.ProblemPrincipalNotAllowed)
	if ops, _ := l.store.OperationsOf(context.Background(), sel.ID); len(ops) != 0 {
		t.Fatalf("a refused commit created an operation: %+v", ops)
	}
	if p := selection.MayRun(l.rt.Actions["archive_keyed"], alice); selection.ErrorCode(p) != envelope.ProblemPrincipalNotAllowed {
		t.Fatalf("alice may preview the action: %v", p)
	}
	req.Principal = carol
	if _, p := l.e.Commit(context.Background(), req); p != nil {
		t.Fatalf("carol (leads) commits: %v", p)
	}
	l.e.Wait()
}
