package selection_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestCancel_FromAnotherProcessStopsSendingAndLeavesTargetsTruthful: an
// operation running in one engine is cancelled through another sharing its
// store (another replica). The run stops sending: no write reaches the
// upstream once the cancellation was seen, every target never sent is still
// pending, each one sent has the outcome its answer showed, and the
// operation ends stopped with the reason. A resume lifts the cancellation
// and sends the rest, each target once.
func TestCancel_FromAnotherProcessStopsSendingAndLeavesTargetsTruthful(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testCancelFromAnotherProcessStopsSendingAndLeavesTargetsTruthful)
}

func testCancelFromAnotherProcessStopsSendingAndLeavesTargetsTruthful(t *testing.T) {
	const n = 400
	api, store, rt, sel := leaseLab(t, n)
	ctx := context.Background()
	running := &selection.Engine{Store: store, Runtime: rt, Clock: upstream.WallClock, Background: ctx, Holder: "a", CancelPoll: 10 * time.Millisecond}
	other := &selection.Engine{Store: store, Runtime: rt, Clock: upstream.WallClock, Background: ctx, Holder: "b"}
	r, prob := running.Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
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
	if _, err := other.Cancel(ctx, opID, "operator", "req-cancel"); err != nil {
		t.Fatal(err)
	}
	running.Wait()
	writes := api.Writes()
	op, err := running.Operation(ctx, opID)
	if err != nil {
		t.Fatal(err)
	}
	if op.Status != selection.OpStopped || !strings.HasPrefix(op.StopReason, "cancelled") {
		t.Fatalf("a cancelled operation ended %s (%q)", op.Status, op.StopReason)
	}
	sent := writesPerID(writes)
	pending := 0
	for id, o := range targetsByID(t, store, opID) {
		switch o {
		case selection.TargetPending:
			pending++
			if sent[id] != 0 {
				t.Fatalf("%s is pending but was sent", id)
			}
		case selection.TargetSucceeded:
			if api.Applied("subscriptions", id) != 1 {
				t.Fatalf("%s succeeded but applied %d times", id, api.Applied("subscriptions", id))
			}
		case selection.TargetUnknown:
		default:
			t.Fatalf("%s ended %s after a cancellation", id, o)
		}
	}
	if pending == 0 || pending == op.Total {
		t.Fatalf("%d of %d targets pending: the cancellation must land mid-run", pending, op.Total)
	}
	time.Sleep(50 * time.Millisecond)
	if len(api.Writes()) != len(writes) {
		t.Fatalf("%d writes after the operation stopped", len(api.Writes())-len(writes))
	}

	res, prob := other.Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, Wait: time.Minute, RequestID: "t2", Resume: true})
	if prob != nil {
		t.Fatalf("resume: %+v", prob)
	}
	other.Wait()
	if res.Operation.ID != opID {
		t.Fatalf("resume answered another operation")
	}
	final, _ := other.Operation(ctx, opID)
	if final.Status != selection.OpCompleted {
		t.Fatalf("the resumed operation ended %s (%q)", final.Status, final.StopReason)
	}
	for id, n := range api.AppliedAll("subscriptions") {
		if n != 1 {
			t.Errorf("%s applied %d times", id, n)
		}
	}
}

func writesPerID(ws []fixtures.RecordedRequest) map[string]int {
	out := map[string]int{}
	for _, w := range ws {
		parts := strings.Split(strings.Trim(w.Path, "/"), "/")
		if len(parts) >= 3 {
			out[parts[2]]++
		}
	}
	return out
}
