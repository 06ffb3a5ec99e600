package selection_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
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

// TestDeclaredThrottling_AThrottledWriteIsPausedForNotFailed: a write the
// upstream answers with the throttle it declares (DynamoDB's 400 naming
// ProvisionedThroughputExceededException) is a refusal before processing,
// like a 429: its target goes back to pending and the run pauses for the
// wait airlock keeps (5 s, none named), then writes every target once. It
// is never journaled failed as a rejected request.
func TestDeclaredThrottling_AThrottledWriteIsPausedForNotFailed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testDeclaredThrottlingAThrottledWriteIsPausedForNotFailed)
}

func testDeclaredThrottlingAThrottledWriteIsPausedForNotFailed(t *testing.T) {
	clock := clocktest.New(time.Now())
	api := &fixtures.Server{OnUnknownRoute: func(m, p string) { t.Errorf("fixture: unexpected %s %s", m, p) }}
	api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(40, benchMostlyPastDue))
	var throttled atomic.Int32
	var throttling atomic.Bool
	throttling.Store(true)
	var nw memnet.Network
	base := nw.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && throttling.Load() {
			_, _ = io.Copy(io.Discard, r.Body)
			throttled.Add(1)
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`)
			return
		}
		api.ServeHTTP(w, r)
	}))
	cfg := string(fixtures.Config(base, fixtures.Resource{Name: "subscriptions", Dataset: fixtures.DatasetSubscriptions,
		Dialect: fixtures.DialectCursor, PageSize: 100, Extra: benchResourceYAML}))
	cfg = strings.Replace(cfg, "    concurrency: 8\n", "    concurrency: 8\n    throttling:\n      - {status: 400, member: __type, match: ProvisionedThroughputExceededException}\n", 1)
	c, err := config.Parse(append([]byte(cfg), benchActionsYAML...))
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
	res, err := (&selection.Previewer{Store: store, Clock: upstream.WallClock}).Preview(ctx, selection.PreviewRequest{Resource: rt.Resources["subscriptions"],
		Action: rt.Actions["pause_collection"], Params: map[string]any{"reason": benchReason}, Budget: upstream.Budget{MaxPages: 100, Deadline: time.Minute},
		RequestID: "t", Environment: rt.Environment})
	if err != nil || !res.Selection.Committable {
		t.Fatalf("preview: %v %+v", err, res.Selection.Blockers)
	}
	sel := res.Selection

	e := &selection.Engine{Store: store, Runtime: rt, Clock: clock, Background: ctx, LeaseTTL: time.Hour}
	r, prob := e.Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, RequestID: "t"})
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	// The first write goes alone, and is throttled.
	for deadline := time.Now().Add(30 * time.Second); throttled.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no write reached the upstream")
		}
	}
	throttling.Store(false)
	// The run's heartbeat and cancel poll tick on the clock; a third timer
	// is a worker waiting out the pause.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := clock.BlockUntil(wctx, 3); err != nil {
		t.Fatalf("the run did not pause on its clock: %v", err)
	}
	clock.Advance(4 * time.Second)
	if n := len(api.Writes()); n != 0 || throttled.Load() != 1 {
		t.Fatalf("%d writes (and %d throttled) before the 5 s wait passed on the run's clock, want only the throttled one", n, throttled.Load())
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
}
