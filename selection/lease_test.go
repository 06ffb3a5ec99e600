package selection_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestLease_ARunTakenOverRecordsNothingMore: once another holder took an
// operation's lease, the run that held it sends no new write, its journal
// writes are refused and it does not record the operation's end: the
// store holds what the run had journaled before the takeover.
func TestLease_ARunTakenOverRecordsNothingMore(t *testing.T) {
	const n = 400
	api := &fixtures.Server{OnUnknownRoute: func(m, p string) { t.Errorf("fixture: unexpected %s %s", m, p) }}
	api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, benchMostlyPastDue))
	api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{Latency: 20 * time.Millisecond})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cfg := fixtures.Config(srv.URL, fixtures.Resource{Name: "subscriptions", Dataset: fixtures.DatasetSubscriptions,
		Dialect: fixtures.DialectCursor, PageSize: 100, Extra: benchResourceYAML})
	c, err := upstream.ParseConfig(append(cfg, benchActionsYAML...))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := c.Initialize(context.Background(), upstream.Options{Getenv: func(k string) string {
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
	sel := res.Selection
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
