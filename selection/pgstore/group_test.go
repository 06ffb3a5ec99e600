package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	. "github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
)

// groupLab is a store with two operations, op_a and op_b, of ten pending
// targets each (t0 … t9), held with epoch 1, and a connection of the
// test's own to the same database.
type groupLab struct {
	s  *Postgres
	db *pgx.Conn
}

func newGroupLab(t *testing.T) *groupLab {
	t.Helper()
	ctx := context.Background()
	u := pgtest.Database(t)
	s, err := Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	now := time.Now()
	sel := &Selection{ID: "sel_g", State: StateBuilding, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for i := range 10 {
		recs = append(recs, Record{ID: fmt.Sprint("t", i), Disposition: Member, Before: map[string]any{"paused": false}})
	}
	if err := s.PutRecords(ctx, sel.ID, recs); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"op_a", "op_b"} {
		op := &Operation{ID: id, SelectionID: sel.ID, ActionDigest: "sha256:" + id, Mode: ModeExecute, Status: OpRunning, CreatedAt: now, UpdatedAt: now,
			Lease: Lease{OperationID: id, Holder: "a", Epoch: 1, Expires: now.Add(time.Hour)}}
		if _, _, err := s.CreateOperation(ctx, op); err != nil {
			t.Fatal(err)
		}
		if _, err := s.InitTargets(ctx, op.ID, sel.ID); err != nil {
			t.Fatal(err)
		}
	}
	return &groupLab{s: s, db: db}
}

func held(opID string) Lease { return Lease{OperationID: opID, Holder: "a", Epoch: 1} }

func intent(ids ...string) []Target {
	var out []Target
	for _, id := range ids {
		out = append(out, Target{ID: id, Outcome: TargetInFlight, Attempts: 1, RequestID: "r-" + id})
	}
	return out
}

func journalCall(l Lease, entries []Target) groupCall {
	docs := make([]string, len(entries))
	for i := range entries {
		docs[i] = stored.TargetDoc(&entries[i])
	}
	return groupCall{what: "journal", lease: l, entries: entries, docs: docs, done: make(chan error, 1)}
}

// outcomes is every target's outcome, by operation and id.
func (g *groupLab) outcomes(t *testing.T) map[string]Outcome {
	t.Helper()
	rows, err := g.db.Query(context.Background(), `SELECT operation_id || '/' || id, outcome FROM targets`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Outcome{}
	for rows.Next() {
		var k, o string
		if err := rows.Scan(&k, &o); err != nil {
			t.Fatal(err)
		}
		out[k] = Outcome(o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// changed is the targets whose outcome is no longer pending.
func (g *groupLab) changed(t *testing.T) map[string]Outcome {
	t.Helper()
	out := map[string]Outcome{}
	for k, o := range g.outcomes(t) {
		if o != TargetPending {
			out[k] = o
		}
	}
	return out
}

func (g *groupLab) auditLines(t *testing.T) int {
	t.Helper()
	var n int
	if err := g.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGroupCommit_EveryIntentIsFencedAndARefusedCallLeavesNothing: in one
// group, a journal call whose lease was taken over, and one that names a
// target the operation does not have, are refused and leave none of their
// entries; the calls beside them, of the same operation and of another,
// and an audit call, are committed.
func TestGroupCommit_EveryIntentIsFencedAndARefusedCallLeavesNothing(t *testing.T) {
	g := newGroupLab(t)
	ctx := context.Background()
	// op_b is taken over: its epoch moves to 2.
	if _, err := g.db.Exec(ctx, `UPDATE operations SET lease_epoch = 2 WHERE id = 'op_b'`); err != nil {
		t.Fatal(err)
	}
	calls := []groupCall{
		journalCall(held("op_a"), intent("t1", "t2")),
		journalCall(held("op_b"), intent("t1", "t2")),
		journalCall(held("op_a"), append(intent("t3"), Target{ID: "nope", Outcome: TargetSucceeded})),
		{what: "audit", events: []AuditEvent{{At: time.Now(), Kind: AuditCall, OperationID: "op_a", Event: "request"}}, done: make(chan error, 1)},
		journalCall(Lease{OperationID: "op_b", Holder: "b", Epoch: 2}, intent("t5")),
		journalCall(held("op_missing"), intent("t1")),
		journalCall(held("op_a"), []Target{{ID: "t4", Outcome: TargetSucceeded}}),
	}
	if err := g.s.commitGroup(calls); err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, c := range calls {
		errs = append(errs, <-c.done)
	}
	if errs[0] != nil || !errors.Is(errs[1], ErrLeaseLost) || !errors.Is(errs[2], ErrNotFound) || errs[3] != nil || errs[4] != nil ||
		!errors.Is(errs[5], ErrNotFound) || errs[6] != nil {
		t.Fatalf("answers %v", errs)
	}
	want := map[string]Outcome{"op_a/t1": TargetInFlight, "op_a/t2": TargetInFlight, "op_a/t4": TargetSucceeded, "op_b/t5": TargetInFlight}
	if got := g.changed(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("targets written %v, want %v: a refused call leaves nothing, the others everything", got, want)
	}
	if n := g.auditLines(t); n != 1 {
		t.Fatalf("%d audit lines, want 1", n)
	}
}

// TestGroupCommit_AFailedGroupFailsEveryIntentInIt: when the database
// refuses one statement of a group, the whole group fails: every call in
// it gets an error (its caller sends none of its writes) and nothing of
// the group is committed, audit lines included. The next group commits.
func TestGroupCommit_AFailedGroupFailsEveryIntentInIt(t *testing.T) {
	g := newGroupLab(t)
	ctx := context.Background()
	if _, err := g.db.Exec(ctx, `CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.id = 't9' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER poison BEFORE UPDATE ON targets FOR EACH ROW EXECUTE FUNCTION poison()`); err != nil {
		t.Fatal(err)
	}
	calls := []groupCall{
		journalCall(held("op_a"), intent("t1", "t2")),
		{what: "audit", events: []AuditEvent{{At: time.Now(), Kind: AuditCall, OperationID: "op_a", Event: "request"}}, done: make(chan error, 1)},
		journalCall(held("op_b"), intent("t1")),
		journalCall(held("op_a"), intent("t9")),
		journalCall(held("op_a"), intent("t3")),
	}
	if err := g.s.commitGroup(calls); err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		if err := <-c.done; err == nil {
			t.Errorf("call %d (%s) succeeded in a group that failed", i, c.what)
		}
	}
	if got := g.changed(t); len(got) != 0 {
		t.Fatalf("a failed group left %v", got)
	}
	if n := g.auditLines(t); n != 0 {
		t.Fatalf("a failed group left %d audit lines", n)
	}
	if err := g.s.Journal(ctx, held("op_a"), intent("t1")); err != nil {
		t.Fatalf("the next group: %v", err)
	}
	if got := g.changed(t); fmt.Sprint(got) != fmt.Sprint(map[string]Outcome{"op_a/t1": TargetInFlight}) {
		t.Fatalf("after the next group: %v", got)
	}
}

// TestGroupCommit_IntentsArrivingDuringACommitShareTheNext: while one
// group's commit cannot finish (a takeover's lock on its operation holds
// it), the intents of many callers wait, and then are committed together,
// in one more transaction, each with its own answer; once the takeover
// commits, every call of the old holder is refused.
func TestGroupCommit_IntentsArrivingDuringACommitShareTheNext(t *testing.T) {
	g := newGroupLab(t)
	ctx := context.Background()
	lock, err := g.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `SELECT 1 FROM operations WHERE id = 'op_a' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 10)
	start := func(i int, opID string) {
		wg.Go(func() { errs[i] = g.s.Journal(ctx, held(opID), intent(fmt.Sprint("t", i))) })
	}
	start(0, "op_a")
	g.waitForALockWait(t)
	for i := 1; i < 10; i++ {
		start(i, []string{"op_a", "op_b"}[i%2])
	}
	// Nine callers wait behind the first group.
	waitFor(t, func() bool { return g.s.group.Handed() == 10 })
	if err := lock.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	var txs int
	if err := g.db.QueryRow(ctx, `SELECT COUNT(DISTINCT xmin::text) FROM targets WHERE outcome = 'in_flight'`).Scan(&txs); err != nil {
		t.Fatal(err)
	}
	if txs != 2 {
		t.Fatalf("ten intents were committed in %d transactions, want 2: the first, and one for the nine that waited for it", txs)
	}

	// A takeover of op_a holds its row; the old holder's calls wait, then
	// find the new epoch: all are refused, and write nothing.
	before := g.changed(t)
	takeover, err := g.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer takeover.Rollback(ctx)
	if _, err := takeover.Exec(ctx, `UPDATE operations SET lease_epoch = lease_epoch + 1 WHERE id = 'op_a'`); err != nil {
		t.Fatal(err)
	}
	handed := g.s.group.Handed()
	for i := range 5 {
		wg.Go(func() {
			errs[i] = g.s.Journal(ctx, held("op_a"), []Target{{ID: fmt.Sprint("t", i), Outcome: TargetSucceeded}, {ID: fmt.Sprint("t", i+5), Outcome: TargetInFlight}})
		})
	}
	g.waitForALockWait(t)
	waitFor(t, func() bool { return g.s.group.Handed() == handed+5 })
	if err := takeover.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range 5 {
		if !errors.Is(errs[i], ErrLeaseLost) {
			t.Fatalf("call %d of the old holder after a takeover: %v, want the lease lost", i, errs[i])
		}
	}
	if got := g.changed(t); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("the old holder's calls wrote: %v, was %v", got, before)
	}
}

// TestGroupCommit_AfterCloseAWriteFails: Close commits what was queued;
// a write after it fails instead of hanging.
func TestGroupCommit_AfterCloseAWriteFails(t *testing.T) {
	g := newGroupLab(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.s.Journal(cancelled, held("op_a"), intent("t1")); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled caller: %v", err)
	}
	if got := g.changed(t); len(got) != 0 {
		t.Fatalf("a cancelled caller wrote %v", got)
	}
	if err := g.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.s.Journal(ctx, held("op_a"), intent("t1")); !errors.Is(err, errClosed) {
		t.Fatalf("a write after Close: %v", err)
	}
}

// waitForALockWait waits until a session of the store waits for a lock
// the test holds.
func (g *groupLab) waitForALockWait(t *testing.T) {
	t.Helper()
	waitFor(t, func() bool {
		var n int
		err := g.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
