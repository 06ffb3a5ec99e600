package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

// decide_selection is the tool airlock's approval view calls, in a client
// that renders MCP Apps, with the signed single-use state a preview's (or a
// commit's) result carried beside it in Call.View. These tests drive it as
// the server does, through Spec.Run with Call.Apps set, with no transport
// between; mcpserver's TestApprovalView_* test the same over the wire.

// viewHost is how the client that renders the approval view introduced
// itself.
const viewHost = "mcp client airlock-apps 1"

// runCall runs tool with args as the server does for call (its Client,
// Principal, Apps and CanAsk as the transport set them), the user at the
// client answering any form it asks, and holds the answer to the contract
// every result keeps. It returns the answer and the approval view's data
// the tool set beside it (nil when none). The view's state never appears in
// what the model reads.
func (h *harness) runCall(call *Call, tool string, args map[string]any) (result, *AppView) {
	h.t.Helper()
	s := h.spec(tool)
	raw, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call.RequestID, call.Raw = uuid.NewString(), raw
	env := h.runAnswering(ctx, s, call)
	b := h.deps.Redactor.Bytes(env.Marshal())
	r := h.check(s, b)
	if call.View != nil && call.View.State != "" && strings.Contains(string(b), call.View.State) {
		h.t.Fatalf("%s: the approval view's state is in what the model reads: %s", tool, b)
	}
	return r, call.View
}

// viewCall runs tool for a client that renders the approval view (it
// declared MCP Apps), as nobody in particular (a local transport).
func (h *harness) viewCall(tool string, args map[string]any) (result, *AppView) {
	h.t.Helper()
	return h.runCall(&Call{Client: viewHost, CanAsk: !h.cannotAsk, Apps: true}, tool, args)
}

// viewDecision is decide_selection's arguments as the view sends them for
// the selection p previewed: Approve or Reject, with state, the person
// having read what the view lists to acknowledge.
func viewDecision(p result, state, decision string) map[string]any {
	return map[string]any{"selection_id": p.data["selection_id"], "digest": p.data["digest"], "decision": decision, "state": state, "acknowledge": true}
}

// TestDecideSelection_ApproveInTheView_TheCommitRunsUnderIt: a preview for
// a client that renders the view carries the view's data beside it (the
// selection, the policy's mode, what to acknowledge and a state); approving
// without acknowledging is refused before the state is spent; Approve
// records the decision with the host as who decided, writes nothing
// upstream, and the commit then runs under that approval without asking any
// form: every member is written once and succeeds, nothing else is written.
func TestDecideSelection_ApproveInTheView_TheCommitRunsUnderIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, v := h.runCall(&Call{Client: "mcp client plain 1", CanAsk: true}, PreviewSelectionName, seedPreview(nil)); v != nil {
		t.Fatalf("a client that does not render the view received its data: %+v", v)
	}
	p, v := h.viewCall(PreviewSelectionName, seedPreview(nil))
	if p.env.Problem != nil {
		t.Fatalf("preview: %s", p.raw)
	}
	if v == nil || v.State == "" || v.Mode != selection.ApprovalClient || v.SelectionID != p.data["selection_id"] || v.Digest != p.data["digest"] ||
		len(v.Acknowledge) == 0 || v.StateExpiry == "" || v.Why != "" {
		t.Fatalf("the view's data: %+v", v)
	}
	members := h.members(p.data["selection_id"])
	if len(members) == 0 {
		t.Fatal("the seed preview selected nobody")
	}

	noAck := viewDecision(p, v.State, ViewApprove)
	noAck["acknowledge"] = false
	if r, _ := h.viewCall(DecideSelectionName, noAck); problemCode(r) != envelope.ProblemInvalidArguments || fieldsOf(r.env.Problem)["acknowledge"] == "" {
		t.Fatalf("approve without acknowledging: %s", r.raw)
	}
	if aps := h.approvals(p.data["selection_id"]); len(aps) != 0 {
		t.Fatalf("approving without acknowledging recorded %+v", aps)
	}

	d, _ := h.viewCall(DecideSelectionName, viewDecision(p, v.State, ViewApprove))
	if d.env.Problem != nil || d.data["decision"] != selection.DecisionApproved || d.data["approval_id"] == "" ||
		d.data["selection_id"] != p.data["selection_id"] || d.data["digest"] != p.data["digest"] {
		t.Fatalf("approve: %s", d.raw)
	}
	aps := h.approvals(p.data["selection_id"])
	if len(aps) != 1 || aps[0].ID != d.data["approval_id"] || aps[0].Decision != selection.DecisionApproved || aps[0].Channel != selection.ChannelClient ||
		aps[0].Who != "approval view in "+viewHost || aps[0].Digest != p.data["digest"] || aps[0].TargetCount != len(members) {
		t.Fatalf("the approval recorded: %+v", aps)
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("approving wrote %d times upstream", n)
	}

	c, cv := h.viewCall(CommitBulkActionName, commitArgsFor(p, "execute", nil))
	if c.env.Problem != nil || c.data["approval_id"] != d.data["approval_id"] || cv != nil {
		t.Fatalf("commit after approving in the view: %s (view %+v)", c.raw, cv)
	}
	if asked := h.answer.asked(); len(asked) != 0 {
		t.Fatalf("a client that renders the view was asked with a form too: %q", asked)
	}
	op := h.operation(c.data["operation_id"])
	if op.data["status"] != selection.OpCompleted || counts(op)[selection.TargetSucceeded] != len(members) {
		t.Fatalf("operation %v %v, want %d succeeded", op.data["status"], op.data["counts"], len(members))
	}
	for id, o := range outcomes(op) {
		if o != selection.TargetSucceeded || !slices.Contains(members, id) {
			t.Errorf("%s: %s", id, o)
		}
	}
	applied := h.api.AppliedAll(fixtures.DatasetSubscriptions)
	for _, rec := range fixtures.Subscriptions() {
		id := rec["id"].(string)
		want := 0
		if slices.Contains(members, id) {
			want = 1
		}
		if applied[id] != want {
			t.Errorf("%s written %d times upstream, want %d", id, applied[id], want)
		}
	}
}

// TestDecideSelection_Reject_TheCommitIsRefusedAndNothingWritten: Reject in
// the view records a rejection; the commit is then refused with
// APPROVAL_REJECTED, asks nothing, and nothing reaches the upstream.
func TestDecideSelection_Reject_TheCommitIsRefusedAndNothingWritten(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p, v := h.viewCall(PreviewSelectionName, seedPreview(nil))
	if v == nil || v.State == "" {
		t.Fatalf("the view's data: %+v", v)
	}
	r, _ := h.viewCall(DecideSelectionName, viewDecision(p, v.State, ViewReject))
	if r.env.Problem != nil || r.data["decision"] != selection.DecisionRejected {
		t.Fatalf("reject: %s", r.raw)
	}
	aps := h.approvals(p.data["selection_id"])
	if len(aps) != 1 || aps[0].ID != r.data["approval_id"] || aps[0].Decision != selection.DecisionRejected || aps[0].Who != "approval view in "+viewHost {
		t.Fatalf("the rejection recorded: %+v", aps)
	}
	c, _ := h.viewCall(CommitBulkActionName, commitArgsFor(p, "execute", nil))
	if problemCode(c) != envelope.ProblemApprovalRejected || c.env.Problem.StateChanged != envelope.StateNone {
		t.Fatalf("commit after rejecting: %s", c.raw)
	}
	// A client that asks with forms is not asked again either: the
	// rejection stands.
	if c, _ := h.runCall(&Call{Client: "mcp client plain 1", CanAsk: true}, CommitBulkActionName, commitArgsFor(p, "execute", nil)); problemCode(c) != envelope.ProblemApprovalRejected {
		t.Fatalf("commit from a form client after the view's rejection: %s", c.raw)
	}
	if asked := h.answer.asked(); len(asked) != 0 {
		t.Fatalf("asked a form after a rejection: %q", asked)
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("%d writes after a rejection", n)
	}
}

// TestDecideSelection_Refusals: decide_selection refuses a state the view
// did not receive for this selection, or may no longer use, each with its
// problem code and state_changed none; no refusal records a decision or
// writes upstream.
func TestDecideSelection_Refusals(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := newHarness(t, withClock(clock))
	p, v := h.viewCall(PreviewSelectionName, seedPreview(nil))
	other, ov := h.viewCall(PreviewSelectionName, seedPreview(map[string]any{"filter": map[string]any{"status": "past_due", "region": "us"}}))
	if v == nil || v.State == "" || ov == nil || ov.State == "" || other.data["digest"] == p.data["digest"] {
		t.Fatalf("the views' data: %+v %+v", v, ov)
	}
	// The same preview again is another selection of the same records,
	// under the same digest: only the selection binds the state to it.
	twin, _ := h.viewCall(PreviewSelectionName, seedPreview(nil))
	if twin.data["selection_id"] == p.data["selection_id"] || twin.data["digest"] != p.data["digest"] {
		t.Fatalf("the same preview again: %v %v, first %v %v", twin.data["selection_id"], twin.data["digest"], p.data["selection_id"], p.data["digest"])
	}
	// A form's state, as a client that asks with forms received it for
	// the same selection (the user never answered).
	form := &Call{Client: "mcp client plain 1", CanAsk: true, RequestID: uuid.NewString()}
	form.Raw, _ = json.Marshal(commitArgsFor(p, "execute", nil))
	h.handler(CommitBulkActionName)(context.Background(), form)
	if form.Ask == nil || form.Ask.State == "" {
		t.Fatal("the commit from a form client asked nothing")
	}

	// No refusal may record a decision on any of these selections.
	watched := []result{p, other, twin}
	recorded := func() int {
		n := 0
		for _, s := range watched {
			n += len(h.approvals(s.data["selection_id"]))
		}
		return n
	}
	refused := func(what string, args map[string]any, want envelope.ProblemCode) {
		t.Helper()
		before := recorded()
		r, _ := h.viewCall(DecideSelectionName, args)
		if problemCode(r) != want || r.env.Problem.StateChanged != envelope.StateNone {
			t.Errorf("%s: want %s with state_changed none, got %s", what, want, r.raw)
		}
		if after := recorded(); after != before {
			t.Errorf("%s: recorded %d decisions", what, after-before)
		}
	}
	// The model reads the result's content, never the view's data: what it
	// could send is a state it made up, or one it saw elsewhere.
	refused("a made-up state", viewDecision(p, "eyJzIjoieCJ9.AAAA", ViewApprove), envelope.ProblemElicitationForged)
	refused("another selection's state", viewDecision(p, ov.State, ViewApprove), envelope.ProblemElicitationForged)
	refused("the state of the same records' other selection", viewDecision(twin, v.State, ViewApprove), envelope.ProblemElicitationForged)
	refused("a form's state", viewDecision(p, form.Ask.State, ViewApprove), envelope.ProblemElicitationForged)
	wrongDigest := viewDecision(p, v.State, ViewApprove)
	wrongDigest["digest"] = other.data["digest"]
	refused("another digest", wrongDigest, envelope.ProblemDigestMismatch)
	unknown := viewDecision(p, v.State, ViewApprove)
	unknown["selection_id"] = "sel_nope"
	refused("an unknown selection", unknown, envelope.ProblemSelectionNotFound)

	// The state lives ten minutes; the selection fifteen.
	clock.Advance(11 * time.Minute)
	refused("a stale state", viewDecision(p, v.State, ViewApprove), envelope.ProblemElicitationForged)

	fresh, fv := h.viewCall(PreviewSelectionName, seedPreview(map[string]any{"filter": map[string]any{"status": "past_due"}}))
	if fv == nil || fv.State == "" {
		t.Fatalf("the view's data: %+v", fv)
	}
	if r, _ := h.viewCall(DecideSelectionName, viewDecision(fresh, fv.State, ViewReject)); r.env.Problem != nil {
		t.Fatalf("reject: %s", r.raw)
	}
	refused("a reused state", viewDecision(fresh, fv.State, ViewApprove), envelope.ProblemElicitationReplayed)
	if aps := h.approvals(fresh.data["selection_id"]); len(aps) != 1 || aps[0].Decision != selection.DecisionRejected {
		t.Fatalf("the reused state changed the decision: %+v", aps)
	}

	// A selection previewed now outlives its state by five minutes, then
	// expires: its state expired with it, and the refusal says why.
	late, lv := h.viewCall(PreviewSelectionName, seedPreview(map[string]any{"filter": map[string]any{"status": "past_due", "region": "apac"}}))
	if lv == nil || lv.State == "" {
		t.Fatalf("the view's data: %+v", lv)
	}
	watched = append(watched, late)
	clock.Advance(16 * time.Minute)
	refused("an expired selection", viewDecision(late, lv.State, ViewApprove), envelope.ProblemSelectionExpired)

	if n := recorded(); n != 0 {
		t.Fatalf("refusals recorded %d decisions", n)
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("%d writes after refusals", n)
	}
}

// TestDecideSelection_RefusalsSpendNoState: a refusal for the arguments
// (no acknowledgement, another digest) or for another's state leaves the
// view's state unspent: the person can still decide with it, once.
func TestDecideSelection_RefusalsSpendNoState(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p, v := h.viewCall(PreviewSelectionName, seedPreview(nil))
	other, _ := h.viewCall(PreviewSelectionName, seedPreview(map[string]any{"filter": map[string]any{"status": "past_due", "region": "us"}}))
	noAck := viewDecision(p, v.State, ViewApprove)
	noAck["acknowledge"] = false
	wrongDigest := viewDecision(p, v.State, ViewApprove)
	wrongDigest["digest"] = other.data["digest"]
	onOther := viewDecision(other, v.State, ViewApprove)
	for what, args := range map[string]map[string]any{"no acknowledgement": noAck, "another digest": wrongDigest, "on another selection": onOther} {
		if r, _ := h.viewCall(DecideSelectionName, args); r.env.Problem == nil {
			t.Fatalf("%s: %s", what, r.raw)
		}
	}
	if r, _ := h.viewCall(DecideSelectionName, viewDecision(p, v.State, ViewApprove)); r.env.Problem != nil || r.data["decision"] != selection.DecisionApproved {
		t.Fatalf("approve after the refusals: %s", r.raw)
	}
	if r, _ := h.viewCall(DecideSelectionName, viewDecision(p, v.State, ViewReject)); problemCode(r) != envelope.ProblemElicitationReplayed {
		t.Fatalf("the state used twice: %s", r.raw)
	}
	if aps := h.approvals(p.data["selection_id"]); len(aps) != 1 || aps[0].Decision != selection.DecisionApproved {
		t.Fatalf("decisions recorded: %+v", aps)
	}
}

// TestDecideSelection_FourEyesAndApprovers: the view's decision meets the
// policy a form's does. The principal who previewed a four-eyes action is
// shown the view without a state (it says why) and their commit is refused;
// an approver from the policy's group committing is shown the view with a
// state bound to them; the previewer cannot use that state, the approver
// approves with it, and the commit runs.
func TestDecideSelection_FourEyesAndApprovers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(principalsConfig))
	as := func(subject string, groups ...string) *Call {
		return &Call{Client: viewHost, Apps: true, CanAsk: true,
			Principal: selection.Principal{Subject: subject, ClientID: "agent", Groups: groups, Scopes: []string{ScopeWrite}, OAuth: true}}
	}
	alice, bob := func() *Call { return as("alice", "dev") }, func() *Call { return as("bob", "leads") }
	p, v := h.runCall(alice(), PreviewSelectionName, seedPreview(nil))
	if p.env.Problem != nil || v == nil || v.State != "" || !strings.Contains(v.Why, "four eyes") {
		t.Fatalf("alice's view of her own selection: %s %+v", p.raw, v)
	}
	commit := commitArgsFor(p, "execute", nil)
	if r, v := h.runCall(alice(), CommitBulkActionName, commit); problemCode(r) != envelope.ProblemApprovalByRequester || v != nil {
		t.Fatalf("alice commits: %s %+v", r.raw, v)
	}
	r, bv := h.runCall(bob(), CommitBulkActionName, commit)
	if problemCode(r) != envelope.ProblemApprovalRequired || r.env.Problem.StateChanged != envelope.StateNone || bv == nil || bv.State == "" || bv.Selection == nil {
		t.Fatalf("bob commits before approving: %s %+v", r.raw, bv)
	}
	if d, _ := h.runCall(alice(), DecideSelectionName, viewDecision(p, bv.State, ViewApprove)); problemCode(d) != envelope.ProblemElicitationForged ||
		d.env.Problem.StateChanged != envelope.StateNone {
		t.Fatalf("alice uses bob's state: %s", d.raw)
	}
	if aps := h.approvals(p.data["selection_id"]); len(aps) != 0 {
		t.Fatalf("alice's refused decision was recorded: %+v", aps)
	}
	if d, _ := h.runCall(bob(), DecideSelectionName, viewDecision(p, bv.State, ViewApprove)); d.env.Problem != nil || d.data["decision"] != selection.DecisionApproved {
		t.Fatalf("bob approves: %s", d.raw)
	}
	if h.writesTo() != 0 || len(h.answer.asked()) != 0 {
		t.Fatal("wrote or asked a form before the commit")
	}
	c, _ := h.runCall(bob(), CommitBulkActionName, commit)
	if c.env.Problem != nil {
		t.Fatalf("bob commits after approving: %s", c.raw)
	}
	if op := h.operation(c.data["operation_id"]); op.data["status"] != selection.OpCompleted || counts(op)[selection.TargetSucceeded] == 0 {
		t.Fatalf("operation %v %v", op.data["status"], op.data["counts"])
	}
}
