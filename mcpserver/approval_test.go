package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
)

// writesTo counts the write requests the fixture API received (not GETs).
func (h *harness) writesTo() int { return len(h.api.Writes()) }

func (h *harness) approvals(selID any) []*selection.Approval {
	h.t.Helper()
	aps, err := h.deps.Store.Approvals(context.Background(), selID.(string))
	if err != nil {
		h.t.Fatal(err)
	}
	return aps
}

func problemCode(r result) envelope.ProblemCode {
	if r.env.Problem == nil {
		return ""
	}
	return r.env.Problem.Code
}

// TestElicitationState_ForgedOrReplayedIsRefused drives the commit handler
// as a client on the current protocol would: it echoes the request state
// with its answer. A state airlock did not sign, or signed for another
// selection, is refused; a state answered once cannot be answered again.
// TestElicitationState_OnlyThePrincipalAskedMayAnswer: an approval request
// is bound to the principal it asked; the same state answered by another
// principal (another token holding the request) is no approval, and the
// one asked may still answer it.
func TestElicitationState_OnlyThePrincipalAskedMayAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	ctx := server.WithRequestProtocolInfo(context.Background(), &server.RequestProtocolInfo{Modern: true,
		ProtocolVersion: "2026-07-28", ClientInfo: &mcp.Implementation{Name: "modern-client", Version: "1"},
		ClientCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}})
	// Both may read the selection (previewed locally): operators.
	bob := selection.Principal{Subject: "bob", ClientID: "console", Scopes: []string{tools.ScopeWrite, selection.ScopeOperator}, OAuth: true}
	mallory := selection.Principal{Subject: "mallory", ClientID: "console", Scopes: []string{tools.ScopeWrite, selection.ScopeOperator}, OAuth: true}
	commit := func(who selection.Principal, state string) (*envelope.Envelope, *mcp.CallToolResult) {
		t.Helper()
		call := &tools.Call{RequestID: newRequestID(), Client: "mcp client modern-client 1", Principal: who, CanAsk: clientCanElicit(ctx)}
		call.Raw, _ = json.Marshal(commitArgsFor(p, "execute", nil))
		mrt := mcp.MultiRoundTripParams{RequestState: state}
		if state != "" {
			mrt.InputResponses = mcp.InputResponses{tools.ApprovalKey: mcp.NewElicitationInputResponse(mcp.ElicitationResult{
				ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"approve": true, "acknowledge": true}}})}
		}
		call.Answer = answerFromParams(mrt)
		env := h.handler("commit_bulk_action")(ctx, call)
		b, _ := json.Marshal(env)
		tooltest.RecordCodes(b)
		return env, askResult(call)
	}
	_, ask := commit(bob, "")
	if ask == nil || ask.RequestState == "" {
		t.Fatalf("bob is not asked: %+v", ask)
	}
	if env, _ := commit(mallory, ask.RequestState); env.Problem == nil || env.Problem.Code != envelope.ProblemElicitationForged {
		t.Fatalf("mallory answers bob's request: %+v", env.Problem)
	}
	if aps := h.approvals(p.data["selection_id"]); len(aps) != 0 {
		t.Fatalf("an answer by another principal was recorded: %+v", aps)
	}
	env, _ := commit(bob, ask.RequestState)
	if env.Problem != nil {
		t.Fatalf("bob answers his own request: %+v", env.Problem)
	}
	if aps := h.approvals(p.data["selection_id"]); len(aps) != 1 || aps[0].Principal.Subject != "bob" {
		t.Fatalf("approvals: %+v", aps)
	}
}

func TestElicitationState_ForgedOrReplayedIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	other := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "us"}, "action": pauseAction})
	ctx := server.WithRequestProtocolInfo(context.Background(), &server.RequestProtocolInfo{Modern: true,
		ProtocolVersion: "2026-07-28", ClientInfo: &mcp.Implementation{Name: "modern-client", Version: "1"},
		ClientCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}})
	commit := func(sel result, state string, answer *mcp.ElicitationResult) (*envelope.Envelope, *mcp.CallToolResult) {
		t.Helper()
		call := &tools.Call{RequestID: newRequestID(), Client: "mcp client modern-client 1", CanAsk: clientCanElicit(ctx)}
		call.Raw, _ = json.Marshal(commitArgsFor(sel, "execute", nil))
		mrt := mcp.MultiRoundTripParams{RequestState: state}
		if answer != nil {
			mrt.InputResponses = mcp.InputResponses{tools.ApprovalKey: mcp.NewElicitationInputResponse(*answer)}
		}
		call.Answer = answerFromParams(mrt)
		env := h.handler("commit_bulk_action")(ctx, call)
		b, _ := json.Marshal(env)
		tooltest.RecordCodes(b)
		return env, askResult(call)
	}
	accept := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"approve": true, "acknowledge": true}}}
	decline := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}

	_, ask := commit(p, "", nil)
	if ask == nil || ask.ResultType != mcp.ResultTypeInputRequired || ask.RequestState == "" || ask.InputRequests[tools.ApprovalKey].Method != mcp.MethodElicitationCreate {
		t.Fatalf("want an input request, got %+v", ask)
	}
	state := ask.RequestState
	_, askOther := commit(other, "", nil)

	body, sig, _ := strings.Cut(state, ".")
	flipped := []byte(sig)
	flipped[0] ^= 1
	for name, forged := range map[string]string{
		"no signature":        body,
		"altered signature":   body + "." + string(flipped),
		"garbage":             "not-a-state",
		"another selection's": askOther.RequestState,
	} {
		env, _ := commit(p, forged, accept)
		if env.Problem == nil || env.Problem.Code != envelope.ProblemElicitationForged || env.Problem.StateChanged != envelope.StateNone {
			t.Errorf("%s state: %+v", name, env.Problem)
		}
	}
	if env, _ := commit(p, state, decline); env.Problem == nil || env.Problem.Code != envelope.ProblemApprovalDeclined {
		t.Fatalf("decline: %+v", env.Problem)
	}
	// The same state, now answered "accept": a replay, not an approval.
	if env, _ := commit(p, state, accept); env.Problem == nil || env.Problem.Code != envelope.ProblemElicitationReplayed {
		t.Fatalf("replay: %+v", env.Problem)
	}
	if n := h.writesTo(); n != 0 {
		t.Fatalf("%d writes", n)
	}
	for _, a := range h.approvals(p.data["selection_id"]) {
		if a.Decision == selection.DecisionApproved {
			t.Fatalf("an approval was recorded: %+v", a)
		}
	}
	// A fresh request, answered once, approves.
	_, ask = commit(p, "", nil)
	env, _ := commit(p, ask.RequestState, accept)
	if env.Problem != nil {
		t.Fatalf("fresh state: %+v", env.Problem)
	}
	if ops := h.operation(tools.OperationID(env)); ops.data["status"] != selection.OpCompleted {
		t.Fatalf("operation %s", ops.raw)
	}
}

// TestElicitationNonce_UsedOnceThenDropped: an answered approval request's
// nonce is recorded with the request that answered it, apart from the
// meta values, and a replay is refused; an hour after the state expired
// (it is refused as expired by then), the next answer drops the nonce.
func TestElicitationNonce_UsedOnceThenDropped(t *testing.T) {
	clock := newFakeClock()
	h := newHarness(t, withClock(clock))
	p := h.call("preview_selection", seedPreview(nil))
	ctx := server.WithRequestProtocolInfo(context.Background(), &server.RequestProtocolInfo{Modern: true,
		ProtocolVersion: "2026-07-28", ClientInfo: &mcp.Implementation{Name: "modern-client", Version: "1"},
		ClientCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}})
	commit := func(state string) (*tools.Call, *envelope.Envelope) {
		t.Helper()
		call := &tools.Call{RequestID: newRequestID(), Client: "mcp client modern-client 1", CanAsk: clientCanElicit(ctx)}
		call.Raw, _ = json.Marshal(commitArgsFor(p, "execute", nil))
		mrt := mcp.MultiRoundTripParams{RequestState: state}
		if state != "" {
			mrt.InputResponses = mcp.InputResponses{tools.ApprovalKey: mcp.NewElicitationInputResponse(mcp.ElicitationResult{
				ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}})}
		}
		call.Answer = answerFromParams(mrt)
		env := h.handler("commit_bulk_action")(ctx, call)
		return call, env
	}
	ask, _ := commit("")
	if ask.Ask == nil || ask.Ask.State == "" {
		t.Fatalf("no approval request: %+v", ask.Ask)
	}
	state := ask.Ask.State
	body, _, _ := strings.Cut(state, ".")
	raw, err := base64.RawURLEncoding.DecodeString(body)
	// The state's members, as airlock signs them.
	var st struct {
		Nonce   string `json:"n"`
		Expires int64  `json:"e"`
	}
	if err != nil || json.Unmarshal(raw, &st) != nil || st.Nonce == "" {
		t.Fatalf("the state: %v %s", err, raw)
	}
	answer, env := commit(state)
	if env.Problem == nil || env.Problem.Code != envelope.ProblemApprovalDeclined {
		t.Fatalf("the answer: %+v", env.Problem)
	}
	store := h.deps.Store
	if _, err := store.Meta(context.Background(), "elicitation_used/"+st.Nonce); !errors.Is(err, selection.ErrNotFound) {
		t.Fatalf("the nonce is kept in meta, never dropped: %v", err)
	}
	if first, err := store.UseNonce(context.Background(), st.Nonce, "probe", clock.Now().Add(time.Hour), clock.Now()); err != nil || first != answer.RequestID {
		t.Fatalf("the nonce's first use: %q %v; want the answer's request %q", first, err, answer.RequestID)
	}
	if _, env := commit(state); env.Problem == nil || env.Problem.Code != envelope.ProblemElicitationReplayed {
		t.Fatalf("the same state again: %+v", env.Problem)
	}

	clock.Advance(time.Until(time.Unix(st.Expires, 0)) + time.Hour + time.Minute)
	if first, err := store.UseNonce(context.Background(), "another", "probe", clock.Now().Add(time.Hour), clock.Now()); err != nil || first != "probe" {
		t.Fatalf("another nonce: %q %v", first, err)
	}
	if first, err := store.UseNonce(context.Background(), st.Nonce, "probe", clock.Now().Add(time.Hour), clock.Now()); err != nil || first != "probe" {
		t.Fatalf("an hour after its state expired the nonce is still kept: first use %q %v", first, err)
	}
}
