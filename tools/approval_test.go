package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

func (h *harness) approvals(selID any) []*selection.Approval {
	h.t.Helper()
	aps, err := h.deps.Store.Approvals(context.Background(), selID.(string))
	if err != nil {
		h.t.Fatal(err)
	}
	return aps
}

// TestClientApproval_EachAnswerIsRecordedAndTheCommitFollowsIt: the user
// declines, then cancels, then approves the same selection through the
// client; nothing is written until the approval, each answer is recorded
// with who gave it, and the approval screen says what the write does.
func TestClientApproval_EachAnswerIsRecordedAndTheCommitFollowsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	ap := p.data["approval"].(map[string]any)
	if ap["mode"] != "client" || !strings.Contains(fmt.Sprint(ap["reasons"]), `region "eu" never approved before`) {
		t.Fatalf("approval: %v", ap)
	}
	members := int(p.data["counts"].(map[string]any)["members"].(float64))
	args := commitArgsFor(p, "execute", nil)

	h.answer.set(AnswerDecline, nil)
	if r := h.call("commit_bulk_action", args); problemCode(r) != envelope.ProblemApprovalDeclined || r.env.Problem.StateChanged != envelope.StateNone {
		t.Fatalf("declined: %s", r.raw)
	}
	h.answer.set(AnswerCancel, nil)
	if r := h.call("commit_bulk_action", args); problemCode(r) != envelope.ProblemApprovalCancelled {
		t.Fatalf("cancelled: %s", r.raw)
	}
	// Accepting the form without ticking approve is not an approval.
	h.answer.set(AnswerAccept, map[string]any{"approve": false, "acknowledge": true})
	if r := h.call("commit_bulk_action", args); problemCode(r) != envelope.ProblemApprovalDeclined {
		t.Fatalf("accept without approve: %s", r.raw)
	}
	// Approving without acknowledging what cannot be undone is not either.
	h.answer.set(AnswerAccept, map[string]any{"approve": true, "acknowledge": false})
	if r := h.call("commit_bulk_action", args); problemCode(r) != envelope.ProblemApprovalDeclined {
		t.Fatalf("approve without acknowledge: %s", r.raw)
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("%d writes before any approval", n)
	}

	h.answer.set(AnswerAccept, nil)
	c := h.call("commit_bulk_action", args)
	if c.env.Problem != nil {
		t.Fatalf("approved commit: %s", c.raw)
	}
	op := h.operation(c.data["operation_id"])
	if got := counts(op); got["succeeded"] != members {
		t.Fatalf("counts %v, want %d succeeded", got, members)
	}

	msgs := h.answer.asked()
	if len(msgs) != 5 {
		t.Fatalf("asked %d times, want 5", len(msgs))
	}
	for _, want := range []string{
		fmt.Sprintf("Approve pause_collection on %d subscriptions in demo", members),
		`Parameters: {"reason":"approved credit hold review"}`,
		fmt.Sprintf("Effect: collection_paused false (%d) -> true", members),
		"By region: \"eu\" " + fmt.Sprint(members),
		`tags contains "disputed" (disputed invoices stay)`,
		`tags contains "legal_hold" (legal hold)`,
		fmt.Sprintf(`Why approval: %d targets, more than 100; region "eu" never approved before for pause_collection`, members),
		"Acknowledge: NO_SNAPSHOT: ",
		"Acknowledge: cannot be undone: the customer is emailed that collection is paused",
		p.data["selection_id"].(string), p.data["digest"].(string),
	} {
		if !strings.Contains(msgs[0], want) {
			t.Errorf("the approval message lacks %q:\n%s", want, msgs[0])
		}
	}

	var decisions []string
	for _, a := range h.approvals(p.data["selection_id"]) {
		decisions = append(decisions, a.Decision)
		if a.Channel != selection.ChannelClient || !strings.HasPrefix(a.Who, "mcp client ") || a.Digest != p.data["digest"] || a.TargetCount != members {
			t.Errorf("approval record %+v", a)
		}
	}
	if want := "declined cancelled declined declined approved"; strings.Join(decisions, " ") != want {
		t.Fatalf("decisions %q, want %q", strings.Join(decisions, " "), want)
	}

	// The same commit again answers the operation and asks nobody.
	if again := h.call("commit_bulk_action", args); again.data["operation_id"] != c.data["operation_id"] || len(h.answer.asked()) != 5 {
		t.Fatalf("repeat: %s (asked %d)", again.raw, len(h.answer.asked()))
	}
}

// TestUnknownCategory_OnlyANewGroupValueNeedsReview: once pausing in eu
// was approved, another eu selection under the threshold needs no
// approval; the first selection in another region does.
func TestUnknownCategory_OnlyANewGroupValueNeedsReview(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	h.operation(h.call("commit_bulk_action", commitArgsFor(p, "execute", nil)).data["operation_id"])
	asked := len(h.answer.asked())

	// The same region again, under the threshold (the legal-hold ones the
	// first pass excluded): nothing new, no approval.
	again := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"},
		"exclude": []any{map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"}},
		"action":  map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "second pass"}}})
	if m := again.data["approval"].(map[string]any)["mode"]; m != "none" || again.data["counts"].(map[string]any)["members"].(float64) > 100 {
		t.Fatalf("eu again: approval %v, counts %v", again.data["approval"], again.data["counts"])
	}
	other := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "us"},
		"action": pauseAction})
	reasons := fmt.Sprint(other.data["approval"].(map[string]any)["reasons"])
	if !strings.Contains(reasons, `region "us" never approved before`) || strings.Contains(reasons, `"eu"`) {
		t.Fatalf("us: approval %v", other.data["approval"])
	}
	if c := h.call("commit_bulk_action", commitArgsFor(other, "execute", nil)); c.env.Problem != nil || len(h.answer.asked()) != asked+1 {
		t.Fatalf("us commit: %s (asked %d)", c.raw, len(h.answer.asked()))
	}
}

// TestClientApproval_AClientThatCannotAskIsRefused: no automatic yes; an
// operator's approval is the way forward, and then the commit runs.
func TestClientApproval_AClientThatCannotAskIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withoutAsking())
	p := h.call("preview_selection", seedPreview(nil))
	r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if problemCode(r) != envelope.ProblemClientApprovalMissing || r.env.Problem.StateChanged != envelope.StateNone ||
		!strings.Contains(r.env.Problem.Detail, "airlock approve "+p.data["selection_id"].(string)) {
		t.Fatalf("commit: %s", r.raw)
	}
	if n := h.writesTo(); n != 0 || len(h.approvals(p.data["selection_id"])) != 0 {
		t.Fatalf("%d writes, %d approvals recorded", n, len(h.approvals(p.data["selection_id"])))
	}
	// A dry run needs no approval: it writes nothing.
	if d := h.call("commit_bulk_action", commitArgsFor(p, "dry_run", nil)); d.env.Problem != nil {
		t.Fatalf("dry run: %s", d.raw)
	}
	h.approveAsOperator(p.data["selection_id"])
	c := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if c.env.Problem != nil || h.operation(c.data["operation_id"]).data["status"] != selection.OpCompleted {
		t.Fatalf("after the operator approved: %s", c.raw)
	}
}

// TestOperatorApproval_RequiredSingleUseAndBoundToTheSelection: archive is
// destructive: the client is never asked, an operator approves outside the
// conversation, and that approval is spent by one commit.
func TestOperatorApproval_RequiredSingleUseAndBoundToTheSelection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	preview := func(id string) result {
		return h.call("preview_selection", map[string]any{"resource": "projects", "ids": []any{id}, "action": archive})
	}
	commit := func(p result, extra map[string]any) result {
		a := map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": archive, "mode": "execute"}
		for k, v := range extra {
			a[k] = v
		}
		return h.call("commit_bulk_action", a)
	}
	a := preview("proj_0004")
	if ap := a.data["approval"].(map[string]any); ap["mode"] != "operator" || fmt.Sprint(ap["reasons"]) != "[the action is destructive]" {
		t.Fatalf("approval %v", ap)
	}
	r := commit(a, nil)
	if problemCode(r) != envelope.ProblemApprovalRequired || !strings.Contains(r.env.Problem.Detail, "airlock approve "+a.data["selection_id"].(string)) || len(h.answer.asked()) != 0 {
		t.Fatalf("unapproved: %s (asked %d)", r.raw, len(h.answer.asked()))
	}

	// An approval of another selection is no approval of this one, even
	// for the same action.
	b := preview("proj_0005")
	h.approveAsOperator(b.data["selection_id"])
	bID := h.approvals(b.data["selection_id"])[0].ID
	if r := commit(a, map[string]any{"approval_id": bID}); problemCode(r) != envelope.ProblemApprovalMismatch {
		t.Fatalf("approval of another selection: %s", r.raw)
	}
	if r := commit(a, map[string]any{"approval_id": "apr_00000000-0000-0000-0000-000000000000"}); problemCode(r) != envelope.ProblemApprovalMismatch {
		t.Fatalf("unknown approval: %s", r.raw)
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("%d writes without approval", n)
	}

	h.approveAsOperator(a.data["selection_id"])
	c := commit(a, nil)
	if c.env.Problem != nil || h.operation(c.data["operation_id"]).data["status"] != selection.OpCompleted {
		t.Fatalf("approved: %s", c.raw)
	}
	used := h.approvals(a.data["selection_id"])[0]
	if used.UsedBy != c.data["operation_id"] {
		t.Fatalf("approval used by %q, want %v", used.UsedBy, c.data["operation_id"])
	}
	// Spent: naming it again for the other selection or a new preview of the
	// same target does not carry it over.
	if r := commit(b, map[string]any{"approval_id": used.ID}); problemCode(r) != envelope.ProblemApprovalMismatch {
		t.Fatalf("spent approval on another selection: %s", r.raw)
	}
	h.api.Collection(fixtures.DatasetProjects).Update("proj_0004", func(r fixtures.Record) { r["state"] = "inactive"; r["etag"] = fixtures.ETag(r) })
	again := preview("proj_0004")
	if r := commit(again, nil); problemCode(r) != envelope.ProblemApprovalRequired {
		t.Fatalf("a new selection of the same target: %s", r.raw)
	}
}

// TestOperatorApproval_RejectedAndExpired: a rejection stops the commit;
// an approval unused past its lifetime is refused as expired.
func TestOperatorApproval_RejectedAndExpired(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := newHarness(t, withClock(clock))
	a := h.call("preview_selection", map[string]any{"resource": "projects", "ids": []any{"proj_0004"}, "action": archive})
	if _, p := h.deps.Engine.Decide(context.Background(), selection.DecisionRequest{SelectionID: a.data["selection_id"].(string),
		Decision: selection.DecisionRejected, Who: "os user test-operator", Channel: selection.ChannelOperator}); p != nil {
		t.Fatal(p)
	}
	args := map[string]any{"selection_id": a.data["selection_id"], "expected_digest": a.data["digest"], "action": archive, "mode": "execute"}
	if r := h.call("commit_bulk_action", args); problemCode(r) != envelope.ProblemApprovalRejected || !strings.Contains(r.env.Problem.Detail, "test-operator") {
		t.Fatalf("rejected: %s", r.raw)
	}

	b := h.call("preview_selection", map[string]any{"resource": "projects", "ids": []any{"proj_0005"}, "action": archive})
	h.approveAsOperator(b.data["selection_id"])
	clock.Advance(selection.DefaultApprovalTTL + time.Second)
	args = map[string]any{"selection_id": b.data["selection_id"], "expected_digest": b.data["digest"], "action": archive, "mode": "execute"}
	if r := h.call("commit_bulk_action", args); problemCode(r) != envelope.ProblemApprovalExpired {
		t.Fatalf("expired: %s", r.raw)
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("%d writes", n)
	}
}

// TestDescribe_ShowsEachActionsApprovalPolicy: the agent learns before it
// previews who will have to approve, and what undoes what.
func TestDescribe_ShowsEachActionsApprovalPolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	d := h.call("describe_resources", map[string]any{})
	got := map[string]string{}
	for _, r := range d.data["resources"].([]any) {
		for _, a := range r.(map[string]any)["actions"].([]any) {
			m := a.(map[string]any)
			b, _ := json.Marshal(m["approval"])
			got[m["name"].(string)] = fmt.Sprintf("%s compensation=%v", b, m["compensation"])
		}
	}
	for name, want := range map[string]string{
		"pause_collection": `{"above_targets":100,"mode":"client","unknown_category":["region"]} compensation=resume_collection`,
		"archive":          `{"mode":"operator","when_destructive":true} compensation=restore_state`,
		"assign_owner":     `{"mode":"none"} compensation=restore_owner`,
		"add_tag":          `{"mode":"none"} compensation=<nil>`,
	} {
		if got[name] != want {
			t.Errorf("%s: %s, want %s", name, got[name], want)
		}
	}
}

// TestMaxTargets_IsAGuardThatNoApprovalLifts: a selection larger than the
// action's max_targets can be reviewed but neither approved nor committed,
// whoever would say yes: max_targets is a hard cap, not an authorization.
func TestMaxTargets_IsAGuardThatNoApprovalLifts(t *testing.T) {
	t.Parallel()
	api := newFixture(t)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	url := srv.URL
	h := newHarness(t, demoAt(url, "    max_targets: 1000\n", "    max_targets: 10\n"))
	p := h.call("preview_selection", seedPreview(nil))
	members := int(p.data["counts"].(map[string]any)["members"].(float64))
	if members <= 10 {
		t.Fatalf("the seed selection has %d members; the test needs more than 10", members)
	}
	reasons, _ := p.data["committable_reasons"].([]any)
	if p.data["committable"] != false || len(reasons) != 1 || reasons[0].(map[string]any)["code"] != string(envelope.BlockerMaxTargets) ||
		reasons[0].(map[string]any)["limit"] != float64(10) || reasons[0].(map[string]any)["count"] != float64(members) {
		t.Fatalf("committable %v, reasons %v", p.data["committable"], reasons)
	}
	// An operator cannot approve it, and a client that would say yes is
	// never asked: the commit is refused first.
	if _, prob := h.deps.Engine.Decide(context.Background(), selection.DecisionRequest{SelectionID: p.data["selection_id"].(string),
		Decision: selection.DecisionApproved, Who: "os user test-operator", Channel: selection.ChannelOperator}); selection.ErrorCode(prob) != envelope.ProblemNotCommittable {
		t.Fatalf("approving a selection over max_targets: %+v, want SELECTION_NOT_COMMITTABLE", prob)
	}
	h.answer.set(AnswerAccept, nil)
	r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if problemCode(r) != envelope.ProblemNotCommittable || r.env.Problem.StateChanged != envelope.StateNone {
		t.Fatalf("want SELECTION_NOT_COMMITTABLE, got %s", r.raw)
	}
	if !strings.Contains(fmt.Sprint(r.env.Problem.Errors), string(envelope.BlockerMaxTargets)) {
		t.Fatalf("the problem does not name the cap: %+v", r.env.Problem.Errors)
	}
	if n := h.writesTo(); n != 0 || len(h.answer.asked()) != 0 {
		t.Fatalf("%d writes past max_targets, client asked %d times", n, len(h.answer.asked()))
	}
}

// TestApproval_ForAnotherActionOnTheSameTargetIsRefused: approving
// add_tag on a subscription approves nothing about pausing its
// collection.
func TestApproval_ForAnotherActionOnTheSameTargetIsRefused(t *testing.T) {
	t.Parallel()
	api := newFixture(t)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	url := srv.URL
	h := newHarness(t, demoAt(url,
		"    approval:\n      mode: client\n      above_targets: 100\n      unknown_category: [region]\n", "    approval: {mode: operator}\n",
		"      - {field: tags, op: add, to: \"{{params.tag}}\"}\n", "      - {field: tags, op: add, to: \"{{params.tag}}\"}\n    approval: {mode: operator}\n"))
	var target string
	for _, rec := range api.Collection(fixtures.DatasetSubscriptions).All() {
		if rec["status"] == "past_due" && rec["collection_paused"] == false {
			target = rec.ID()
			break
		}
	}
	tag := map[string]any{"type": "add_tag", "params": map[string]any{"tag": "reviewed"}}
	tagged := h.call("preview_selection", map[string]any{"resource": "subscriptions", "ids": []any{target}, "action": tag})
	paused := h.call("preview_selection", map[string]any{"resource": "subscriptions", "ids": []any{target}, "action": pauseAction})
	for _, p := range []result{tagged, paused} {
		if ap := p.data["approval"].(map[string]any); ap["mode"] != "operator" {
			t.Fatalf("approval %v", ap)
		}
	}
	h.approveAsOperator(tagged.data["selection_id"])
	tagApproval := h.approvals(tagged.data["selection_id"])[0]
	if tagApproval.ActionDigest != tagged.data["action_digest"] {
		t.Fatalf("the approval is bound to action %s, want %v", tagApproval.ActionDigest, tagged.data["action_digest"])
	}
	r := h.call("commit_bulk_action", commitArgsFor(paused, "execute", map[string]any{"approval_id": tagApproval.ID}))
	if problemCode(r) != envelope.ProblemApprovalMismatch || r.env.Problem.StateChanged != envelope.StateNone {
		t.Fatalf("an approval of add_tag used for pause_collection: %s", r.raw)
	}
	if r := h.call("commit_bulk_action", commitArgsFor(paused, "execute", nil)); problemCode(r) != envelope.ProblemApprovalRequired {
		t.Fatalf("pause_collection without its own approval: %s", r.raw)
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("%d writes", n)
	}
	// The add_tag approval still works for what it approved, once.
	c := h.call("commit_bulk_action", map[string]any{"selection_id": tagged.data["selection_id"], "expected_digest": tagged.data["digest"],
		"action": tag, "mode": "execute", "approval_id": tagApproval.ID})
	if c.env.Problem != nil || h.operation(c.data["operation_id"]).data["status"] != selection.OpCompleted {
		t.Fatalf("add_tag with its approval: %s", c.raw)
	}
}
