package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

// snapshot deep-copies a fixture collection, keyed by id.
func snapshot(t *testing.T, c *fixtures.Collection, drop ...string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range c.All() {
		var m map[string]any
		b, _ := json.Marshal(r)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range drop {
			delete(m, k)
		}
		out[r.ID()] = m
	}
	return out
}

// diff lists the records that differ between two snapshots.
func diff(a, b map[string]map[string]any) []string {
	var out []string
	for id, ra := range a {
		if !reflect.DeepEqual(ra, b[id]) {
			out = append(out, fmt.Sprintf("%s: %v != %v", id, ra, b[id]))
		}
	}
	if len(a) != len(b) {
		out = append(out, fmt.Sprintf("%d records != %d", len(a), len(b)))
	}
	return out
}

// commitAndWait commits a preview's selection with the action it shows and
// waits for the operation.
func (h *harness) commitAndWait(p result) result {
	h.t.Helper()
	c := h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"],
		"action": p.data["action"], "mode": "execute"})
	if c.env.Problem != nil {
		h.t.Fatalf("commit: %s", c.raw)
	}
	return h.operation(c.data["operation_id"])
}

// TestCompensation_RoundTripRestoresTheDemoDataExactly: archive the
// inactive projects, then preview and commit the compensation: every
// project is back, byte for byte, ETag included.
func TestCompensation_RoundTripRestoresTheDemoDataExactly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	projects := h.api.Collection(fixtures.DatasetProjects)
	before := snapshot(t, projects)

	p := h.call("preview_selection", map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "action": archive})
	h.approveAsOperator(p.data["selection_id"])
	op := h.commitAndWait(p)
	archived := counts(op)["succeeded"]
	if archived == 0 || len(diff(before, snapshot(t, projects))) != archived {
		t.Fatalf("archive changed %d projects, %d succeeded", len(diff(before, snapshot(t, projects))), archived)
	}

	comp := h.call("preview_selection", map[string]any{"compensate": op.data["operation_id"]})
	if comp.env.Problem != nil {
		t.Fatalf("compensation preview: %s", comp.raw)
	}
	if comp.data["compensates"] != op.data["operation_id"] || comp.data["kind"] != "explicit" || comp.data["committable"] != true ||
		comp.data["action"].(map[string]any)["type"] != "restore_state" {
		t.Fatalf("compensation selection: %s", comp.raw)
	}
	if n := int(comp.data["counts"].(map[string]any)["members"].(float64)); n != archived {
		t.Fatalf("%d members, want the %d archived", n, archived)
	}
	undo := h.commitAndWait(comp)
	if counts(undo)["succeeded"] != archived || undo.data["status"] != selection.OpCompleted {
		t.Fatalf("compensation: %s", undo.raw)
	}
	if d := diff(before, snapshot(t, projects)); len(d) != 0 {
		t.Fatalf("not restored:\n%s", strings.Join(d, "\n"))
	}
	// A compensation has no compensation of its own.
	if r := h.call("preview_selection", map[string]any{"compensate": undo.data["operation_id"]}); problemCode(r) != envelope.ProblemCompensationUnavailable {
		t.Fatalf("compensating a compensation: %s", r.raw)
	}
}

// TestCompensation_TargetsChangedSinceAreLeftAlone: an owner someone else
// set after the operation is not overwritten by the undo; the rest go back
// to having no owner.
func TestCompensation_TargetsChangedSinceAreLeftAlone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	accounts := h.api.Collection(fixtures.DatasetServiceAccounts)
	before := snapshot(t, accounts)

	// Named ids: the demo credential cannot see every account, so a scope
	// selection over owner=null would not be committable.
	var ids []any
	for _, r := range accounts.All() {
		if r["owner"] == nil && r["_hidden"] != true && len(ids) < 6 {
			ids = append(ids, r.ID())
		}
	}
	p := h.call("preview_selection", map[string]any{"resource": "service_accounts", "ids": ids, "action": assignOwner})
	op := h.commitAndWait(p)
	var moved string
	for id, o := range outcomes(op) {
		if o == selection.TargetSucceeded {
			moved = id
			break
		}
	}
	accounts.Update(moved, func(r fixtures.Record) { r["owner"] = "team-search" })

	comp := h.call("preview_selection", map[string]any{"compensate": op.data["operation_id"]})
	var changed float64
	for _, x := range comp.data["exclusions"].([]any) {
		if m := x.(map[string]any); strings.HasPrefix(fmt.Sprint(m["reason"]), "changed since the operation") {
			changed = m["count"].(float64)
		}
	}
	if changed != 1 {
		t.Fatalf("exclusions %v: the changed account is excluded and counted", comp.data["exclusions"])
	}
	h.commitAndWait(comp)
	after := snapshot(t, accounts)
	if after[moved]["owner"] != "team-search" {
		t.Fatalf("the owner set since was overwritten: %v", after[moved])
	}
	after[moved]["owner"] = nil
	if d := diff(before, after); len(d) != 0 {
		t.Fatalf("not restored:\n%s", strings.Join(d, "\n"))
	}
}

// TestCompensation_SaysWhatCannotBeUndone: pausing collection e-mails the
// customer; the undo restores the flag and says the e-mail stays sent.
func TestCompensation_SaysWhatCannotBeUndone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	subs := h.api.Collection(fixtures.DatasetSubscriptions)
	// The upstream owns version and updated_at; everything else comes back.
	before := snapshot(t, subs, "version", "updated_at")
	op := h.commitAndWait(h.call("preview_selection", seedPreview(nil)))

	comp := h.call("preview_selection", map[string]any{"compensate": op.data["operation_id"]})
	if fmt.Sprint(comp.data["cannot_be_undone"]) != "[the customer is emailed that collection is paused]" ||
		comp.data["action"].(map[string]any)["type"] != "resume_collection" {
		t.Fatalf("compensation: %s", comp.raw)
	}
	h.commitAndWait(comp)
	if d := diff(before, snapshot(t, subs, "version", "updated_at")); len(d) != 0 {
		t.Fatalf("not restored:\n%s", strings.Join(d, "\n"))
	}
}

// TestCompensation_Refusals: only a finished execute operation of an
// action with a compensation can be undone, and compensate stands alone.
func TestCompensation_Refusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	dry := h.call("commit_bulk_action", commitArgsFor(p, "dry_run", nil))
	h.operation(dry.data["operation_id"])
	if r := h.call("preview_selection", map[string]any{"compensate": dry.data["operation_id"]}); problemCode(r) != envelope.ProblemCompensationUnavailable {
		t.Fatalf("dry run: %s", r.raw)
	}
	if r := h.call("preview_selection", map[string]any{"compensate": "op_00000000-0000-0000-0000-000000000000"}); problemCode(r) != envelope.ProblemOperationNotFound {
		t.Fatalf("unknown operation: %s", r.raw)
	}
	r := h.call("preview_selection", map[string]any{"compensate": dry.data["operation_id"], "resource": "subscriptions", "action": pauseAction})
	if problemCode(r) != envelope.ProblemInvalidArguments || r.env.Problem.Errors[0].Field != "compensate" {
		t.Fatalf("compensate with resource: %s", r.raw)
	}
	if r := h.call("preview_selection", map[string]any{}); problemCode(r) != envelope.ProblemInvalidArguments || len(r.env.Problem.Errors) != 2 {
		t.Fatalf("neither: %s", r.raw)
	}
}

// TestCompensation_GoesThroughTheSameApproval: an undo is a write like any
// other: when its action's policy asks for an operator, the compensation
// is refused until one approves that compensation selection, and then it
// restores the data.
func TestCompensation_GoesThroughTheSameApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(u string) []byte {
		return []byte(strings.Replace(string(fixtures.DemoConfig(u)), "      - {field: state, to: \"{{restore.state}}\"}\n",
			"      - {field: state, to: \"{{restore.state}}\"}\n    approval: {mode: operator}\n", 1))
	}))
	projects := h.api.Collection(fixtures.DatasetProjects)
	before := snapshot(t, projects)
	p := h.call("preview_selection", map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "action": archive})
	h.approveAsOperator(p.data["selection_id"])
	op := h.commitAndWait(p)

	comp := h.call("preview_selection", map[string]any{"compensate": op.data["operation_id"]})
	if ap := comp.data["approval"].(map[string]any); ap["mode"] != "operator" {
		t.Fatalf("the compensation's approval: %v", ap)
	}
	args := map[string]any{"selection_id": comp.data["selection_id"], "expected_digest": comp.data["digest"], "action": comp.data["action"], "mode": "execute"}
	writes := h.writesTo()
	// The archive's approval, spent, does not carry over to its undo.
	if r := h.call("commit_bulk_action", args); problemCode(r) != envelope.ProblemApprovalRequired {
		t.Fatalf("an unapproved compensation: %s", r.raw)
	}
	if h.writesTo() != writes {
		t.Fatal("the unapproved compensation wrote")
	}
	h.approveAsOperator(comp.data["selection_id"])
	undo := h.commitAndWait(comp)
	if undo.data["status"] != selection.OpCompleted {
		t.Fatalf("the approved compensation: %s", undo.raw)
	}
	if d := diff(before, snapshot(t, projects)); len(d) != 0 {
		t.Fatalf("not restored:\n%s", strings.Join(d, "\n"))
	}
}
