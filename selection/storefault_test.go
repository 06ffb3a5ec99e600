package selection_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/tcpfault"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/pgstore"
	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestStoreFaults_NothingLostWhenPostgreSQLStumbles runs a commit of 300
// targets on one of three replicas sharing a PostgreSQL store while the
// store stumbles: bursts of pg_terminate_backend against airlock's
// connections, every connection cut at once (a restart), then connections
// refused for ten seconds. The operation must end completed, with every
// target written exactly once and journaled as the upstream applied it,
// no target unknown, and an audit line for every write request the
// upstream received.
func TestStoreFaults_NothingLostWhenPostgreSQLStumbles(t *testing.T) {
	dbURL := pgtest.Database(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	direct, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := tcpfault.Start(t, direct.Host)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	app := "airlock_fault_" + hex.EncodeToString(b)
	via := *direct
	via.Host = proxy.Addr()
	q := via.Query()
	q.Set("application_name", app)
	q.Set("connect_timeout", "2")
	via.RawQuery = q.Encode()

	const targets = 300
	api := fixtures.NewWriteLab(targets)
	api.SetLatency(40 * time.Millisecond)
	srv := httptest.NewServer(api)
	defer srv.Close()
	cfg, err := config.Parse(fixtures.WriteLabConfig(srv.URL, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(ctx, cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 2 * time.Second
	var engines []*selection.Engine
	var stores []*pgstore.Postgres
	var watchers sync.WaitGroup
	for i := range 3 {
		s, err := pgstore.Open(ctx, via.String())
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
		e := &selection.Engine{Store: s, Runtime: rt, Clock: upstream.WallClock, Background: ctx, Holder: "replica-" + string(rune('a'+i)), LeaseTTL: ttl}
		engines = append(engines, e)
		watchers.Add(1)
		go func() { defer watchers.Done(); e.Watch(ctx, ttl/4) }()
	}
	defer func() {
		stop()
		watchers.Wait()
		for i, e := range engines {
			e.Wait()
			stores[i].Close()
		}
	}()

	a := rt.Actions["archive_keyed"]
	res, err := (&selection.Previewer{Store: stores[0], Clock: upstream.WallClock}).Preview(ctx, selection.PreviewRequest{Resource: a.Resource, Action: a,
		Params: map[string]any{"reason": labReason}, Filter: map[string]any{"status": "active"}, Budget: upstream.Budget{MaxPages: 100, Deadline: time.Minute},
		RequestID: "fault", Environment: "lab"})
	if err != nil || res.Selection.Summary.Members != targets {
		t.Fatalf("preview: %v", err)
	}
	sel := res.Selection
	r, prob := engines[0].Commit(ctx, selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, RequestID: "fault"})
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	opID := r.Operation.ID

	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	terminated := 0
	start := time.Now()
	// Bursts of terminated backends, while the run writes.
	for range 12 {
		time.Sleep(150 * time.Millisecond)
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		terminated += n
	}
	// A restart: every connection cut at once.
	proxy.Cut()
	time.Sleep(300 * time.Millisecond)
	// Down: connections refused for ten seconds.
	proxy.Refuse(10 * time.Second)
	time.Sleep(time.Second)
	// A preview meanwhile says the store is unavailable (a tool answers
	// STORE_UNAVAILABLE, retryable), never an internal error.
	_, err = (&selection.Previewer{Store: stores[2], Clock: upstream.WallClock}).Preview(ctx, selection.PreviewRequest{Resource: a.Resource, Action: a,
		Params: map[string]any{"reason": labReason}, Filter: map[string]any{"status": "active"}, Budget: upstream.Budget{MaxPages: 100, Deadline: time.Minute},
		RequestID: "fault", Environment: "lab"})
	if !selection.Unavailable(err) {
		t.Errorf("a preview while the store refuses connections: %v; want an error that says the store is unavailable", err)
	}
	time.Sleep(9 * time.Second)

	var op *selection.Operation
	for deadline := time.Now().Add(2 * time.Minute); ; {
		op, err = stores[1].Operation(ctx, opID)
		if err == nil && op.Status != selection.OpRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the operation did not end within two minutes of the faults: %+v (%v)", op, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cuts, refused := proxy.Counts()
	t.Logf("faults: %d backends terminated, %d cuts, %d connections refused; the operation ended %s after %.1fs at lease epoch %d (%d takeovers)",
		terminated, cuts, refused, op.Status, time.Since(start).Seconds(), op.Lease.Epoch, op.Lease.Epoch-1)
	if op.Status != selection.OpCompleted || op.Counts[selection.TargetSucceeded] != targets {
		t.Fatalf("the operation ended %s (%q) with %v; want completed, %d succeeded", op.Status, op.StopReason, op.Counts, targets)
	}
	api.Quiesce()
	applied, received := api.Applied(), api.Received()
	for id, n := range applied {
		if n != 1 {
			t.Errorf("%s applied %d times", id, n)
		}
	}
	if len(applied) != targets {
		t.Errorf("%d accounts applied, want %d", len(applied), targets)
	}
	// Every write request the upstream received has its audit line.
	for _, e := range engines {
		for e.FlushAudit(ctx) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	trail, err := stores[2].AuditTrail(ctx, opID)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, ev := range trail {
		if ev.Kind == selection.AuditCall && ev.Method == "POST" {
			lines[ev.TargetID]++
		}
	}
	lost := 0
	for id, n := range received {
		if lines[id] < n {
			lost += n - lines[id]
		}
	}
	if lost > 0 {
		t.Fatalf("%d write requests reached the upstream without an audit line", lost)
	}
}
