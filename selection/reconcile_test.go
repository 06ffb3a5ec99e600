package selection_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// unreadableTargets is a store that, once armed, fails every read of an
// operation's targets with one outcome, as a store that lost its
// connection between two statements would.
type unreadableTargets struct {
	selection.Store
	outcome selection.Outcome
	armed   atomic.Bool
	failed  atomic.Int32
}

func (s *unreadableTargets) Targets(ctx context.Context, opID string, q selection.TargetQuery) ([]selection.Target, error) {
	if s.armed.Load() && q.Outcome == s.outcome {
		s.failed.Add(1)
		return nil, errors.New("database connection lost")
	}
	return s.Store.Targets(ctx, opID, q)
}

// syncBuffer is a log sink the run's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// takeOverAfter moves clock past ttl and has another process take the
// operation over and finish it.
func takeOverAfter(t *testing.T, store selection.Store, rt *upstream.Runtime, clock *clocktest.Fake, ttl time.Duration) {
	t.Helper()
	clock.Advance(2 * ttl)
	e := &selection.Engine{Store: store, Runtime: rt, Clock: clock, Background: context.Background(), Holder: "takeover", LeaseTTL: ttl}
	if taken, err := e.TakeOver(context.Background()); err != nil || len(taken) != 1 {
		t.Fatalf("takeover: %v %v", taken, err)
	}
	e.Wait()
}

// TestReconcileStoreFailure_StopsAndLeavesTheEndToTheTakeover: a takeover
// whose store fails while it reads the targets to reconcile sends nothing
// (the unknown targets were never re-read) and records no end, saying why
// in the log; the next takeover after its lease ran out re-reads them, and
// no target is written twice.
func TestReconcileStoreFailure_StopsAndLeavesTheEndToTheTakeover(t *testing.T) {
	synctest.Test(t, testReconcileStoreFailureStopsAndLeavesTheEndToTheTakeover)
}

func testReconcileStoreFailureStopsAndLeavesTheEndToTheTakeover(t *testing.T) {
	api, store, rt, sel := leaseLab(t, 200)
	ctx := context.Background()
	clock := clocktest.New(time.Now())
	const ttl = 3 * time.Second
	op, _, err := commitLosingOutcomes(t, store, rt, sel, clock, ttl)
	if err != nil || op.Status != selection.OpRunning {
		t.Fatalf("setup: %s %v %v; want a running operation left to a takeover", op.Status, op.Counts, err)
	}
	writes := len(api.Writes())

	var logs syncBuffer
	us := &unreadableTargets{Store: store, outcome: selection.TargetUnknown}
	us.armed.Store(true)
	clock.Advance(2 * ttl)
	e2 := &selection.Engine{Store: us, Runtime: rt, Clock: clock, Background: ctx, Holder: "resume", LeaseTTL: ttl,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if taken, err := e2.TakeOver(ctx); err != nil || len(taken) != 1 {
		t.Fatalf("takeover: %v %v", taken, err)
	}
	e2.Wait()
	op, err = store.Operation(ctx, op.ID)
	if err != nil || op.Status != selection.OpRunning || op.FinishedAt != nil {
		t.Fatalf("after a takeover that could not read its unknown targets: %s finished %v (%v); want running, its end left to a takeover", op.Status, op.FinishedAt, err)
	}
	if us.failed.Load() == 0 {
		t.Fatal("the takeover never read its unknown targets")
	}
	if n := len(api.Writes()); n != writes {
		t.Fatalf("the takeover sent %d writes before reconciling its unknown targets; want none", n-writes)
	}
	if !strings.Contains(logs.String(), "database connection lost") {
		t.Fatalf("the log does not name the store's failure:\n%s", logs.String())
	}

	takeOverAfter(t, store, rt, clock, ttl)
	op, _ = store.Operation(ctx, op.ID)
	if op.Status != selection.OpCompleted || len(api.Writes()) != op.Total {
		t.Fatalf("after the takeover: %s %v, %d writes for %d targets", op.Status, op.Counts, len(api.Writes()), op.Total)
	}
}

// TestInFlightStoreFailure_NoOperationEndsWithTargetsInFlight: a run whose
// journal lost outcomes, and whose store then fails while it reads the
// targets left in flight, records no end (an ended operation has no target
// in flight); the takeover turns them unknown, re-reads them and records
// the end.
func TestInFlightStoreFailure_NoOperationEndsWithTargetsInFlight(t *testing.T) {
	synctest.Test(t, testInFlightStoreFailureNoOperationEndsWithTargetsInFlight)
}

func testInFlightStoreFailureNoOperationEndsWithTargetsInFlight(t *testing.T) {
	api, store, rt, sel := leaseLab(t, 200)
	ctx := context.Background()
	clock := clocktest.New(time.Now())
	const ttl = 3 * time.Second
	var logs syncBuffer
	us := &unreadableTargets{Store: &failingOutcomes{Store: store}, outcome: selection.TargetInFlight}
	us.armed.Store(true)
	e := &selection.Engine{Store: us, Runtime: rt, Clock: clock, Background: ctx, Holder: "a", LeaseTTL: ttl,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	r, prob := e.Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, Wait: time.Minute, RequestID: "t"})
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	e.Wait()
	op, err := store.Operation(ctx, r.Operation.ID)
	if err != nil || op.Status != selection.OpRunning || op.FinishedAt != nil {
		t.Fatalf("after a run that could not read its targets in flight: %s %v (%v); want running, its end left to a takeover", op.Status, op.Counts, err)
	}
	counts, err := store.CountTargets(ctx, r.Operation.ID)
	if err != nil || counts[selection.TargetInFlight] == 0 {
		t.Fatalf("setup: %v %v; want targets left in flight by the lost outcomes", counts, err)
	}
	if !strings.Contains(logs.String(), "database connection lost") {
		t.Fatalf("the log does not name the store's failure:\n%s", logs.String())
	}

	takeOverAfter(t, store, rt, clock, ttl)
	op, _ = store.Operation(ctx, r.Operation.ID)
	if op.Status != selection.OpCompleted || op.Counts[selection.TargetInFlight] != 0 || len(api.Writes()) != op.Total {
		t.Fatalf("after the takeover: %s %v, %d writes for %d targets", op.Status, op.Counts, len(api.Writes()), op.Total)
	}
}
