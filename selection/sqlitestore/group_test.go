package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/airlock-mcp/airlock/selection"
)

// groupStore opens a store with an operation of three pending targets.
func groupStore(t *testing.T) (*SQLite, string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := time.Now()
	sel := &Selection{ID: "sel_g", State: StateBuilding, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for _, id := range []string{"t1", "t2", "t3"} {
		recs = append(recs, Record{ID: id, Disposition: Member, Before: map[string]any{"paused": false}})
	}
	if err := s.PutRecords(ctx, sel.ID, recs); err != nil {
		t.Fatal(err)
	}
	op := &Operation{ID: "op_g", SelectionID: sel.ID, ActionDigest: "sha256:a", Mode: ModeExecute, Status: OpRunning, CreatedAt: now, UpdatedAt: now}
	if _, _, err := s.CreateOperation(ctx, op); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InitTargets(ctx, op.ID, sel.ID); err != nil {
		t.Fatal(err)
	}
	return s, op.ID
}

func outcomes(t *testing.T, s *SQLite, opID string) map[string]Outcome {
	t.Helper()
	ts, err := s.Targets(context.Background(), opID, TargetQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Outcome{}
	for _, x := range ts {
		out[x.ID] = x.Outcome
	}
	return out
}

// TestGroupCommit_EachCallAllOrNothing: calls committed in one transaction
// stay atomic one by one: a call that fails half-way (a journal entry for
// an unknown target) leaves none of its entries, and the calls around it
// are committed; a call that panics panics in its caller.
func TestGroupCommit_EachCallAllOrNothing(t *testing.T) {
	s, opID := groupStore(t)
	mk := func(what string, fn func(*sql.Tx) error) groupWrite {
		return groupWrite{what: what, fn: fn, done: make(chan error, 1)}
	}
	batch := []groupWrite{
		mk("journal", s.journalEntries(lease(opID), []Target{{ID: "t1", Outcome: TargetInFlight}})),
		mk("journal", s.journalEntries(lease(opID), []Target{{ID: "t2", Outcome: TargetInFlight}, {ID: "nope", Outcome: TargetSucceeded}})),
		mk("audit", s.auditEvents([]AuditEvent{{At: time.Now(), Kind: AuditCall, OperationID: opID, Event: "request"}})),
		mk("journal", func(tx *sql.Tx) error {
			if err := s.journalEntries(lease(opID), []Target{{ID: "t3", Outcome: TargetInFlight}})(tx); err != nil {
				return err
			}
			panic("boom")
		}),
		mk("journal", s.journalEntries(lease(opID), []Target{{ID: "t3", Outcome: TargetSucceeded}})),
	}
	s.commitGroup(batch)
	var errs []error
	for _, g := range batch {
		errs = append(errs, <-g.done)
	}
	if errs[0] != nil || !errors.Is(errs[1], ErrNotFound) || errs[2] != nil || errs[4] != nil {
		t.Fatalf("results %v", errs)
	}
	if p, ok := errs[3].(callPanic); !ok || p.v != "boom" {
		t.Fatalf("a panicking call: %v", errs[3])
	}
	got := outcomes(t, s, opID)
	want := map[string]Outcome{"t1": TargetInFlight, "t2": TargetPending, "t3": TargetSucceeded}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v: a failed call must leave nothing, the others everything", got, want)
	}
	trail, err := s.AuditTrail(context.Background(), opID)
	if err != nil || len(trail) != 1 {
		t.Fatalf("audit trail %v %v", trail, err)
	}
	defer func() {
		if v := recover(); v != "boom" {
			t.Fatalf("the panic did not reach the caller: %v", v)
		}
	}()
	_ = s.write(context.Background(), "journal", func(*sql.Tx) error { panic("boom") })
}

// TestGroupCommit_ConcurrentCallersAndClose: many writers at once all get
// their own result; a cancelled caller writes nothing; after Close a write
// fails instead of hanging or panicking.
func TestGroupCommit_ConcurrentCallersAndClose(t *testing.T) {
	s, opID := groupStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			if i%2 == 0 {
				errs <- s.Audit(ctx, []AuditEvent{{At: time.Now(), Kind: AuditCall, OperationID: opID, Event: fmt.Sprint(i)}})
				return
			}
			id := []string{"t1", "t2", "t3", "missing"}[(i/2)%4]
			err := s.Journal(ctx, lease(opID), []Target{{ID: id, Outcome: TargetInFlight}})
			if id == "missing" {
				if !errors.Is(err, ErrNotFound) {
					err = fmt.Errorf("unknown target: %v", err)
				} else {
					err = nil
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	trail, _ := s.AuditTrail(ctx, opID)
	if len(trail) != 100 {
		t.Fatalf("%d audit events, want 100", len(trail))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Audit(cancelled, []AuditEvent{{At: time.Now(), OperationID: opID, Event: "late"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled caller: %v", err)
	}
	if trail, _ := s.AuditTrail(ctx, opID); len(trail) != 100 {
		t.Fatalf("a cancelled caller wrote: %d events", len(trail))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Journal(ctx, lease(opID), []Target{{ID: "t1", Outcome: TargetSucceeded}}); !errors.Is(err, errClosed) {
		t.Fatalf("a write after Close: %v", err)
	}
}

// lease is the lease groupStore's operation was created with.
func lease(opID string) Lease { return Lease{OperationID: opID} }
