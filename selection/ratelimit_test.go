package selection_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/selection"
)

// TestRateLimit_ARunPausesForTheUpstreamsWaitOnItsClock: a 429 asking for
// 30 s puts its target back to pending and pauses the whole run: no write
// goes out until the run's clock has passed the wait, then every target is
// written, each applied once.
func TestRateLimit_ARunPausesForTheUpstreamsWaitOnItsClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testRateLimitARunPausesForTheUpstreamsWaitOnItsClock)
}

func testRateLimitARunPausesForTheUpstreamsWaitOnItsClock(t *testing.T) {
	// The upstream's client (its cooldown after a 429) and the run wait
	// on the one clock, as they do on the wall clock.
	clock := clocktest.New(time.Now())
	api, store, rt, sel := leaseLabOn(t, 40, clock)
	api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{FailAll: 429, RetryAfter: "30"})
	ctx := context.Background()
	// A lease far longer than the pause: the fence holds however the
	// heartbeat and the pause's end are ordered.
	e := &selection.Engine{Store: store, Runtime: rt, Clock: clock, Background: ctx, LeaseTTL: time.Hour}
	r, prob := e.Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, RequestID: "t"})
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	// The first write goes alone, and is answered 429.
	for deadline := time.Now().Add(30 * time.Second); len(api.Writes()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no write reached the upstream")
		}
	}
	api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{})
	// The run's heartbeat and cancel poll tick on the clock; a third timer
	// is a worker waiting out the pause.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := clock.BlockUntil(wctx, 3); err != nil {
		t.Fatalf("the run did not pause on its clock: %v", err)
	}
	clock.Advance(29 * time.Second)
	if n := len(api.Writes()); n != 1 {
		t.Fatalf("%d writes before the upstream's 30 s passed on the run's clock, want the one answered 429", n)
	}
	clock.Advance(time.Second)
	e.Wait()
	op, err := store.Operation(ctx, r.Operation.ID)
	if err != nil || op.Status != selection.OpCompleted || op.Counts[selection.TargetSucceeded] != op.Total {
		t.Fatalf("after the pause: %s %v (%q) %v; want completed, every target succeeded", op.Status, op.Counts, op.StopReason, err)
	}
	for id, n := range api.AppliedAll(fixtures.DatasetSubscriptions) {
		if n != 1 {
			t.Fatalf("%s applied %d times", id, n)
		}
	}
	if w := len(api.Writes()); w != op.Total+1 {
		t.Fatalf("%d writes for %d targets; want each once and the one answered 429 again", w, op.Total)
	}
}
