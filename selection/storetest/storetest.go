// Package storetest is the contract suite every selection.Store must pass.
// Call Run from a test in the implementation's package.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/selection"
)

// Opener returns a fresh, empty store for one test; Reopen (optional)
// closes a store and opens the same data again, to check durability.
type Opener struct {
	Open   func(t *testing.T) selection.Store
	Reopen func(t *testing.T, s selection.Store) selection.Store
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func newSelection(id string) *selection.Selection {
	return &selection.Selection{ID: id, Resource: "subscriptions", Environment: "test", Upstream: "api.test", Kind: selection.KindScope,
		Selector: selection.Selector{Filter: map[string]any{"status": "past_due"}}, Action: selection.Action{Type: "pause", Params: map[string]any{}},
		ActionDigest: "sha256:a", ActionSpecDigest: "sha256:s", State: selection.StateBuilding, CreatedAt: t0, ExpiresAt: t0.Add(15 * time.Minute),
		Blockers: []selection.Blocker{}}
}

func rec(id, disp string, group any) selection.Record {
	return selection.Record{ID: id, Disposition: disp, Version: "v-" + id, Review: map[string]any{"id": id, "n": json.Number("1.5")},
		Before: map[string]any{"paused": false}, Groups: map[string]any{"region": group}, Restore: map[string]any{"owner": nil}}
}

// Run runs the contract suite: every subtest on a fresh store from o.
func Run(t *testing.T, o Opener) {
	t.Run("SelectionRoundTrip", func(t *testing.T) { testSelectionRoundTrip(t, o) })
	t.Run("RecordsInByteOrderWithFilters", func(t *testing.T) { testRecordsInByteOrderWithFilters(t, o) })
	t.Run("OneExecuteOperationPerSelectionAndAction", func(t *testing.T) { testOneExecuteOperationPerSelectionAndAction(t, o) })
	t.Run("JournalIsAtomicAndOrdered", func(t *testing.T) { testJournalIsAtomicAndOrdered(t, o) })
	t.Run("ExpiredLeasesAreTakenOnce", func(t *testing.T) { testExpiredLeasesAreTakenOnce(t, o) })
	t.Run("ApprovalUsedOnceAcrossConcurrentCallers", func(t *testing.T) { testApprovalUsedOnceAcrossConcurrentCallers(t, o) })
	t.Run("FrozenScansAreBounded", func(t *testing.T) { testFrozenScansAreBounded(t, o) })
	t.Run("MetaApprovalsAudit", func(t *testing.T) { testMetaApprovalsAudit(t, o) })
	t.Run("MetaKeysListInByteOrderAndDeleteMetaTakesAKeyAndItsTree", func(t *testing.T) { testMetaKeysAndDeleteMeta(t, o) })
	t.Run("ApprovedCategoriesAreAddedNotReplaced", func(t *testing.T) { testApprovedCategoriesAreAddedNotReplaced(t, o) })
	t.Run("NoncesAreUsedOnceAndForgottenAfterTheirTime", func(t *testing.T) { testNoncesAreUsedOnceAndForgottenAfterTheirTime(t, o) })
	t.Run("EveryRecordNamesItsPrincipal", func(t *testing.T) { testEveryRecordNamesItsPrincipal(t, o) })
	if o.Reopen != nil {
		t.Run("SurvivesReopen", func(t *testing.T) { testSurvivesReopen(t, o) })
	}
}

// setup fails the test when a step that prepares what it checks fails: a
// check made on a store that refused its setup proves nothing, and its
// failure would name the wrong cause.
func setup(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("setup: %s: %v", what, err)
	}
}

// setupOperation creates op, failing the test unless it is created.
func setupOperation(t *testing.T, s selection.Store, op *selection.Operation) {
	t.Helper()
	if _, created, err := s.CreateOperation(context.Background(), op); err != nil || !created {
		t.Fatalf("setup: create operation %s: created %v, %v", op.ID, created, err)
	}
}

// targets reads a page of an operation's targets, failing the test when
// the store cannot.
func targets(t *testing.T, s selection.Store, opID string, q selection.TargetQuery) []selection.Target {
	t.Helper()
	ts, err := s.Targets(context.Background(), opID, q)
	if err != nil {
		t.Fatalf("targets of %s: %v", opID, err)
	}
	return ts
}

func testSelectionRoundTrip(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	if _, err := s.Selection(ctx, "sel_missing"); !errors.Is(err, selection.ErrNotFound) {
		t.Fatalf("unknown selection: want ErrNotFound, got %v", err)
	}
	sel := newSelection("sel_1")
	if err := s.CreateSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	sel.State, sel.Digest, sel.Committable = selection.StateReady, "sha256:d", true
	sel.Summary.Members = 3
	if err := s.FinishSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	got, err := s.Selection(ctx, "sel_1")
	if err != nil || got.State != selection.StateReady || got.Digest != "sha256:d" || !got.Committable || got.Summary.Members != 3 || !got.ExpiresAt.Equal(sel.ExpiresAt) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if err := s.FinishSelection(ctx, newSelection("sel_other")); !errors.Is(err, selection.ErrNotFound) {
		t.Fatalf("finishing an unknown selection: want ErrNotFound, got %v", err)
	}
}

func testRecordsInByteOrderWithFilters(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	sel := newSelection("sel_2")
	if err := s.CreateSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	ids := []string{"b", "B", "a", "10", "9", "é", "a-1", "Z"}
	var recs []selection.Record
	for i, id := range ids {
		disp := selection.Member
		if i%3 == 2 {
			disp = selection.Excluded
		}
		var g any = "eu"
		switch i % 4 {
		case 1:
			g = nil
		case 2:
			g = "null"
		}
		recs = append(recs, rec(id, disp, g))
	}
	if err := s.PutRecords(ctx, sel.ID, recs[:4]); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRecords(ctx, sel.ID, recs[4:]); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ids)
	sort.Strings(want) // byte order
	var got []string
	after := ""
	for {
		page, err := s.Records(ctx, sel.ID, selection.RecordQuery{After: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			got = append(got, r.ID)
		}
		after = page[len(page)-1].ID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records in %v, want byte order %v", got, want)
	}
	var streamed []string
	if err := s.EachRecord(ctx, sel.ID, func(r selection.Record) error { streamed = append(streamed, r.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(streamed, want) {
		t.Fatalf("EachRecord in %v, want %v", streamed, want)
	}
	members, err := s.Records(ctx, sel.ID, selection.RecordQuery{Disposition: selection.Member, Limit: 100})
	if err != nil || len(members) != 6 {
		t.Fatalf("members: %d %v", len(members), err)
	}
	r := members[0]
	if r.Version == "" || r.Review["n"] != json.Number("1.5") || r.Before["paused"] != false {
		t.Fatalf("record fields lost: %+v", r)
	}
	nullGroup, err1 := s.Records(ctx, sel.ID, selection.RecordQuery{Group: map[string]string{"region": "null"}, Limit: 100})
	strGroup, err2 := s.Records(ctx, sel.ID, selection.RecordQuery{Group: map[string]string{"region": `"null"`}, Limit: 100})
	eu, err3 := s.Records(ctx, sel.ID, selection.RecordQuery{Group: map[string]string{"region": `"eu"`}, Limit: 100})
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatalf("group filter: %v", err)
	}
	if len(nullGroup) != 2 || len(strGroup) != 2 || len(eu) != 4 {
		t.Fatalf("group filter: null %d, \"null\" %d, eu %d; want 2, 2, 4", len(nullGroup), len(strGroup), len(eu))
	}
}

func testOneExecuteOperationPerSelectionAndAction(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	const n = 8
	var wg sync.WaitGroup
	created := make(chan string, n)
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := &selection.Operation{ID: fmt.Sprintf("op_%d", i), SelectionID: "sel_3", ActionDigest: "sha256:a", Mode: selection.ModeExecute,
				Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0, Counts: map[selection.Outcome]int{}}
			got, ok, err := s.CreateOperation(ctx, op)
			if err != nil {
				errs <- err
				return
			}
			if ok {
				created <- got.ID
			}
		}()
	}
	wg.Wait()
	close(created)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(created) != 1 {
		t.Fatalf("%d operations created for one selection and action, want 1", len(created))
	}
	dry := &selection.Operation{ID: "op_dry", SelectionID: "sel_3", ActionDigest: "sha256:a", Mode: selection.ModeDryRun, Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0}
	if _, ok, err := s.CreateOperation(ctx, dry); err != nil || !ok {
		t.Fatalf("a dry run is not limited to one: %v %v", ok, err)
	}
	other := &selection.Operation{ID: "op_other", SelectionID: "sel_3", ActionDigest: "sha256:b", Mode: selection.ModeExecute, Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0}
	if _, ok, err := s.CreateOperation(ctx, other); err != nil || !ok {
		t.Fatalf("another action on the same selection is another operation: %v %v", ok, err)
	}
	ops, err := s.OperationsOf(ctx, "sel_3")
	if err != nil || len(ops) != 3 {
		t.Fatalf("operations of the selection: %d %v", len(ops), err)
	}
}

func testJournalIsAtomicAndOrdered(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	sel := newSelection("sel_4")
	setup(t, "create selection", s.CreateSelection(ctx, sel))
	setup(t, "put records", s.PutRecords(ctx, sel.ID, []selection.Record{rec("t1", selection.Member, "eu"), rec("t2", selection.Member, "eu"), rec("t3", selection.Excluded, "eu")}))
	op := &selection.Operation{ID: "op_4", SelectionID: sel.ID, ActionDigest: "sha256:a", Mode: selection.ModeExecute, Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0}
	op.Lease = selection.Lease{OperationID: op.ID, Holder: "a", Epoch: 1, Expires: t0.Add(30 * time.Second)}
	setupOperation(t, s, op)
	lease := op.Lease
	n, err := s.InitTargets(ctx, op.ID, sel.ID)
	if err != nil || n != 2 {
		t.Fatalf("targets are the members: %d %v", n, err)
	}
	if n, err := s.InitTargets(ctx, op.ID, sel.ID); err != nil || n != 2 {
		t.Fatalf("creating the targets again creates none and counts them: %d %v", n, err)
	}
	ts := targets(t, s, op.ID, selection.TargetQuery{Limit: 10})
	if len(ts) != 2 || ts[0].Outcome != selection.TargetPending || ts[0].Version != "v-t1" || ts[0].Before["paused"] != false {
		t.Fatalf("initial targets: %+v", ts)
	}
	if v, ok := ts[0].Restore["owner"]; !ok || v != nil {
		t.Fatalf("initial targets: %+v", ts)
	}
	now := t0.Add(time.Second)
	err = s.Journal(ctx, lease, []selection.Target{
		{ID: "t1", Outcome: selection.TargetInFlight, Attempts: 1, AttemptAt: &now, RequestID: "r1"},
		{ID: "nope", Outcome: selection.TargetSucceeded},
	})
	if err == nil {
		t.Fatal("journaling an unknown target must fail")
	}
	ts = targets(t, s, op.ID, selection.TargetQuery{Limit: 10})
	if ts[0].Outcome != selection.TargetPending {
		t.Fatalf("a failed journal call applied part of its entries: %+v", ts[0])
	}
	if err := s.Journal(ctx, lease, []selection.Target{
		{ID: "t1", Outcome: selection.TargetInFlight, Attempts: 1, AttemptAt: &now, RequestID: "r1", Version: "v-t1"},
		{ID: "t1", Outcome: selection.TargetSucceeded, Attempts: 1, AttemptAt: &now, DoneAt: &now, HTTPStatus: 200, After: map[string]any{"paused": true}, Version: "v-t1"},
		{ID: "t2", Outcome: selection.TargetInFlight, Attempts: 1, AttemptAt: &now, Version: "v-t2"},
	}); err != nil {
		t.Fatal(err)
	}
	ts = targets(t, s, op.ID, selection.TargetQuery{Limit: 10})
	if ts[0].Outcome != selection.TargetSucceeded || ts[0].HTTPStatus != 200 || ts[0].After["paused"] != true || ts[0].Before["paused"] != false {
		t.Fatalf("entries apply in order: %+v", ts[0])
	}
	succeeded := targets(t, s, op.ID, selection.TargetQuery{Outcome: selection.TargetSucceeded, Limit: 10})
	if len(succeeded) != 1 || succeeded[0].ID != "t1" {
		t.Fatalf("outcome filter: %+v", succeeded)
	}
	counts, err := s.CountTargets(ctx, op.ID)
	if err != nil {
		t.Fatal(err)
	}
	if counts[selection.TargetSucceeded] != 1 || counts[selection.TargetInFlight] != 1 {
		t.Fatalf("counts %v", counts)
	}
	// A takeover after the lease expired: the in-flight target becomes
	// unknown, never failed or pending; the previous holder's writes
	// are refused from then on.
	if _, err := s.AcquireLease(ctx, op.ID, "b", t0.Add(10*time.Second), time.Minute); !errors.Is(err, selection.ErrLeaseHeld) {
		t.Fatalf("a live lease is not taken: %v", err)
	}
	taken, err := s.AcquireLease(ctx, op.ID, "b", t0.Add(31*time.Second), time.Minute)
	if err != nil || taken.Epoch != 2 || taken.Holder != "b" {
		t.Fatalf("an expired lease is taken with the next epoch: %+v %v", taken, err)
	}
	got, err := s.Operation(ctx, op.ID)
	if err != nil {
		t.Fatal(err)
	}
	ts = targets(t, s, op.ID, selection.TargetQuery{Limit: 10})
	if got.Status != selection.OpRunning || got.Lease.Epoch != 2 || ts[1].Outcome != selection.TargetUnknown || ts[1].Note == "" || ts[0].Outcome != selection.TargetSucceeded {
		t.Fatalf("after the takeover: %s %+v, %+v", got.Status, got.Lease, ts)
	}
	if err := s.Journal(ctx, lease, []selection.Target{{ID: "t2", Outcome: selection.TargetSucceeded}}); !errors.Is(err, selection.ErrLeaseLost) {
		t.Fatalf("the previous holder's journal write: %v", err)
	}
	if ts := targets(t, s, op.ID, selection.TargetQuery{Limit: 10}); ts[1].Outcome != selection.TargetUnknown {
		t.Fatalf("a fenced journal write applied: %+v", ts[1])
	}
	stale := *op
	stale.Status = selection.OpCompleted
	if err := s.UpdateOperation(ctx, &stale); !errors.Is(err, selection.ErrLeaseLost) {
		t.Fatalf("the previous holder's operation update: %v", err)
	}
	if _, err := s.RenewLease(ctx, lease, t0.Add(32*time.Second), time.Minute); !errors.Is(err, selection.ErrLeaseLost) {
		t.Fatalf("the previous holder's renewal: %v", err)
	}
	if l, err := s.RenewLease(ctx, taken, t0.Add(40*time.Second), time.Minute); err != nil || !l.Expires.Equal(t0.Add(100*time.Second)) {
		t.Fatalf("the holder renews: %+v %v", l, err)
	}
	if err := s.Journal(ctx, taken, []selection.Target{{ID: "t2", Outcome: selection.TargetSucceeded}}); err != nil {
		t.Fatalf("the new holder journals: %v", err)
	}
}

func testExpiredLeasesAreTakenOnce(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	fresh := &selection.Operation{ID: "op_fresh", SelectionID: "sel_5", ActionDigest: "sha256:a", Mode: selection.ModeExecute, Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0,
		Lease: selection.Lease{Holder: "a", Epoch: 1, Expires: t0.Add(time.Hour)}}
	stale := &selection.Operation{ID: "op_stale", SelectionID: "sel_5", ActionDigest: "sha256:b", Mode: selection.ModeExecute, Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0,
		Lease: selection.Lease{Holder: "a", Epoch: 1, Expires: t0.Add(time.Minute)}}
	done := &selection.Operation{ID: "op_done", SelectionID: "sel_5", ActionDigest: "sha256:c", Mode: selection.ModeExecute, Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0,
		Lease: selection.Lease{Holder: "a", Epoch: 1, Expires: t0.Add(time.Hour)}}
	for _, op := range []*selection.Operation{fresh, stale, done} {
		if _, _, err := s.CreateOperation(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	done.Status = selection.OpCompleted
	if err := s.UpdateOperation(ctx, done); err != nil {
		t.Fatal(err)
	}
	ids, err := s.ExpiredOperations(ctx, t0.Add(2*time.Minute), 10)
	if err != nil || !slices.Equal(ids, []string{"op_stale"}) {
		t.Fatalf("expired leases at +2m: %v %v; want only op_stale", ids, err)
	}
	const n = 8
	var wg sync.WaitGroup
	won := make(chan selection.Lease, n)
	for i := range n {
		wg.Go(func() {
			l, err := s.AcquireLease(ctx, "op_stale", fmt.Sprint("p", i), t0.Add(2*time.Minute), time.Minute)
			if err == nil {
				won <- l
			} else if !errors.Is(err, selection.ErrLeaseHeld) {
				t.Errorf("acquire: %v", err)
			}
		})
	}
	wg.Wait()
	close(won)
	if len(won) != 1 {
		t.Fatalf("%d processes took the same expired lease, want 1", len(won))
	}
	if ids, err := s.ExpiredOperations(ctx, t0.Add(2*time.Minute), 10); err != nil || len(ids) != 0 {
		t.Fatalf("a taken lease is not expired: %v %v", ids, err)
	}
	if _, err := s.AcquireLease(ctx, "op_missing", "p", t0, time.Minute); !errors.Is(err, selection.ErrNotFound) {
		t.Fatalf("an unknown operation: %v", err)
	}
	// An operation that stopped running released its lease: resuming it
	// does not wait for the expiry.
	if l, err := s.AcquireLease(ctx, "op_done", "p", t0.Add(time.Second), time.Minute); err != nil || l.Epoch != 2 {
		t.Fatalf("a released lease: %+v %v", l, err)
	}
}

func testApprovalUsedOnceAcrossConcurrentCallers(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	a := &selection.Approval{ID: "apr_c", SelectionID: "sel_c", Digest: "sha256:d", ActionDigest: "sha256:a", Decision: selection.DecisionApproved,
		Who: "alice", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute), Acknowledgements: []string{}}
	if err := s.PutApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	used := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint("op_", i)
			err := s.UseApproval(ctx, "apr_c", id, t0)
			if err == nil {
				used <- id
			} else if !errors.Is(err, selection.ErrConflict) {
				t.Errorf("use approval: %v", err)
			}
		})
	}
	wg.Wait()
	close(used)
	if len(used) != 1 {
		t.Fatalf("an approval was used by %d operations, want 1", len(used))
	}
	winner := <-used
	if err := s.UseApproval(ctx, "apr_c", winner, t0); err != nil {
		t.Fatalf("the operation that used it may use it again (a takeover does): %v", err)
	}
}

func testFrozenScansAreBounded(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	b := selection.ScanBounds{TTL: time.Minute, MaxScans: 3, MaxBytes: 1000}
	put := func(id string, rev int, size int, at time.Time) {
		t.Helper()
		doc := make([]byte, size)
		for i := range doc {
			doc[i] = byte('a' + rev%26)
		}
		if err := s.PutScan(ctx, selection.FrozenScan{ID: id, Revision: rev, Doc: doc, UsedAt: at}, b); err != nil {
			t.Fatal(err)
		}
	}
	put("s1", 1, 100, t0)
	put("s1", 2, 100, t0.Add(time.Second))
	put("s1", 2, 50, t0.Add(time.Second)) // a second save of revision 2 (another process's) loses
	got, err := s.FrozenScan(ctx, "s1", t0.Add(2*time.Second), time.Minute)
	if err != nil || got.Revision != 2 || len(got.Doc) != 100 || got.Doc[0] != 'c' {
		t.Fatalf("a stored scan reads back as its last revision: %+v %v", got, err)
	}
	if _, err := s.FrozenScan(ctx, "s1", t0.Add(2*time.Minute), time.Minute); !errors.Is(err, selection.ErrNotFound) {
		t.Fatalf("a scan unused for longer than its TTL: %v", err)
	}
	put("s2", 1, 100, t0.Add(3*time.Second))
	put("s3", 1, 100, t0.Add(4*time.Second))
	put("s4", 1, 100, t0.Add(5*time.Second))
	put("s5", 1, 100, t0.Add(6*time.Second))
	if _, err := s.FrozenScan(ctx, "s1", t0.Add(7*time.Second), time.Minute); !errors.Is(err, selection.ErrNotFound) {
		t.Fatalf("past MaxScans the least recently used goes first: %v", err)
	}
	for _, id := range []string{"s3", "s4", "s5"} {
		if _, err := s.FrozenScan(ctx, id, t0.Add(8*time.Second), time.Minute); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	put("big", 1, 950, t0.Add(9*time.Second))
	for _, id := range []string{"s3", "s4", "s5"} {
		if _, err := s.FrozenScan(ctx, id, t0.Add(10*time.Second), time.Minute); !errors.Is(err, selection.ErrNotFound) {
			t.Fatalf("past MaxBytes older scans go: %s %v", id, err)
		}
	}
	if got, err := s.FrozenScan(ctx, "big", t0.Add(10*time.Second), time.Minute); err != nil || len(got.Doc) != 950 {
		t.Fatalf("the scan just stored stays: %v", err)
	}
}

func testMetaApprovalsAudit(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	v, err := s.SetMetaIfAbsent(ctx, "k", []byte("first"))
	if err != nil || string(v) != "first" {
		t.Fatalf("meta: %q %v", v, err)
	}
	if v, err := s.SetMetaIfAbsent(ctx, "k", []byte("second")); err != nil || string(v) != "first" {
		t.Fatalf("meta is set once: %q %v", v, err)
	}
	if err := s.SetMeta(ctx, "k", []byte("third")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Meta(ctx, "k"); err != nil || string(v) != "third" {
		t.Fatalf("SetMeta replaces: %q %v", v, err)
	}
	for i, id := range []string{"sel_old", "sel_new"} {
		sel := newSelection(id)
		sel.CreatedAt = t0.Add(time.Duration(i) * time.Minute)
		setup(t, "create selection", s.CreateSelection(ctx, sel))
		sel.State = selection.StateReady
		setup(t, "finish selection", s.FinishSelection(ctx, sel))
	}
	building := newSelection("sel_building")
	setup(t, "create selection", s.CreateSelection(ctx, building))
	recent, err := s.RecentSelections(ctx, 10)
	if err != nil || len(recent) != 2 || recent[0].ID != "sel_new" {
		t.Fatalf("recent ready selections, newest first: %v %v", recent, err)
	}
	a := &selection.Approval{ID: "apr_1", SelectionID: "sel_6", Digest: "sha256:d", ActionDigest: "sha256:a", Decision: selection.DecisionApproved,
		Who: "alice", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute), Acknowledgements: []string{}}
	if err := s.PutApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.UseApproval(ctx, "apr_1", "op_1", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.UseApproval(ctx, "apr_1", "op_2", t0); !errors.Is(err, selection.ErrConflict) {
		t.Fatalf("an approval is used once: %v", err)
	}
	list, err := s.Approvals(ctx, "sel_6")
	if err != nil || len(list) != 1 || list[0].UsedBy != "op_1" {
		t.Fatalf("approvals: %+v %v", list, err)
	}
	op := &selection.Operation{ID: "op_a", SelectionID: "sel_6", ActionDigest: "sha256:a", Mode: selection.ModeExecute, Status: selection.OpCompleted, CreatedAt: t0, UpdatedAt: t0}
	setupOperation(t, s, op)
	events := []selection.AuditEvent{
		{At: t0, Kind: selection.AuditDecision, SelectionID: "sel_6", Event: "approved", Actor: "alice"},
		{At: t0.Add(time.Second), Kind: selection.AuditCall, OperationID: "op_a", SelectionID: "sel_6", Event: "write", Method: "POST", Status: 200},
		{At: t0, Kind: selection.AuditDecision, SelectionID: "sel_other", Event: "approved"},
	}
	if err := s.Audit(ctx, events); err != nil {
		t.Fatal(err)
	}
	trail, err := s.AuditTrail(ctx, "op_a")
	if err != nil || len(trail) != 2 || trail[0].Event != "approved" || trail[1].Method != "POST" {
		t.Fatalf("audit trail: %+v %v", trail, err)
	}
}

// testMetaKeysAndDeleteMeta: MetaKeys lists a range of keys in byte
// order, up to a limit; DeleteMeta removes a key and the keys below it
// (key/...), and never a key that only starts like it ("task/a0",
// "task/a.", "task/ab"): an expired task's records go, its neighbours stay.
func testMetaKeysAndDeleteMeta(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	all := []string{"task-expiry/0001/a", "task-expiry/0002/b", "task/a", "task/a.", "task/a/attempt/1", "task/a/result", "task/a0", "task/ab", "task/ab/result", "task/b", "tasks"}
	for _, k := range all {
		setup(t, "set "+k, s.SetMeta(ctx, k, []byte("v")))
	}
	keys, err := s.MetaKeys(ctx, "task/", "task0", 100)
	if want := []string{"task/a", "task/a.", "task/a/attempt/1", "task/a/result", "task/a0", "task/ab", "task/ab/result", "task/b"}; err != nil || !slices.Equal(keys, want) {
		t.Fatalf("MetaKeys [task/, task0): %q %v; want %q", keys, err, want)
	}
	if keys, err := s.MetaKeys(ctx, "task-expiry/", "task-expiry/0002", 100); err != nil || !slices.Equal(keys, []string{"task-expiry/0001/a"}) {
		t.Fatalf("MetaKeys below a bound: %q %v", keys, err)
	}
	if keys, err := s.MetaKeys(ctx, "", "\x7f", 3); err != nil || !slices.Equal(keys, all[:3]) {
		t.Fatalf("MetaKeys with a limit of 3: %q %v", keys, err)
	}
	if err := s.DeleteMeta(ctx, "task/a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMeta(ctx, "task/none"); err != nil {
		t.Fatalf("deleting what is not there: %v", err)
	}
	keys, err = s.MetaKeys(ctx, "", "\x7f", 100)
	if want := []string{"task-expiry/0001/a", "task-expiry/0002/b", "task/a.", "task/a0", "task/ab", "task/ab/result", "task/b", "tasks"}; err != nil || !slices.Equal(keys, want) {
		t.Fatalf("after DeleteMeta(task/a): %q %v; want %q", keys, err, want)
	}
	if _, err := s.Meta(ctx, "task/a"); !errors.Is(err, selection.ErrNotFound) {
		t.Fatalf("a deleted key: %v", err)
	}
}

func testSurvivesReopen(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	sel := newSelection("sel_7")
	setup(t, "create selection", s.CreateSelection(ctx, sel))
	setup(t, "put records", s.PutRecords(ctx, sel.ID, []selection.Record{rec("x", selection.Member, "eu")}))
	op := &selection.Operation{ID: "op_7", SelectionID: sel.ID, ActionDigest: "sha256:a", Mode: selection.ModeExecute, Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0}
	setupOperation(t, s, op)
	if _, err := s.InitTargets(ctx, op.ID, sel.ID); err != nil {
		t.Fatalf("setup: init targets: %v", err)
	}
	now := t0
	if err := s.Journal(ctx, selection.Lease{OperationID: op.ID}, []selection.Target{{ID: "x", Outcome: selection.TargetInFlight, Attempts: 1, AttemptAt: &now}}); err != nil {
		t.Fatal(err)
	}
	s = o.Reopen(t, s)
	ts, err := s.Targets(ctx, op.ID, selection.TargetQuery{Limit: 10})
	if err != nil || len(ts) != 1 || ts[0].Outcome != selection.TargetInFlight {
		t.Fatalf("the journal did not survive a reopen: %+v %v", ts, err)
	}
}

// testEveryRecordNamesItsPrincipal: the selection, operation, approval and
// audit line each read back with the principal they were written with,
// through every read path; one written without a principal reads as
// unrecorded, never as empty.
func testEveryRecordNamesItsPrincipal(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	alice := selection.Principal{Subject: "alice@example.com", ClientID: "agent-1", Groups: []string{"ops"}, Scopes: []string{"airlock:write"}, OAuth: true}
	bob := selection.Principal{Subject: "bob", ClientID: "review-page"}
	want := func(what string, got, w selection.Principal) {
		t.Helper()
		if got.Subject != w.Subject || got.ClientID != w.ClientID {
			t.Errorf("%s: principal %+v, want subject %q client %q", what, got, w.Subject, w.ClientID)
		}
	}
	unrecorded := selection.Principal{Subject: selection.SubjectUnrecorded}

	sel := newSelection("sel_who")
	sel.Principal = alice
	anon := newSelection("sel_anon")
	for _, x := range []*selection.Selection{sel, anon} {
		if err := s.CreateSelection(ctx, x); err != nil {
			t.Fatal(err)
		}
		x.State = selection.StateReady
		if err := s.FinishSelection(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Selection(ctx, "sel_who")
	if err != nil {
		t.Fatal(err)
	}
	want("selection", got.Principal, alice)
	if got, err := s.Selection(ctx, "sel_anon"); err != nil {
		t.Fatal(err)
	} else {
		want("selection written without a principal", got.Principal, unrecorded)
	}
	recent, err := s.RecentSelections(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recent {
		if r.ID == "sel_who" {
			want("recent selection", r.Principal, alice)
		}
	}

	op := &selection.Operation{ID: "op_who", SelectionID: "sel_who", ActionDigest: "sha256:a", Mode: selection.ModeExecute,
		Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0, Counts: map[selection.Outcome]int{}, Principal: alice}
	if _, _, err := s.CreateOperation(ctx, op); err != nil {
		t.Fatal(err)
	}
	again := &selection.Operation{ID: "op_who_again", SelectionID: "sel_who", ActionDigest: "sha256:a", Mode: selection.ModeExecute,
		Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0, Counts: map[selection.Outcome]int{}, Principal: bob}
	existing, created, err := s.CreateOperation(ctx, again)
	if err != nil || created {
		t.Fatalf("second execute operation: created %v, %v", created, err)
	}
	want("the existing operation, returned to another principal", existing.Principal, alice)
	gotOp, err := s.Operation(ctx, "op_who")
	if err != nil {
		t.Fatal(err)
	}
	want("operation", gotOp.Principal, alice)
	ops, err := s.OperationsOf(ctx, "sel_who")
	if err != nil || len(ops) != 1 {
		t.Fatalf("operations of the selection: %d %v", len(ops), err)
	}
	want("operations of the selection", ops[0].Principal, alice)
	dry := &selection.Operation{ID: "op_anon", SelectionID: "sel_anon", ActionDigest: "sha256:a", Mode: selection.ModeDryRun,
		Status: selection.OpRunning, CreatedAt: t0, UpdatedAt: t0, Counts: map[selection.Outcome]int{}}
	if _, _, err := s.CreateOperation(ctx, dry); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Operation(ctx, "op_anon"); err == nil {
		want("operation written without a principal", got.Principal, unrecorded)
	}

	ap := &selection.Approval{ID: "apr_who", SelectionID: "sel_who", Digest: "sha256:d", ActionDigest: "sha256:a", Decision: selection.DecisionApproved,
		Who: "review page: Bob", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute), Acknowledgements: []string{}, Principal: bob}
	if err := s.PutApproval(ctx, ap); err != nil {
		t.Fatal(err)
	}
	if err := s.UseApproval(ctx, "apr_who", "op_who", t0); err != nil {
		t.Fatal(err)
	}
	aps, err := s.Approvals(ctx, "sel_who")
	if err != nil || len(aps) != 1 {
		t.Fatalf("approvals: %v %v", aps, err)
	}
	want("approval, after it was used", aps[0].Principal, bob)

	events := []selection.AuditEvent{
		{At: t0, Kind: selection.AuditDecision, SelectionID: "sel_who", Event: "preview", Principal: alice},
		{At: t0.Add(time.Second), Kind: selection.AuditDecision, SelectionID: "sel_who", Event: "approved", Principal: bob},
		{At: t0.Add(2 * time.Second), Kind: selection.AuditCall, OperationID: "op_who", SelectionID: "sel_who", Event: "request", Principal: alice},
		{At: t0.Add(3 * time.Second), Kind: selection.AuditDecision, OperationID: "op_who", SelectionID: "sel_who", Event: "note"},
	}
	if err := s.Audit(ctx, events); err != nil {
		t.Fatal(err)
	}
	trail, err := s.AuditTrail(ctx, "op_who")
	if err != nil || len(trail) != 4 {
		t.Fatalf("audit trail: %+v %v", trail, err)
	}
	want("audit: preview", trail[0].Principal, alice)
	want("audit: approval", trail[1].Principal, bob)
	want("audit: call", trail[2].Principal, alice)
	want("audit line written without a principal", trail[3].Principal, unrecorded)
}
