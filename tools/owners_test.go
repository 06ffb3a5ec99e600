package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/google/uuid"
)

// TestOwners_OtherPrincipalsFindNoSuchRecord: a selection and its
// operation are read by the principal who made them, by an approver the
// action's policy names and by an operator scope. Any other OAuth
// principal, read scope or write, is told they do not exist, exactly as
// an unknown id is answered, through every tool that reads them; over
// stdio (no access token) nothing changes.
func TestOwners_OtherPrincipalsFindNoSuchRecord(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(principalsConfig))
	as := func(subject string, scopes []string, groups ...string) selection.Principal {
		return selection.Principal{Subject: subject, ClientID: "agent", Groups: groups, Scopes: scopes, OAuth: true}
	}
	run := func(who selection.Principal, tool string, args map[string]any) *envelope.Envelope {
		t.Helper()
		call := &Call{RequestID: uuid.NewString(), Client: "mcp client test 1", Principal: who}
		call.Raw, _ = json.Marshal(args)
		env := h.handler(tool)(context.Background(), call)
		env.Finish()
		tooltest.RecordCodes(env.Marshal())
		return env
	}
	write := []string{ScopeWrite}
	alice := as("alice", write, "dev")
	tag := map[string]any{"type": "add_tag", "params": map[string]any{"tag": "reviewed"}}
	p := run(alice, "preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"}, "action": tag})
	if p.Problem != nil {
		t.Fatalf("alice previews: %+v", p.Problem)
	}
	sel := dataOf(p)
	c := run(alice, "commit_bulk_action", map[string]any{"selection_id": sel["selection_id"], "expected_digest": sel["digest"], "action": tag, "mode": "dry_run", "wait_ms": 30000})
	if c.Problem != nil {
		t.Fatalf("alice commits: %+v", c.Problem)
	}
	opID := OperationID(c)

	unknownSel := run(as("bob", []string{ScopeRead}), "get_selection", map[string]any{"selection_id": "sel_no-such"})
	unknownOp := run(as("bob", []string{ScopeRead}), "get_operation", map[string]any{"operation_id": "op_no-such"})
	for _, tc := range []struct {
		who      selection.Principal
		readable bool
	}{
		{alice, true},
		{as("bob", []string{ScopeRead}), false},
		{as("mallory", write, "dev"), false},
		{as("ops-lead", []string{ScopeRead, selection.ScopeOperator}), true},
		{selection.Principal{Subject: selection.SubjectLocal}, true},
	} {
		g := run(tc.who, "get_selection", map[string]any{"selection_id": sel["selection_id"]})
		o := run(tc.who, "get_operation", map[string]any{"operation_id": opID})
		cm := run(tc.who, "commit_bulk_action", map[string]any{"selection_id": sel["selection_id"], "expected_digest": sel["digest"], "action": tag, "mode": "dry_run", "wait_ms": 30000})
		comp := run(tc.who, "preview_selection", map[string]any{"compensate": opID})
		if tc.readable {
			if g.Problem != nil || o.Problem != nil || cm.Problem != nil {
				t.Errorf("%s reads its records: %+v %+v %+v", tc.who.Subject, g.Problem, o.Problem, cm.Problem)
			}
			continue
		}
		for _, got := range []struct {
			what      string
			env, same *envelope.Envelope
		}{{"get_selection", g, unknownSel}, {"get_operation", o, unknownOp}, {"commit_bulk_action", cm, unknownSel}, {"compensate", comp, unknownOp}} {
			if got.env.Problem == nil || got.env.Problem.Code != got.same.Problem.Code || got.env.Problem.Detail != got.same.Problem.Detail {
				t.Errorf("%s %s: %+v; want the answer an unknown id gets, %+v", tc.who.Subject, got.what, got.env.Problem, got.same.Problem)
			}
		}
	}
}

// principalsConfig is the demo with policies on principals: archive is
// restricted to the ops group; pause_collection wants four eyes and an
// approver from leads.
func principalsConfig(base string) []byte {
	doc := string(fixtures.DemoConfig(base))
	doc = strings.Replace(doc, "    compensation: restore_state\n    approval: {mode: operator, destructive: true}",
		"    compensation: restore_state\n    principals: {groups: [ops]}\n    approval: {mode: operator, destructive: true}", 1)
	return []byte(strings.Replace(doc, "      unknown_category: [region]\n  resume_collection:",
		"      unknown_category: [region]\n      four_eyes: true\n      approvers: {groups: [leads]}\n  resume_collection:", 1))
}

// dataOf is an envelope's data as JSON values.
func dataOf(env *envelope.Envelope) map[string]any {
	var m struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(env.Marshal(), &m)
	return m.Data
}
