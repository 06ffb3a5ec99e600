package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// allItems follows get_selection's cursor and returns every page's items.
func (h *harness) allItems(args map[string]any) []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for hop := 0; hop < 1000; hop++ {
		r := h.call("get_selection", args)
		out = append(out, r.items()...)
		if r.env.Continuation.Kind != envelope.ContinueNextCursor {
			return out
		}
		args["cursor"] = r.env.Continuation.Cursor
	}
	h.t.Fatal("get_selection never ended")
	return nil
}

// TestSeedExample_ExclusionsAreListedAndNeverWritten: the manifest of "past
// due in eu except disputed and legal_hold" lists both exclusions with their
// counts, and no excluded record is ever written.
func TestSeedExample_ExclusionsAreListedAndNeverWritten(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	if !p.env.Complete || p.data["committable"] != true || p.data["kind"] != "scope" {
		t.Fatalf("want a complete committable scope selection: %v %v", p.reasonCodes(), p.data["committable_reasons"])
	}
	var disputed, legal, members int
	for _, rec := range fixtures.Subscriptions() {
		if rec["status"] != "past_due" || rec["region"] != "eu" {
			continue
		}
		tags := rec["tags"].([]any)
		switch {
		case slices.Contains(tags, any("disputed")):
			disputed++
		case slices.Contains(tags, any("legal_hold")):
			legal++
		default:
			members++
		}
	}
	ex := p.data["exclusions"].([]any)
	if len(ex) != 2 || int(ex[0].(map[string]any)["count"].(float64)) != disputed || int(ex[1].(map[string]any)["count"].(float64)) != legal {
		t.Fatalf("exclusions %v, want disputed %d and legal_hold %d", ex, disputed, legal)
	}
	if ex[0].(map[string]any)["reason"] != "disputed invoices stay" {
		t.Fatalf("the exclusion's reason is shown: %v", ex[0])
	}
	if c := p.data["counts"].(map[string]any); int(c["members"].(float64)) != members {
		t.Fatalf("members %v, want %d", c["members"], members)
	}
	ids := h.members(p.data["selection_id"])
	if len(ids) != members || firstDuplicate(ids) != "" {
		t.Fatalf("manifest has %d ids (dup %q), want %d", len(ids), firstDuplicate(ids), members)
	}
	if p.data["environment"] != "demo" || p.data["upstream"] == "" {
		t.Fatal("environment and upstream host are part of the manifest")
	}
	c := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	op := h.operation(c.data["operation_id"])
	if op.data["status"] != selection.OpCompleted || counts(op)[selection.TargetSucceeded] != members {
		t.Fatalf("operation %v %v", op.data["status"], op.data["counts"])
	}
	applied := h.api.AppliedAll(fixtures.DatasetSubscriptions)
	for _, rec := range fixtures.Subscriptions() {
		id := rec["id"].(string)
		want := 0
		if slices.Contains(ids, id) {
			want = 1
		}
		if applied[id] != want {
			t.Fatalf("%s written %d times, want %d", id, applied[id], want)
		}
	}
}

// TestCommitRefusals_NothingReachesTheUpstream checks every refusal code,
// each with state_changed none and no write at the fixture.
func TestCommitRefusals_NothingReachesTheUpstream(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := newHarness(t, withClock(clock))
	p := h.call("preview_selection", seedPreview(nil))
	partial := h.call("preview_selection", seedPreview(map[string]any{"max_pages": 1, "filter": map[string]any{"status": "past_due"}}))
	if partial.data["committable"] != false || partial.env.Complete {
		t.Fatal("an incomplete scan must not be committable")
	}
	otherKey := h.call("preview_selection", seedPreview(map[string]any{"filter": map[string]any{"status": "past_due", "region": "us"}}))
	first := h.call("commit_bulk_action", commitArgsFor(otherKey, "execute", map[string]any{"idempotency_key": "first-key-123"}))
	h.operation(first.data["operation_id"])
	writesBefore := len(h.api.Writes())

	wrongAction := commitArgsFor(p, "execute", nil)
	wrongAction["action"] = map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "a different reason entirely"}}
	otherType := commitArgsFor(p, "execute", nil)
	otherType["action"] = map[string]any{"type": "add_tag", "params": map[string]any{"tag": "vip"}}
	cases := []struct {
		name string
		args map[string]any
		code envelope.ProblemCode
	}{
		{"unknown selection", commitArgsFor(result{data: map[string]any{"selection_id": "sel_nope", "digest": p.data["digest"]}}, "execute", nil), envelope.ProblemSelectionNotFound},
		{"digest mismatch", commitArgsFor(result{data: map[string]any{"selection_id": p.data["selection_id"], "digest": "sha256:" + strings.Repeat("0", 64)}}, "execute", nil), envelope.ProblemDigestMismatch},
		{"other params", wrongAction, envelope.ProblemActionMismatch},
		{"other action", otherType, envelope.ProblemActionMismatch},
		{"not committable", commitArgsFor(partial, "execute", nil), envelope.ProblemNotCommittable},
		{"committed under another key", commitArgsFor(otherKey, "execute", map[string]any{"idempotency_key": "second-key-456"}), envelope.ProblemAlreadyCommitted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.call("commit_bulk_action", tc.args)
			if r.env.Problem == nil || r.env.Problem.Code != tc.code {
				t.Fatalf("want %s, got %+v", tc.code, r.env.Problem)
			}
			if r.env.Problem.StateChanged != envelope.StateNone || r.env.Problem.Retryable || r.env.Problem.NextAction == "" {
				t.Fatalf("a refusal says nothing changed and what to do: %+v", r.env.Problem)
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		clock.Advance(16 * time.Minute)
		r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
		if r.env.Problem == nil || r.env.Problem.Code != envelope.ProblemSelectionExpired || !strings.Contains(r.env.Problem.NextAction, "preview_selection") {
			t.Fatalf("want SELECTION_EXPIRED pointing to preview_selection, got %+v", r.env.Problem)
		}
	})
	t.Run("no mode", func(t *testing.T) {
		a := commitArgsFor(p, "", nil)
		delete(a, "mode")
		r := h.call("commit_bulk_action", a)
		if fieldsOf(r.env.Problem)["mode"] != envelope.FieldRequired {
			t.Fatalf("mode has no default: %+v", r.env.Problem)
		}
	})
	if got := len(h.api.Writes()); got != writesBefore {
		t.Fatalf("refused commits reached the upstream: %d writes", got-writesBefore)
	}
}

func TestCommit_StaleWhenTheActionDefinitionChanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	// airlock restarts on the same store with the action's definition edited.
	cfg, err := config.Parse([]byte(strings.Replace(string(fixtures.DemoConfig(h.apiURL)), "timeout: 2s", "timeout: 3s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	h.restart(func(c *Config) { c.Runtime = rt })
	r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if r.env.Problem == nil || r.env.Problem.Code != envelope.ProblemSelectionStale || r.env.Problem.StateChanged != envelope.StateNone {
		t.Fatalf("want SELECTION_STALE, got %+v", r.env.Problem)
	}
	if len(h.api.Writes()) != 0 {
		t.Fatal("a stale selection reached the upstream")
	}
}

func TestCommit_InvalidParamsListEveryField(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due"},
		"action": map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "short", "colour": "red"}}})
	got := fieldsOf(r.env.Problem)
	if got["action.params.reason"] != envelope.FieldFormat || got["action.params.colour"] != envelope.FieldUnknownArgument {
		t.Fatalf("want both params named, got %v", got)
	}
	r = h.call("preview_selection", map[string]any{"resource": "subscriptions", "action": map[string]any{"type": "archive"}})
	if got := fieldsOf(r.env.Problem); got["action.type"] != envelope.FieldUnknownAction {
		t.Fatalf("an action of another resource is unknown here: %v", got)
	}
}

func TestCommit_SameSelectionAndActionAgainReturnsTheOperation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	first := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	h.operation(first.data["operation_id"])
	writes := len(h.api.Writes())
	again := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if again.data["operation_id"] != first.data["operation_id"] || again.data["replayed"] != true {
		t.Fatalf("want the existing operation, got %v", again.data)
	}
	if len(h.api.Writes()) != writes {
		t.Fatal("a repeated commit wrote again")
	}
}

func TestCommit_ConcurrentCommitsMakeOneOperationAndOneWritePerTarget(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	const n = 5
	var wg sync.WaitGroup
	ids := make([]any, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
			ids[i] = r.data["operation_id"]
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == nil {
			t.Fatalf("concurrent commits made several operations: %v", ids)
		}
	}
	op := h.operation(ids[0])
	h.deps.Engine.Wait()
	members := h.members(p.data["selection_id"])
	if op.data["status"] != selection.OpCompleted || counts(op)["succeeded"] != len(members) {
		t.Fatalf("the one operation: status %v, counts %v, want %d succeeded", op.data["status"], counts(op), len(members))
	}
	applied := h.api.AppliedAll(fixtures.DatasetSubscriptions)
	if len(applied) != len(members) {
		t.Fatalf("%d targets written, want the %d members", len(applied), len(members))
	}
	for _, id := range members {
		if n := applied[id]; n != 1 {
			t.Fatalf("%s written %d times", id, n)
		}
	}
}

func TestDryRun_ReportsPerTargetAndWritesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	ids := h.members(p.data["selection_id"])
	// One target moves on after the preview.
	h.api.Collection(fixtures.DatasetSubscriptions).Update(ids[0], func(r fixtures.Record) { r["status"] = "active" })
	r := h.call("commit_bulk_action", commitArgsFor(p, "dry_run", nil))
	op := h.operation(r.data["operation_id"])
	if len(h.api.Writes()) != 0 {
		t.Fatal("a dry run wrote")
	}
	c := counts(op)
	if c[selection.TargetWouldSkip] != 1 || c[selection.TargetWouldSucceed] != len(ids)-1 {
		t.Fatalf("dry run counts %v", c)
	}
	if outcomes(op)[ids[0]] != selection.TargetWouldSkip {
		t.Fatal("the moved target would be skipped")
	}
	// A dry run does not use up the selection.
	ex := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if ex.data["replayed"] == true || ex.data["mode"] != "execute" {
		t.Fatalf("execute after a dry run is a new operation: %v", ex.data)
	}
}

// TestExecute_MovedTargetSkippedAndTimedOutWriteReconciled: one subscription
// changed after the preview (skipped, never written) and one write applies
// but its answer never arrives (unknown, then reconciled by re-reading).
func TestExecute_MovedTargetSkippedAndTimedOutWriteReconciled(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	ids := h.members(p.data["selection_id"])
	moved, hung := ids[1], ids[2]
	h.api.Collection(fixtures.DatasetSubscriptions).Update(moved, func(r fixtures.Record) { r["version"] = 9 })
	h.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{ApplyThenHang: map[string]bool{hung: true}, Hang: 3 * time.Second})
	r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	op := h.operation(r.data["operation_id"])
	oc := outcomes(op)
	if oc[moved] != selection.TargetSkipped || h.api.Applied(fixtures.DatasetSubscriptions, moved) != 0 {
		t.Fatalf("the moved target: %s, applied %d", oc[moved], h.api.Applied(fixtures.DatasetSubscriptions, moved))
	}
	if oc[hung] != selection.TargetSucceeded || h.api.Applied(fixtures.DatasetSubscriptions, hung) != 1 {
		t.Fatalf("the hung write: %s, applied %d", oc[hung], h.api.Applied(fixtures.DatasetSubscriptions, hung))
	}
	for _, res := range op.data["results"].([]any) {
		m := res.(map[string]any)
		if m["id"] == hung && !strings.Contains(m["note"].(string), "reconciled") {
			t.Fatalf("the reconciliation is visible in the journal: %v", m)
		}
		// The upstream's 409 for the moved target is its problem, per target.
		if m["id"] == moved {
			prob, _ := m["problem"].(map[string]any)
			if m["http_status"] != float64(409) || prob["code"] != string(envelope.ProblemUpstreamConflict) || prob["state_changed"] != envelope.StateNone {
				t.Fatalf("the moved target's result: %v", m)
			}
		}
	}
	if op.data["status"] != selection.OpCompleted {
		t.Fatalf("status %v", op.data["status"])
	}
}

func TestStopRules(t *testing.T) {
	t.Parallel()
	t.Run("a refused credential stops at the first write", func(t *testing.T) {
		h := newHarness(t)
		p := h.call("preview_selection", seedPreview(nil))
		h.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{FailAll: 401})
		r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
		op := h.operation(r.data["operation_id"])
		if op.data["status"] != selection.OpStopped || !strings.Contains(op.data["stop_reason"].(string), "401") {
			t.Fatalf("want stopped at 401, got %v %v", op.data["status"], op.data["stop_reason"])
		}
		if n := len(h.api.Writes()); n != 1 {
			t.Fatalf("%d writes attempted, want exactly 1", n)
		}
	})
	t.Run("isolated validation failures are collected", func(t *testing.T) {
		h := newHarness(t)
		p := h.call("preview_selection", seedPreview(nil))
		ids := h.members(p.data["selection_id"])
		h.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{FailIDs: map[string]int{ids[3]: 422, ids[7]: 422}})
		r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
		op := h.operation(r.data["operation_id"])
		c := counts(op)
		if op.data["status"] != selection.OpCompletedWithFailures || c[selection.TargetFailed] != 2 || c[selection.TargetSucceeded] != len(ids)-2 {
			t.Fatalf("want the two failures collected, got %v %v", op.data["status"], c)
		}
	})
	t.Run("more than half of 20 attempts failing stops", func(t *testing.T) {
		h := newHarness(t)
		p := h.call("preview_selection", seedPreview(nil))
		ids := h.members(p.data["selection_id"])
		fail := map[string]int{}
		for _, id := range ids[1:] {
			fail[id] = 422
		}
		h.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{FailIDs: fail})
		r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
		op := h.operation(r.data["operation_id"])
		c := counts(op)
		if op.data["status"] != selection.OpStopped || c[selection.TargetPending] == 0 || !strings.Contains(op.data["stop_reason"].(string), "failed") {
			t.Fatalf("want stopped by the failure ratio with targets left pending, got %v %v %v", op.data["status"], c, op.data["stop_reason"])
		}
	})
	t.Run("an unexpected status stops", func(t *testing.T) {
		h := newHarness(t)
		p := h.call("preview_selection", seedPreview(nil))
		h.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{FailAll: 405})
		r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
		op := h.operation(r.data["operation_id"])
		if op.data["status"] != selection.OpStopped || len(h.api.Writes()) != 1 {
			t.Fatalf("want stopped after one write, got %v with %d writes", op.data["status"], len(h.api.Writes()))
		}
	})
}

func TestBulkAction_PerTargetOutcomes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tag := map[string]any{"type": "add_tag", "params": map[string]any{"tag": "reviewed"}}
	p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "paused"}, "action": tag})
	ids := h.members(p.data["selection_id"])
	h.api.Collection(fixtures.DatasetSubscriptions).Update(ids[0], func(r fixtures.Record) { r["version"] = 7 })
	args := map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": tag, "mode": "execute"}
	op := h.operation(h.call("commit_bulk_action", args).data["operation_id"])
	c := counts(op)
	if c[selection.TargetSkipped] != 1 || c[selection.TargetSucceeded] != len(ids)-1 {
		t.Fatalf("bulk outcomes %v", c)
	}
	bulkCalls := 0
	for _, w := range h.api.Writes() {
		if strings.HasSuffix(w.Path, "bulk_tag") {
			bulkCalls++
		}
	}
	if want := (len(ids) + 49) / 50; bulkCalls != want {
		t.Fatalf("%d bulk requests for %d targets, want %d (batches of 50)", bulkCalls, len(ids), want)
	}
}

func TestGetSelection_PagesAreConsistentAndFilterable(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due"}, "action": pauseAction})
	before := h.members(p.data["selection_id"])
	// The upstream changes; the frozen manifest does not.
	h.api.Collection(fixtures.DatasetSubscriptions).Update(before[0], func(r fixtures.Record) { r["status"] = "active" })
	after := h.members(p.data["selection_id"])
	if !slices.Equal(before, after) {
		t.Fatal("the manifest changed with the upstream")
	}
	eu := h.allItems(map[string]any{"selection_id": p.data["selection_id"], "group": map[string]any{"region": "eu"}, "page_size": 500})
	for _, it := range eu {
		if it["fields"].(map[string]any)["region"] != "eu" {
			t.Fatalf("group filter let through %v", it)
		}
	}
	var euCount int
	for _, g := range p.data["groups"].(map[string]any)["region"].([]any) {
		if g.(map[string]any)["value"] == "eu" {
			euCount = int(g.(map[string]any)["count"].(float64))
		}
	}
	if len(eu) != euCount || euCount == 0 {
		t.Fatalf("group pages %d, group count %d", len(eu), euCount)
	}
	first := h.call("get_selection", map[string]any{"selection_id": p.data["selection_id"], "page_size": 5})
	bad := h.call("get_selection", map[string]any{"selection_id": p.data["selection_id"], "disposition": "excluded", "cursor": first.env.Continuation.Cursor})
	if fieldsOf(bad.env.Problem)["cursor"] != envelope.FieldCursorMismatch {
		t.Fatalf("a cursor of another listing: %+v", bad.env.Problem)
	}
	none := h.call("get_selection", map[string]any{"selection_id": "sel_nope"})
	if none.env.Problem == nil || none.env.Problem.Code != envelope.ProblemSelectionNotFound {
		t.Fatal("want SELECTION_NOT_FOUND")
	}
}

func TestAmbiguousRecords_BlockTheCommitUntilExcluded(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	coll := h.api.Collection(fixtures.DatasetSubscriptions)
	var target string
	for _, r := range coll.All() {
		if r["status"] == "past_due" && r["region"] == "eu" {
			target = r.ID()
			break
		}
	}
	coll.Update(target, func(r fixtures.Record) { delete(r, "tags") })
	p := h.call("preview_selection", seedPreview(nil))
	if p.data["committable"] != false || int(p.data["counts"].(map[string]any)["ambiguous"].(float64)) != 1 {
		t.Fatalf("a record without the exclusion's field is ambiguous: %v", p.data["counts"])
	}
	amb := p.data["ambiguous"].([]any)
	if len(amb) != 1 || amb[0].(map[string]any)["id"] != target || amb[0].(map[string]any)["note"] == "" {
		t.Fatalf("the ambiguous record is listed with why: %v", amb)
	}
	reasons := p.data["committable_reasons"].([]any)
	if len(reasons) != 1 || reasons[0].(map[string]any)["code"] != string(envelope.BlockerAmbiguous) {
		t.Fatalf("committable_reasons %v", reasons)
	}
	r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if r.env.Problem == nil || r.env.Problem.Code != envelope.ProblemNotCommittable {
		t.Fatalf("want SELECTION_NOT_COMMITTABLE, got %+v", r.env.Problem)
	}
}

func TestExplicitSelection_MembersAreReverifiedAtCommit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	coll := h.api.Collection(fixtures.DatasetServiceAccounts)
	var ids []string
	for _, r := range coll.All() {
		if r["owner"] == nil && r["_hidden"] != true && len(ids) < 4 {
			ids = append(ids, r.ID())
		}
	}
	ids = append(ids, "sa_99999")
	act := map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}
	anyIDs := make([]any, len(ids))
	for i, id := range ids {
		anyIDs[i] = id
	}
	p := h.call("preview_selection", map[string]any{"resource": "service_accounts", "ids": anyIDs, "action": act})
	if p.data["kind"] != "explicit" || p.data["committable"] != true {
		t.Fatalf("explicit selection: %v %v", p.data["kind"], p.data["committable_reasons"])
	}
	c := p.data["counts"].(map[string]any)
	if int(c["members"].(float64)) != 4 || int(c["excluded"].(float64)) != 1 {
		t.Fatalf("counts %v: the missing id is excluded and listed", c)
	}
	// Someone assigns an owner to one of them before the commit.
	coll.Update(ids[0], func(r fixtures.Record) { r["owner"] = "team-search" })
	args := map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": act, "mode": "execute"}
	op := h.operation(h.call("commit_bulk_action", args).data["operation_id"])
	oc := outcomes(op)
	if oc[ids[0]] != selection.TargetSkipped || h.api.Applied(fixtures.DatasetServiceAccounts, ids[0]) != 0 {
		t.Fatalf("the re-verified member must be skipped: %v", oc)
	}
	for _, id := range ids[1:4] {
		if oc[id] != selection.TargetSucceeded {
			t.Fatalf("%s: %s", id, oc[id])
		}
	}
	if rec, _ := coll.Get(ids[0]); rec["owner"] != "team-search" {
		t.Fatal("the other owner was overwritten")
	}
}

func TestCommit_WaitBudgetAnswersRunningThenPolls(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	h.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{Latency: 20 * time.Millisecond})
	r := h.call("commit_bulk_action", commitArgsFor(p, "execute", map[string]any{"wait_ms": 50}))
	if r.data["status"] != selection.OpRunning || !r.env.HasReason(envelope.OperationRunning) || r.env.Continuation.Kind != envelope.ContinueRetryAfter {
		t.Fatalf("want running with OPERATION_RUNNING, got %v %v", r.data["status"], r.reasonCodes())
	}
	op := h.operation(r.data["operation_id"])
	if op.data["status"] != selection.OpCompleted {
		t.Fatalf("status %v", op.data["status"])
	}
	if bad := h.call("get_operation", map[string]any{"operation_id": "op_nope"}); bad.env.Problem == nil || bad.env.Problem.Code != envelope.ProblemOperationNotFound {
		t.Fatal("want OPERATION_NOT_FOUND")
	}
	failed := h.call("get_operation", map[string]any{"operation_id": r.data["operation_id"], "outcome": "failed"})
	if len(failed.data["results"].([]any)) != 0 || !failed.env.Complete {
		t.Fatal("the outcome filter keeps only failed targets")
	}
}

// TestTakeOver_ReconcilesUnknownTargetsAndRunsTheRest: an operation left
// running by a stopped airlock, whose lease expired, is taken over: its
// in-flight targets become unknown and are re-read, and only the targets
// that never started are sent.
func TestTakeOver_ReconcilesUnknownTargetsAndRunsTheRest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	ids := h.members(p.data["selection_id"])
	ctx := context.Background()
	// Simulate the journal a crash leaves: one write applied and answered
	// (succeeded), one applied without an observed answer (in flight), one
	// sent but never applied (in flight), the rest never started.
	op := &selection.Operation{ID: "op_crashed", SelectionID: p.data["selection_id"].(string), Digest: p.data["digest"].(string),
		ActionDigest: p.data["action_digest"].(string), Action: selection.Action{Type: "pause_collection", Params: pauseAction["params"].(map[string]any)},
		Mode: selection.ModeExecute, Status: selection.OpRunning, CreatedAt: time.Now().Add(-time.Hour), UpdatedAt: time.Now().Add(-time.Hour)}
	op.Lease = selection.Lease{OperationID: op.ID, Holder: "a stopped airlock", Epoch: 1, Expires: time.Now().Add(time.Minute)}
	if _, _, err := h.deps.Store.CreateOperation(ctx, op); err != nil {
		t.Fatal(err)
	}
	if _, err := h.deps.Store.InitTargets(ctx, op.ID, op.SelectionID); err != nil {
		t.Fatal(err)
	}
	coll := h.api.Collection(fixtures.DatasetSubscriptions)
	apply := func(id string) {
		coll.Update(id, func(r fixtures.Record) { r["collection_paused"] = true; r["version"] = 2 })
	}
	apply(ids[0])
	apply(ids[1])
	now := time.Now()
	ts, _ := h.deps.Store.Targets(ctx, op.ID, selection.TargetQuery{Limit: 3})
	_ = h.deps.Store.Journal(ctx, op.Lease, []selection.Target{
		{ID: ids[0], Outcome: selection.TargetSucceeded, Version: "1", Before: ts[0].Before, Attempts: 1, AttemptAt: &now, DoneAt: &now},
		{ID: ids[1], Outcome: selection.TargetInFlight, Version: "1", Before: ts[1].Before, Attempts: 1, AttemptAt: &now},
		{ID: ids[2], Outcome: selection.TargetInFlight, Version: "1", Before: ts[2].Before, Attempts: 1, AttemptAt: &now},
	})
	if taken, err := h.deps.Engine.TakeOver(ctx); err != nil || len(taken) != 0 {
		t.Fatalf("an operation whose lease is live is not taken over: %v %v", taken, err)
	}
	got := h.call("get_operation", map[string]any{"operation_id": op.ID, "page_size": 500})
	if got.data["status"] != selection.OpRunning || counts(got)[selection.TargetInFlight] != 2 {
		t.Fatalf("before the lease expired: %v %v", got.data["status"], got.data["counts"])
	}
	// The stopped airlock's lease runs out: its last renewal was two
	// minutes ago.
	if _, err := h.deps.Store.RenewLease(ctx, op.Lease, time.Now().Add(-2*time.Minute), time.Minute); err != nil {
		t.Fatal(err)
	}
	if taken, err := h.deps.Engine.TakeOver(ctx); err != nil || len(taken) != 1 || taken[0] != op.ID {
		t.Fatalf("an operation whose lease expired is taken over: %v %v", taken, err)
	}
	h.deps.Engine.Wait()
	r := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if r.data["operation_id"] != op.ID {
		t.Fatalf("a repeated commit answers with the same operation, got %v", r.data["operation_id"])
	}
	fin := h.operation(op.ID)
	oc := outcomes(fin)
	if fin.data["status"] != selection.OpCompleted || oc[ids[1]] != selection.TargetSucceeded || oc[ids[2]] != selection.TargetSucceeded {
		t.Fatalf("after resume: %v %v", fin.data["status"], fin.data["counts"])
	}
	applied := h.api.AppliedAll(fixtures.DatasetSubscriptions)
	if applied[ids[0]] != 0 || applied[ids[1]] != 0 || applied[ids[2]] != 1 {
		t.Fatalf("resume must write only what was not applied: %v %v %v", applied[ids[0]], applied[ids[1]], applied[ids[2]])
	}
	for _, id := range ids[3:] {
		if applied[id] != 1 || oc[id] != selection.TargetSucceeded {
			t.Fatalf("%s: applied %d, %s", id, applied[id], oc[id])
		}
	}
}

// TestBulkEndpoint_BatchesOfAtMostMaxBatch: add_tag goes through the bulk
// endpoint: the targets go in batches of at most max_batch (50), each
// batch under its own idempotency key, each target's version in the body;
// a target that changed after the preview is reported skipped by the
// upstream's per-target result and keeps its tags; every other member is
// tagged once.
func TestBulkEndpoint_BatchesOfAtMostMaxBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tag := map[string]any{"type": "add_tag", "params": map[string]any{"tag": "reviewed"}}
	p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due"}, "action": tag})
	if p.data["committable"] != true {
		t.Fatalf("preview: %s", p.raw)
	}
	members := h.members(p.data["selection_id"])
	if len(members) <= 100 {
		t.Fatalf("%d members; the test needs more than two batches", len(members))
	}
	coll := h.api.Collection(fixtures.DatasetSubscriptions)
	changed := members[len(members)/2]
	coll.Update(changed, func(r fixtures.Record) { r["version"] = 99 })

	c := h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"],
		"action": tag, "mode": "execute"})
	if c.env.Problem != nil {
		t.Fatalf("commit: %s", c.raw)
	}
	op := h.operation(c.data["operation_id"])
	if got := counts(op); got["succeeded"] != len(members)-1 || got["skipped"] != 1 || op.data["status"] != selection.OpCompleted {
		t.Fatalf("status %v, counts %v; want %d succeeded, 1 skipped", op.data["status"], got, len(members)-1)
	}

	sent := map[string]int{}
	keys := map[string]bool{}
	batches := 0
	for _, w := range h.api.Writes() {
		if w.Path != "/v1/subscriptions/bulk_tag" {
			t.Fatalf("unexpected write %s %s", w.Method, w.Path)
		}
		batches++
		var body struct {
			Targets []struct {
				ID      string `json:"id"`
				Version any    `json:"version"`
			} `json:"targets"`
			Tag string `json:"tag"`
		}
		if err := json.Unmarshal(w.Body, &body); err != nil || body.Tag != "reviewed" {
			t.Fatalf("bulk body %s: %v", w.Body, err)
		}
		if len(body.Targets) == 0 || len(body.Targets) > 50 {
			t.Fatalf("a batch of %d targets; max_batch is 50", len(body.Targets))
		}
		if w.IdempotencyKey == "" || keys[w.IdempotencyKey] {
			t.Fatalf("batch %d: idempotency key %q missing or reused", batches, w.IdempotencyKey)
		}
		keys[w.IdempotencyKey] = true
		for _, tg := range body.Targets {
			if tg.Version == nil {
				t.Fatalf("target %s sent without its version", tg.ID)
			}
			sent[tg.ID]++
		}
	}
	if want := (len(members) + 49) / 50; batches != want {
		t.Fatalf("%d batches for %d targets, want %d", batches, len(members), want)
	}
	for _, id := range members {
		rec, _ := coll.Get(id)
		tagged := slices.Contains(rec["tags"].([]any), any("reviewed"))
		if sent[id] != 1 || tagged != (id != changed) {
			t.Errorf("%s: sent %d times, tagged %v", id, sent[id], tagged)
		}
	}
	if outcomes(op)[changed] != selection.TargetSkipped {
		t.Fatalf("the changed target: %v", outcomes(op)[changed])
	}
}

// TestReReadBeforeTheWrite_IsACheckNotACondition: an action that can only
// re-read its targets before writing (no version, no If-Match) is previewed
// with NOT_CONDITIONAL, which the approval text shows; one the upstream
// conditions (a version) is not.
func TestReReadBeforeTheWrite_IsACheckNotACondition(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": nil},
		"action": map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}})
	var w *envelope.Warning
	for i := range p.env.Warnings {
		if p.env.Warnings[i].Code == envelope.WarnNotConditional {
			w = &p.env.Warnings[i]
		}
	}
	if w == nil || w.Source != "assign_owner" || !strings.Contains(w.Message, "overwritten") {
		t.Fatalf("warnings %+v; want NOT_CONDITIONAL for assign_owner", p.env.Warnings)
	}
	got := h.call("get_selection", map[string]any{"selection_id": p.data["selection_id"]})
	if !got.env.HasWarning(envelope.WarnNotConditional) {
		t.Fatalf("get_selection warnings %+v; want NOT_CONDITIONAL kept with the selection", got.env.Warnings)
	}
	v := h.call("preview_selection", seedPreview(nil)) // pause_collection: conditional: version
	if v.env.HasWarning(envelope.WarnNotConditional) {
		t.Fatalf("a versioned write was called not conditional: %+v", v.env.Warnings)
	}
}
