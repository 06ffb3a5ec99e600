package selection_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/internal/memnet"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/upstream"
)

// leaseLab previews n subscriptions, mostly past due, for
// pause_collection against a fixture whose writes take 20 ms.
func leaseLab(t *testing.T, n int) (*fixtures.Server, *sqlitestore.SQLite, *upstream.Runtime, *selection.Selection) {
	t.Helper()
	return leaseLabOn(t, n, upstream.WallClock)
}

// leaseLabOn is leaseLab with the upstream's client on clock (its
// cooldowns and rate limiter).
func leaseLabOn(t *testing.T, n int, clock upstream.Clock) (*fixtures.Server, *sqlitestore.SQLite, *upstream.Runtime, *selection.Selection) {
	t.Helper()
	api := &fixtures.Server{OnUnknownRoute: func(m, p string) { t.Errorf("fixture: unexpected %s %s", m, p) }}
	api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, benchMostlyPastDue))
	api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{Latency: 20 * time.Millisecond})
	var nw memnet.Network
	base := nw.Serve(t, api)
	cfg := fixtures.Config(base, fixtures.Resource{Name: "subscriptions", Dataset: fixtures.DatasetSubscriptions,
		Dialect: fixtures.DialectCursor, PageSize: 100, Extra: benchResourceYAML})
	c, err := config.Parse(append(cfg, benchActionsYAML...))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(context.Background(), c, upstream.Options{Clock: clock, DialContext: nw.DialContext, Getenv: func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultAdminToken
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	p := &selection.Previewer{Store: store, Clock: upstream.WallClock}
	res, err := p.Preview(ctx, selection.PreviewRequest{Resource: rt.Resources["subscriptions"], Action: rt.Actions["pause_collection"],
		Params: map[string]any{"reason": benchReason}, Budget: upstream.Budget{MaxPages: 100, Deadline: time.Minute}, RequestID: "t", Environment: rt.Environment})
	if err != nil || !res.Selection.Committable {
		t.Fatalf("preview: %v %+v", err, res.Selection.Blockers)
	}
	return api, store, rt, res.Selection
}

// TestLease_ARunTakenOverRecordsNothingMore: once another holder took an
// operation's lease, the run that held it sends no new write, its journal
// writes are refused and it does not record the operation's end: the
// store holds what the run had journaled before the takeover.
func TestLease_ARunTakenOverRecordsNothingMore(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testLeaseARunTakenOverRecordsNothingMore)
}

func testLeaseARunTakenOverRecordsNothingMore(t *testing.T) {
	const n = 400
	api, store, rt, sel := leaseLab(t, n)
	ctx := context.Background()
	e := &selection.Engine{Store: store, Runtime: rt, Clock: upstream.WallClock, Background: ctx, Holder: "a", LeaseTTL: time.Minute}
	r, prob := e.Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, Wait: time.Millisecond, RequestID: "t"})
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	opID := r.Operation.ID
	for {
		counts, _ := store.CountTargets(ctx, opID)
		if counts[selection.TargetSucceeded] >= 20 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Another process takes the operation over (as if the lease had
	// expired): the epoch moves on.
	taken, err := store.AcquireLease(ctx, opID, "b", time.Now().Add(2*time.Minute), time.Minute)
	if err != nil || taken.Epoch != 2 {
		t.Fatalf("takeover: %+v %v", taken, err)
	}
	atTakeover := targetsByID(t, store, opID)
	writesAtTakeover := len(api.Writes())
	e.Wait()
	if got := targetsByID(t, store, opID); len(got) != len(atTakeover) {
		t.Fatalf("%d targets, was %d", len(got), len(atTakeover))
	} else {
		for id, o := range got {
			if o != atTakeover[id] {
				t.Errorf("%s became %s after the takeover (was %s): a fenced write went through", id, o, atTakeover[id])
			}
		}
	}
	// Writes already on the wire at the takeover may still arrive: at
	// most one per worker (concurrency 4).
	if extra := len(api.Writes()) - writesAtTakeover; extra > 4 {
		t.Fatalf("%d writes arrived after the takeover; at most the 4 already sent may", extra)
	}
	op, err := store.Operation(ctx, opID)
	if err != nil || op.Status != selection.OpRunning || op.Lease.Holder != "b" {
		t.Fatalf("the operation after the first run ended: %s held by %q (%v); its end belongs to the new holder", op.Status, op.Lease.Holder, err)
	}
}

// pausingStore moves the clock past the lease's safety margin right after
// the first intent it writes, as a process paused during that write (a
// stopped VM, a long GC pause) sees time on waking. From then on it cannot
// renew the lease, as such a process finds its store connection gone: the
// run's fence alone decides, not the race between the heartbeat that the
// jump wakes and the run's next write.
type pausingStore struct {
	selection.Store
	clock  *clocktest.Fake
	jump   time.Duration
	jumped atomic.Bool
}

func (s *pausingStore) RenewLease(ctx context.Context, l selection.Lease, now time.Time, ttl time.Duration) (selection.Lease, error) {
	if s.jumped.Load() {
		return l, errors.New("connection reset by peer")
	}
	return s.Store.RenewLease(ctx, l, now, ttl)
}

func (s *pausingStore) Journal(ctx context.Context, l selection.Lease, entries []selection.Target) error {
	err := s.Store.Journal(ctx, l, entries)
	for _, e := range entries {
		if err == nil && e.Outcome == selection.TargetInFlight && s.jumped.CompareAndSwap(false, true) {
			s.clock.Advance(s.jump)
			break
		}
	}
	return err
}

// TestLease_ARunThatFindsItsLeaseExpiringLeavesTheEndToTheTakeover: a run
// that wakes past its lease's safety margin right after journaling an
// intent does not send that write and sends nothing more. The target goes
// back to what it was (not in flight, so not unknown after a takeover),
// and the run records no end, whether or not its heartbeat renewed the
// lease meanwhile: the operation stays running until its lease runs out,
// then a takeover finishes it, each target written once.
func TestLease_ARunThatFindsItsLeaseExpiringLeavesTheEndToTheTakeover(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testLeaseARunThatFindsItsLeaseExpiringLeavesTheEndToTheTakeover)
}

func testLeaseARunThatFindsItsLeaseExpiringLeavesTheEndToTheTakeover(t *testing.T) {
	const n = 300
	api, store, rt, sel := leaseLab(t, n)
	ctx := context.Background()
	const ttl = 3 * time.Second
	clock := clocktest.New(time.Now())
	ps := &pausingStore{Store: store, clock: clock, jump: ttl}
	e := &selection.Engine{Store: ps, Runtime: rt, Clock: clock, Background: ctx, Holder: "a", LeaseTTL: ttl}
	r, prob := e.Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, Wait: 0, RequestID: "t"})
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	opID := r.Operation.ID
	e.Wait()
	op, err := store.Operation(ctx, opID)
	if err != nil || op.Status != selection.OpRunning {
		t.Fatalf("after the run stopped for its lease: %s (%q) %v; want running, its end left to a takeover", op.Status, op.StopReason, err)
	}
	counts, _ := store.CountTargets(ctx, opID)
	if counts[selection.TargetInFlight] != 0 || counts[selection.TargetUnknown] != 0 || counts[selection.TargetPending] == 0 {
		t.Fatalf("counts %v: every target is succeeded or pending, none in flight or unknown", counts)
	}
	// The lease runs out; a takeover (here by the same engine) finishes.
	clock.Advance(2 * ttl)
	if taken, err := e.TakeOver(ctx); err != nil || len(taken) != 1 {
		t.Fatalf("takeover: %v %v", taken, err)
	}
	e.Wait()
	op, err = store.Operation(ctx, opID)
	if err != nil || op.Status != selection.OpCompleted || op.Counts[selection.TargetSucceeded] != op.Total {
		t.Fatalf("after the takeover: %s %v (%q) %v; want completed, all %d succeeded", op.Status, op.Counts, op.StopReason, err, op.Total)
	}
	if w := len(api.Writes()); w != op.Total {
		t.Fatalf("%d writes for %d targets", w, op.Total)
	}
}

func targetsByID(t *testing.T, s selection.Store, opID string) map[string]selection.Outcome {
	t.Helper()
	out := map[string]selection.Outcome{}
	after := ""
	for {
		page, err := s.Targets(context.Background(), opID, selection.TargetQuery{After: after, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page {
			out[x.ID] = x.Outcome
		}
		if len(page) < 500 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

// failingOutcomes fails the first journal write that holds outcomes only,
// as a store that refused one transaction would.
type failingOutcomes struct {
	selection.Store
	failed atomic.Bool
}

func (s *failingOutcomes) Journal(ctx context.Context, l selection.Lease, entries []selection.Target) error {
	for _, e := range entries {
		if e.Outcome == selection.TargetInFlight {
			return s.Store.Journal(ctx, l, entries)
		}
	}
	if s.failed.CompareAndSwap(false, true) {
		return errors.New("disk I/O error")
	}
	return s.Store.Journal(ctx, l, entries)
}

// TestJournalFailure_LeavesTheOperationToATakeover: outcomes the journal
// could not write leave their targets in flight. The run sends nothing
// more and records no end: a store failure never ends an operation for
// good. Once its lease expired, a takeover re-reads the targets in flight,
// finds them applied, sends the rest and completes it: no target is
// written twice, and none is left unknown.
func TestJournalFailure_LeavesTheOperationToATakeover(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testJournalFailureLeavesTheOperationToATakeover)
}

func testJournalFailureLeavesTheOperationToATakeover(t *testing.T) {
	api, store, rt, sel := leaseLab(t, 200)
	ctx := context.Background()
	clock := clocktest.New(time.Now())
	const ttl = 3 * time.Second
	op, _, err := commitLosingOutcomes(t, store, rt, sel, clock, ttl)
	if err != nil || op.Status != selection.OpRunning || op.FinishedAt != nil || op.Counts[selection.TargetInFlight] != 0 {
		t.Fatalf("after the journal failed: %s %v (%q) %v; want running, its end left to a takeover", op.Status, op.Counts, op.StopReason, err)
	}
	counts, err := store.CountTargets(ctx, op.ID)
	if err != nil || counts[selection.TargetInFlight]+counts[selection.TargetUnknown] == 0 {
		t.Fatalf("targets %v (%v): want the writes whose outcome was lost in flight or unknown", counts, err)
	}
	takeOverAfter(t, store, rt, clock, ttl)
	op, _ = store.Operation(ctx, op.ID)
	if op.Status != selection.OpCompleted || op.Counts[selection.TargetUnknown] != 0 || len(api.Writes()) != op.Total {
		t.Fatalf("after the takeover: %s %v, %d writes for %d targets", op.Status, op.Counts, len(api.Writes()), op.Total)
	}
}

// uncountable is a store that cannot count an operation's targets once
// armed.
type uncountable struct {
	selection.Store
	armed atomic.Bool
}

func (s *uncountable) CountTargets(ctx context.Context, opID string) (map[selection.Outcome]int, error) {
	if s.armed.Load() {
		return nil, errors.New("database is locked")
	}
	return s.Store.CountTargets(ctx, opID)
}

// TestUncountedEnd_IsLeftToTheTakeover: a run that cannot count the
// journal when it ends records no end (its own tally misses every target
// it did not touch, and would call a partial operation completed); the
// takeover that follows the lease's expiry counts and records it.
func TestUncountedEnd_IsLeftToTheTakeover(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testUncountedEndIsLeftToTheTakeover)
}

func testUncountedEndIsLeftToTheTakeover(t *testing.T) {
	_, store, rt, sel := leaseLab(t, 60)
	ctx := context.Background()
	clock := clocktest.New(time.Now())
	const ttl = 3 * time.Second
	us := &uncountable{Store: store}
	e := &selection.Engine{Store: us, Runtime: rt, Clock: clock, Background: ctx, Holder: "a", LeaseTTL: ttl}
	r, prob := e.Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, Wait: 0, RequestID: "t"})
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	us.armed.Store(true)
	e.Wait()
	op, err := store.Operation(ctx, r.Operation.ID)
	if err != nil || op.Status != selection.OpRunning {
		t.Fatalf("after a run that could not count its targets: %s (%v); want running, its end left to a takeover", op.Status, err)
	}
	clock.Advance(2 * ttl)
	e2 := &selection.Engine{Store: store, Runtime: rt, Clock: clock, Background: ctx, Holder: "b", LeaseTTL: ttl}
	if taken, err := e2.TakeOver(ctx); err != nil || len(taken) != 1 {
		t.Fatalf("takeover: %v %v", taken, err)
	}
	e2.Wait()
	op, _ = store.Operation(ctx, r.Operation.ID)
	if op.Status != selection.OpCompleted || op.Counts[selection.TargetSucceeded] != op.Total {
		t.Fatalf("after the takeover: %s %v", op.Status, op.Counts)
	}
}

// commitLosingOutcomes commits sel over store wrapped so that it cannot
// journal outcomes, waits for the run to end, and returns the operation as
// the store then holds it, with the request it was committed by.
func commitLosingOutcomes(t *testing.T, store selection.Store, rt *upstream.Runtime, sel *selection.Selection, clock upstream.Clock, ttl time.Duration) (*selection.Operation, selection.CommitRequest, error) {
	t.Helper()
	ctx := context.Background()
	e := &selection.Engine{Store: &failingOutcomes{Store: store}, Runtime: rt, Clock: clock, Background: ctx, Holder: "losing", LeaseTTL: ttl}
	req := selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action, Mode: selection.ModeExecute, Wait: time.Minute, RequestID: "t"}
	r, prob := e.Commit(ctx, req)
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	e.Wait()
	op, err := store.Operation(ctx, r.Operation.ID)
	return op, req, err
}

// TestLease_TheHeartbeatRenewsEveryThirdOfItsDurationOnTheEnginesClock: a
// run renews its operation's lease every third of the lease's duration by
// the engine's clock, so that no other process takes the operation over
// while the run lives, however long past the first expiry it runs.
func TestLease_TheHeartbeatRenewsEveryThirdOfItsDurationOnTheEnginesClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testLeaseTheHeartbeatRenewsEveryThirdOfItsDurationOnTheEnginesClock)
}

func testLeaseTheHeartbeatRenewsEveryThirdOfItsDurationOnTheEnginesClock(t *testing.T) {
	clock := clocktest.New(time.Now())
	// Enough targets for the run to outlive the test's moves.
	_, store, rt, sel := leaseLabOn(t, 2000, clock)
	ctx, stop := context.WithCancel(context.Background())
	const ttl = 30 * time.Second
	e := &selection.Engine{Store: store, Runtime: rt, Clock: clock, Background: ctx, Holder: "a", LeaseTTL: ttl}
	t.Cleanup(func() { stop(); e.Wait() })
	r, prob := e.Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, RequestID: "t"})
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	start := clock.Now()
	if !r.Operation.Lease.Expires.Equal(start.Add(ttl)) {
		t.Fatalf("the lease expires at %s, want the commit's time and its duration", r.Operation.Lease.Expires)
	}
	// The heartbeat's ticker and the cancel poll's.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := clock.BlockUntil(wctx, 2); err != nil {
		t.Fatalf("the run's timers are not on the engine's clock: %v", err)
	}
	other := &selection.Engine{Store: store, Runtime: rt, Clock: clock, Background: ctx, Holder: "b", LeaseTTL: ttl}
	for beat := 1; beat <= 4; beat++ {
		clock.Advance(ttl / 3)
		want := start.Add(time.Duration(beat)*ttl/3 + ttl)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			op, err := store.Operation(ctx, r.Operation.ID)
			if err != nil {
				t.Fatal(err)
			}
			if op.Lease.Expires.Equal(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %d thirds of the lease the lease expires at %s, want %s", beat, op.Lease.Expires, want)
			}
		}
		if taken, err := other.TakeOver(ctx); err != nil || len(taken) != 0 {
			t.Fatalf("%d thirds of the lease in, another process took the running operation over: %v %v", beat, taken, err)
		}
	}
}
