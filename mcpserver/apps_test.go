package mcpserver

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
)

// listedTools is tools/list as the harness's client reads it, as JSON.
func (h *harness) listedTools() []byte {
	h.t.Helper()
	list, err := h.client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		h.t.Fatal(err)
	}
	b, err := json.MarshalIndent(list.Tools, "", "  ")
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// viewOf is the approval view's data a result carried in its _meta.
func viewOf(t *testing.T, r result) map[string]any {
	t.Helper()
	if r.res.Meta == nil {
		return nil
	}
	v, _ := r.res.Meta.AdditionalFields[ViewMetaKey].(map[string]any)
	return v
}

// decideArgsFor are decide_selection's arguments for a preview, as the
// view sends them.
func decideArgsFor(p result, state any, decision string) map[string]any {
	return map[string]any{"selection_id": p.data["selection_id"], "digest": p.data["digest"], "decision": decision, "state": state, "acknowledge": true}
}

// TestToolsList_WithoutTheAppsExtension_IsTheListOfBefore: a client that
// does not declare MCP Apps is listed the same bytes as before the view
// existed (the golden was written by the code before it), and is never
// offered decide_selection.
func TestToolsList_WithoutTheAppsExtension_IsTheListOfBefore(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	got := h.listedTools()
	golden(t, "testdata/apps/tools_list_without_apps.golden.json", got)
	if strings.Contains(string(got), tools.DecideSelectionName) || strings.Contains(string(got), "ui://") {
		t.Fatal("a client without MCP Apps is listed the view or its tool")
	}
}

// TestToolsList_WithTheAppsExtension_LinksTheViewAndHidesTheDecisionFromTheModel:
// a client that declares MCP Apps is listed the same tools with the view
// linked on preview_selection and commit_bulk_action, and decide_selection
// for views only; nothing else of the list changes.
func TestToolsList_WithTheAppsExtension_LinksTheViewAndHidesTheDecisionFromTheModel(t *testing.T) {
	t.Parallel()
	plain := newHarness(t)
	apps := newHarness(t, withApps())
	var without, with []map[string]any
	if err := json.Unmarshal(plain.listedTools(), &without); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(apps.listedTools(), &with); err != nil {
		t.Fatal(err)
	}
	if len(with) != len(without)+1 {
		t.Fatalf("listed %d tools with MCP Apps, %d without", len(with), len(without))
	}
	before := map[string]string{}
	for _, tool := range without {
		before[tool["name"].(string)] = string(tooltest.MustJSON(tool))
	}
	metas := map[string]any{}
	var decide map[string]any
	for _, tool := range with {
		name := tool["name"].(string)
		metas[name] = tool["_meta"]
		if name == tools.DecideSelectionName {
			decide = tool
			continue
		}
		delete(tool, "_meta")
		if string(tooltest.MustJSON(tool)) != before[name] {
			t.Errorf("%s differs besides its _meta", name)
		}
	}
	b, _ := json.MarshalIndent(map[string]any{"_meta by tool": metas, "app-only tool": decide}, "", "  ")
	golden(t, "testdata/apps/tools_list_with_apps.golden.json", b)
}

// TestApprovalView_ResourceIsSelfContainedWithAStrictCSP: the view's
// resource is MCP Apps HTML, declares a CSP that allows no other origin,
// names no other origin, loads nothing, and holds no secret.
func TestApprovalView_ResourceIsSelfContainedWithAStrictCSP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withApps())
	req := mcp.ReadResourceRequest{}
	req.Params.URI = ApprovalViewURI
	res, err := h.client.ReadResource(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("%d contents", len(res.Contents))
	}
	c, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok || c.MIMEType != AppMIMEType {
		t.Fatalf("content: %#v", res.Contents[0])
	}
	meta, _ := json.MarshalIndent(map[string]any{"uri": c.URI, "mimeType": c.MIMEType, "_meta": c.Meta, "bytes_under_64k": len(c.Text) < 64<<10}, "", "  ")
	golden(t, "testdata/apps/view_resource.golden.json", meta)
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`(?i)https?://`), regexp.MustCompile(`(?i)<script[^>]+src`), regexp.MustCompile(`(?i)<link`),
		regexp.MustCompile(`(?i)innerHTML|outerHTML|insertAdjacentHTML|document\.write`), regexp.MustCompile(`(?i)\beval\(|new Function`), regexp.MustCompile(`(?i)@import|url\(`)} {
		if loc := bad.FindStringIndex(c.Text); loc != nil {
			t.Errorf("the view holds %q at %d", c.Text[loc[0]:loc[1]], loc[0])
		}
	}
	leaks(t, "the view", []byte(c.Text))
}

// TestApprovalView_ApproveInTheView_TheCommitUsesThatApproval: a client
// that renders views previews; the state travels only in the result's
// _meta (never in what the model reads); Approve in the view records the
// decision through the store with the host and principal in the audit;
// the commit runs under it without any form.
func TestApprovalView_ApproveInTheView_TheCommitUsesThatApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withApps())
	p := h.call("preview_selection", seedPreview(nil))
	v := viewOf(t, p)
	if v == nil || v["state"] == nil || v["mode"] != "client" || v["selection_id"] != p.data["selection_id"] || v["digest"] != p.data["digest"] {
		t.Fatalf("the view's data: %v", v)
	}
	state := v["state"].(string)
	text, _ := json.Marshal(p.res.Content)
	if strings.Contains(string(text), state) || strings.Contains(string(p.raw), state) {
		t.Fatal("the approval state is in what the model reads")
	}
	if len(v["acknowledge"].([]any)) == 0 {
		t.Fatalf("nothing to acknowledge: %v", v)
	}
	// Approving without acknowledging is refused before the state is spent.
	noAck := decideArgsFor(p, state, tools.ViewApprove)
	noAck["acknowledge"] = false
	if r := h.call(tools.DecideSelectionName, noAck); problemCode(r) != envelope.ProblemInvalidArguments {
		t.Fatalf("approve without acknowledging: %s", r.raw)
	}
	d := h.call(tools.DecideSelectionName, decideArgsFor(p, state, tools.ViewApprove))
	if d.env.Problem != nil || d.data["decision"] != selection.DecisionApproved {
		t.Fatalf("approve: %s", d.raw)
	}
	c := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if c.env.Problem != nil || c.data["approval_id"] != d.data["approval_id"] || c.data["status"] != "completed" {
		t.Fatalf("commit: %s", c.raw)
	}
	if len(h.answer.asked()) != 0 {
		t.Fatal("a client that renders the view was asked with a form too")
	}
	trail, err := h.deps.Store.AuditTrail(context.Background(), c.data["operation_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range trail {
		if e.Kind == selection.AuditDecision && e.Event == selection.DecisionApproved {
			found = e.Actor == "approval view in mcp client airlock-test 1" && strings.Contains(e.Detail, "channel client") && e.Principal.Subject != ""
		}
	}
	if !found {
		t.Fatalf("no audit line of the view's approval naming the host and principal: %+v", trail)
	}
}

// TestApprovalView_Reject_WritesNothing: Reject in the view records a
// rejection; the commit is refused and nothing is written.
func TestApprovalView_Reject_WritesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withApps())
	p := h.call("preview_selection", seedPreview(nil))
	if r := h.call(tools.DecideSelectionName, decideArgsFor(p, viewOf(t, p)["state"], tools.ViewReject)); r.data["decision"] != selection.DecisionRejected {
		t.Fatalf("reject: %s", r.raw)
	}
	if r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil)); problemCode(r) != envelope.ProblemApprovalRejected {
		t.Fatalf("commit after reject: %s", r.raw)
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("%d writes after a rejection", n)
	}
}

// TestApprovalView_CommitBeforeApproval_ShowsTheViewInsteadOfAForm: a
// commit that needs approval, from a client that renders views, answers
// APPROVAL_REQUIRED with the view's data (the selection and the state)
// beside it, and asks no form.
func TestApprovalView_CommitBeforeApproval_ShowsTheViewInsteadOfAForm(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withApps())
	p := h.call("preview_selection", seedPreview(nil))
	c := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	v := viewOf(t, c)
	if problemCode(c) != envelope.ProblemApprovalRequired || v == nil || v["state"] == nil || v["selection"] == nil {
		t.Fatalf("commit before approval: %s %v", c.raw, v)
	}
	if len(h.answer.asked()) != 0 || h.writesTo() != 0 {
		t.Fatal("asked a form or wrote")
	}
	if r := h.call(tools.DecideSelectionName, decideArgsFor(p, v["state"], tools.ViewApprove)); r.env.Problem != nil {
		t.Fatalf("approve: %s", r.raw)
	}
	if r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil)); r.data["status"] != "completed" {
		t.Fatalf("commit after approval: %s", r.raw)
	}
}

// TestApprovalView_Refusals: decide_selection refuses what the view did
// not receive or may no longer use, and records nothing.
func TestApprovalView_Refusals(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := newHarness(t, withApps(), withClock(clock))
	p := h.call("preview_selection", seedPreview(nil))
	state := viewOf(t, p)["state"]
	other := h.call("preview_selection", seedPreview(map[string]any{"filter": map[string]any{"status": "past_due", "region": "us"}}))

	refused := func(what string, args map[string]any, want envelope.ProblemCode) {
		t.Helper()
		r := h.call(tools.DecideSelectionName, args)
		if problemCode(r) != want || r.env.Problem.StateChanged != envelope.StateNone {
			t.Errorf("%s: want %s, got %s", what, want, r.raw)
		}
	}
	// The model reads the result's content, never its _meta: what it can
	// send is a state it made up, or one of another selection's.
	refused("a made-up state (the model's side)", decideArgsFor(p, "eyJzIjoieCJ9.AAAA", tools.ViewApprove), envelope.ProblemElicitationForged)
	refused("another selection's state", decideArgsFor(p, viewOf(t, other)["state"], tools.ViewApprove), envelope.ProblemElicitationForged)
	wrongDigest := decideArgsFor(p, state, tools.ViewApprove)
	wrongDigest["digest"] = other.data["digest"]
	refused("another digest", wrongDigest, envelope.ProblemDigestMismatch)

	// A state older than its ten minutes is stale.
	clock.Advance(11 * time.Minute)
	refused("a stale state", decideArgsFor(p, state, tools.ViewApprove), envelope.ProblemElicitationForged)
	fresh := h.call("preview_selection", seedPreview(nil))
	freshState := viewOf(t, fresh)["state"]
	if r := h.call(tools.DecideSelectionName, decideArgsFor(fresh, freshState, tools.ViewReject)); r.env.Problem != nil {
		t.Fatalf("reject: %s", r.raw)
	}
	refused("a reused state", decideArgsFor(fresh, freshState, tools.ViewApprove), envelope.ProblemElicitationReplayed)

	// The selection outlives the state by five minutes; then it expires.
	late := h.call("preview_selection", seedPreview(map[string]any{"filter": map[string]any{"status": "past_due", "region": "apac"}}))
	clock.Advance(16 * time.Minute)
	refused("an expired selection", decideArgsFor(late, viewOf(t, late)["state"], tools.ViewApprove), envelope.ProblemSelectionExpired)

	if aps := h.approvals(p.data["selection_id"]); len(aps) != 0 {
		t.Fatalf("refusals recorded decisions: %+v", aps)
	}
	if h.writesTo() != 0 {
		t.Fatal("a refusal wrote")
	}
}

// TestApprovalView_ClientWithoutApps_CannotCallTheDecision: a client that
// did not declare MCP Apps is not offered decide_selection, and its call is
// refused before it reaches airlock; its commit asks with today's form.
func TestApprovalView_ClientWithoutApps_CannotCallTheDecision(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	if viewOf(t, p) != nil {
		t.Fatal("a client without MCP Apps received the view's data")
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tools.DecideSelectionName
	req.Params.Arguments = decideArgsFor(p, "x", tools.ViewApprove)
	res, err := h.client.CallTool(context.Background(), req)
	if err == nil && !res.IsError {
		t.Fatalf("decide_selection answered a client without MCP Apps: %+v", res)
	}
	if aps := h.approvals(p.data["selection_id"]); len(aps) != 0 {
		t.Fatal("a decision was recorded")
	}
	if r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil)); r.data["status"] != "completed" || len(h.answer.asked()) != 1 {
		t.Fatalf("commit with today's elicitation: %s", r.raw)
	}
}

// TestApprovalView_FourEyesAndApprovers_AsForElicitation: the view's
// decision meets the same policy as a form's. The principal who previewed
// a four-eyes action gets a view without a state (it says why) and a commit
// refused; an approver from the policy's group gets the view with a state
// bound to them, and approves; the previewer cannot use that state.
func TestApprovalView_FourEyesAndApprovers_AsForElicitation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(principalsConfig))
	ctx := context.Background()
	as := func(subject string, groups ...string) selection.Principal {
		return selection.Principal{Subject: subject, ClientID: "agent", Groups: groups, Scopes: []string{tools.ScopeWrite}, OAuth: true}
	}
	decide := tools.DecideSelection(h.deps)
	run := func(who selection.Principal, tool string, args map[string]any) (*envelope.Envelope, *tools.Call) {
		t.Helper()
		call := &tools.Call{RequestID: newRequestID(), Client: "mcp client host 1", Principal: who, Apps: true}
		call.Raw, _ = json.Marshal(args)
		run := decide.Run
		if tool != tools.DecideSelectionName {
			run = h.handler(tool)
		}
		env := run(ctx, call)
		env.Finish()
		tooltest.RecordCodes(env.Marshal())
		return env, call
	}
	alice, bob := as("alice", "dev"), as("bob", "leads")
	p, call := run(alice, "preview_selection", seedPreview(nil))
	sel := dataOf(p)
	if call.View == nil || call.View.State != "" || !strings.Contains(call.View.Why, "four eyes") {
		t.Fatalf("alice's view of her own selection: %+v", call.View)
	}
	commit := map[string]any{"selection_id": sel["selection_id"], "expected_digest": sel["digest"], "action": pauseAction, "mode": "execute"}
	if env, call := run(alice, "commit_bulk_action", commit); env.Problem == nil || env.Problem.Code != envelope.ProblemApprovalByRequester || call.View != nil {
		t.Fatalf("alice commits: %+v", env.Problem)
	}
	env, call := run(bob, "commit_bulk_action", commit)
	if env.Problem == nil || env.Problem.Code != envelope.ProblemApprovalRequired || call.View == nil || call.View.State == "" {
		t.Fatalf("bob commits: %+v %+v", env.Problem, call.View)
	}
	args := map[string]any{"selection_id": sel["selection_id"], "digest": sel["digest"], "decision": tools.ViewApprove, "state": call.View.State, "acknowledge": true}
	if env, _ := run(alice, tools.DecideSelectionName, args); env.Problem == nil || env.Problem.Code != envelope.ProblemElicitationForged {
		t.Fatalf("alice uses bob's state: %+v", env.Problem)
	}
	if env, _ := run(bob, tools.DecideSelectionName, args); env.Problem != nil {
		t.Fatalf("bob approves: %+v", env.Problem)
	}
	if env, _ := run(bob, "commit_bulk_action", commit); env.Problem != nil {
		t.Fatalf("bob commits after approving: %+v", env.Problem)
	}
}
