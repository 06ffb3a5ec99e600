package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
)

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestLegacyStore_MigratesForwardKeepingItsData: a store written before
// versioned migrations (and before a column was added) gets every
// migration on open: its data reads back, the missing columns exist, the
// schema version is recorded, and the operation it left running is one
// whose lease expired, to be taken over.
func TestLegacyStore_MigratesForwardKeepingItsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	legacy, err := os.ReadFile("testdata/legacy.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, path).Exec(string(legacy)); err != nil {
		t.Fatal(err)
	}
	s := openSQLite(t, path)
	ctx := context.Background()
	recs, err := s.Records(ctx, "sel_old", selection.RecordQuery{Limit: 10})
	if err != nil || len(recs) != 1 || recs[0].Version != "v1" || recs[0].Groups["region"] != "eu" {
		t.Fatalf("the legacy records: %+v %v", recs, err)
	}
	var version int
	if err := rawDB(t, path).QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil || version != sqlitestore.SchemaVersion() {
		t.Fatalf("schema version %d (%v), want %d", version, err, sqlitestore.SchemaVersion())
	}
	if n, err := s.InitTargets(ctx, "op_new", "sel_old"); err != nil || n != 1 {
		t.Fatalf("targets from a legacy selection (the restore column was added): %d %v", n, err)
	}
	// Who asked was not recorded then: it reads as unrecorded, never
	// empty and never a guess.
	if sel, err := s.Selection(ctx, "sel_old"); err != nil || sel.Principal.Subject != selection.SubjectUnrecorded {
		t.Fatalf("the legacy selection's principal: %+v %v", sel, err)
	}
	if op, err := s.Operation(ctx, "op_old"); err != nil || op.Principal.Subject != selection.SubjectUnrecorded {
		t.Fatalf("the legacy operation's principal: %+v %v", op, err)
	}
	ids, err := s.ExpiredOperations(ctx, time.Now(), 10)
	if err != nil || len(ids) != 1 || ids[0] != "op_old" {
		t.Fatalf("the operation a legacy store left running: %v %v", ids, err)
	}
	l, err := s.AcquireLease(ctx, "op_old", "p", time.Now(), time.Minute)
	if err != nil || l.Epoch != 1 {
		t.Fatalf("taking it over: %+v %v", l, err)
	}
	ts, _ := s.Targets(ctx, "op_old", selection.TargetQuery{Limit: 10})
	if len(ts) != 1 || ts[0].Outcome != selection.TargetUnknown || ts[0].Attempts != 1 {
		t.Fatalf("its in-flight target: %+v", ts)
	}
	// Opening again applies nothing twice.
	s.Close()
	openSQLite(t, path)
}

// TestNewerSchema_IsRefusedAndLeftAlone: a store migrated by a newer
// airlock is refused with a message that says what to do, and unchanged.
func TestNewerSchema_IsRefusedAndLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	openSQLite(t, path).Close()
	next := sqlitestore.SchemaVersion() + 1
	if _, err := rawDB(t, path).Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future', 0)`, next); err != nil {
		t.Fatal(err)
	}
	_, err := sqlitestore.Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d, newer than this airlock knows", next)) || !strings.Contains(err.Error(), "upgrade airlock") {
		t.Fatalf("opening a newer store: %v", err)
	}
}

// TestAudit_IsAppendOnly: no writer of the file, airlock or another, can
// change or remove a line of the audit trail.
func TestAudit_IsAppendOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	s := openSQLite(t, path)
	if err := s.Audit(context.Background(), []selection.AuditEvent{{Kind: selection.AuditDecision, Event: "approved"}}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	for _, q := range []string{`UPDATE audit SET doc = '{}'`, `DELETE FROM audit`} {
		if _, err := db.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only refusal", q, err)
		}
	}
}

// TestTwoProcessesWrite_NoBusyErrorEscapes: two stores open on one file (as
// two processes have it) write at once, every kind of write; none fails
// for a busy database.
func TestTwoProcessesWrite_NoBusyErrorEscapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	stores := []*sqlitestore.SQLite{openSQLite(t, path), openSQLite(t, path)}
	ctx := context.Background()
	now := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		s := stores[w%2]
		wg.Go(func() {
			sel := &selection.Selection{ID: fmt.Sprint("sel_", w), State: selection.StateBuilding, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := s.CreateSelection(ctx, sel); err != nil {
				errs <- err
				return
			}
			var recs []selection.Record
			for i := range 300 {
				recs = append(recs, selection.Record{ID: fmt.Sprintf("r%04d", i), Disposition: selection.Member})
			}
			if err := s.PutRecords(ctx, sel.ID, recs); err != nil {
				errs <- err
				return
			}
			op := &selection.Operation{ID: fmt.Sprint("op_", w), SelectionID: sel.ID, ActionDigest: "a", Mode: selection.ModeExecute, Status: selection.OpRunning,
				CreatedAt: now, UpdatedAt: now, Lease: selection.Lease{OperationID: fmt.Sprint("op_", w), Epoch: 1, Expires: now.Add(time.Minute)}}
			if _, _, err := s.CreateOperation(ctx, op); err != nil {
				errs <- err
				return
			}
			if _, err := s.InitTargets(ctx, op.ID, sel.ID); err != nil {
				errs <- err
				return
			}
			for i := range 300 {
				id := fmt.Sprintf("r%04d", i)
				if err := s.Journal(ctx, op.Lease, []selection.Target{{ID: id, Outcome: selection.TargetSucceeded}}); err != nil {
					errs <- err
					return
				}
				if err := s.Audit(ctx, []selection.AuditEvent{{OperationID: op.ID, Event: id}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range 8 {
		counts, err := stores[(w+1)%2].CountTargets(ctx, fmt.Sprint("op_", w))
		if err != nil || counts[selection.TargetSucceeded] != 300 {
			t.Fatalf("op_%d: %v %v", w, counts, err)
		}
	}
}
