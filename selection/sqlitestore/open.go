// Package sqlitestore is airlock's default store: one SQLite file (WAL)
// that several airlock processes on one machine share. Writes of one
// process go through a single connection; writers of different processes
// take turns on SQLite's write lock, and a transaction that finds the
// database busy is retried. It must never hold a lock across processes
// for longer than one transaction.
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite" // the pure-Go SQLite driver

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/batch"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

var _ selection.Store = (*SQLite)(nil)

// SQLite is a Store in one SQLite file.
type SQLite struct {
	w, r *sql.DB
	path string
	// Statements prepared once on the writer connection (before any
	// transaction: the writer pool has one connection, so preparing on the
	// pool inside a transaction would wait for itself). Transactions use
	// them through Tx.StmtContext.
	journalStmt *sql.Stmt // one target's journal entry
	fenceStmt   *sql.Stmt // an operation's lease epoch
	recordsStmt *sql.Stmt // recordsPerInsert records
	auditStmt   *sql.Stmt // one audit event

	// Journal and Audit calls go through one goroutine that commits the
	// calls waiting at the same time in one transaction (see commitGroup).
	group *batch.Queue[groupWrite]
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// DefaultPath is the store under the user's state directory:
// $XDG_STATE_HOME/airlock/airlock.db, else ~/.local/state/airlock/airlock.db.
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "airlock", "airlock.db"), nil
}

// Open opens (creating if needed) the store at path and migrates its
// schema forward. A store whose schema is newer than this airlock knows is
// refused. Any number of processes may have the same file open.
func Open(ctx context.Context, path string) (*SQLite, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store directory: %w", err)
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)"} {
		q.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + q.Encode()
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	r.SetMaxOpenConns(4)
	s := &SQLite{w: w, r: r, path: path}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	_ = os.Chmod(path, 0o600)
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// start prepares the writer's statements and starts the group commit.
func (s *SQLite) start(ctx context.Context) error {
	var err error
	if s.journalStmt, err = s.w.PrepareContext(ctx, journalSQL); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if s.fenceStmt, err = s.w.PrepareContext(ctx, fenceSQL); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if s.recordsStmt, err = s.w.PrepareContext(ctx, insertRecordsSQL(recordsPerInsert)); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if s.auditStmt, err = s.w.PrepareContext(ctx, auditSQL); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	s.group = batch.New(batch.Options{Depth: maxGroup, Merge: maxGroup}, s.commitGroup)
	return nil
}

// Path is the store's file.
func (s *SQLite) Path() string { return s.path }

// String names the store for messages.
func (s *SQLite) String() string { return s.path }

// Close closes the store.
func (s *SQLite) Close() error {
	if s.group != nil {
		_ = s.group.Close()
	}
	var errs []error
	for _, st := range []*sql.Stmt{s.journalStmt, s.fenceStmt, s.recordsStmt, s.auditStmt} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(append(errs, s.r.Close(), s.w.Close())...)
}

// SchemaVersion is the version of the newest migration this package has.
func SchemaVersion() int {
	ms, err := stored.Migrations(migrationFiles, "migrations")
	if err != nil {
		panic("sqlitestore: " + err.Error())
	}
	return len(ms)
}

// migrate applies the migrations the store lacks, in one transaction that
// holds the write lock, so that processes opening a new store at once
// apply each migration once.
func (s *SQLite) migrate(ctx context.Context) error {
	ms, err := stored.Migrations(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("store migrations: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return err
		}
		if have > len(ms) {
			return &stored.NewerSchemaError{Store: s.path, Version: have, Known: len(ms)}
		}
		for _, m := range ms[have:] {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d_%s: %w", m.Version, m.Name, err)
			}
			if m.Version == 1 {
				if err := addLegacyColumns(ctx, tx); err != nil {
					return fmt.Errorf("migration %d_%s: %w", m.Version, m.Name, err)
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, time.Now().UnixNano()); err != nil {
				return err
			}
		}
		return nil
	})
	var newer *stored.NewerSchemaError
	if errors.As(err, &newer) {
		return err
	}
	if err != nil {
		return fmt.Errorf("store schema: %w", err)
	}
	return nil
}

// addLegacyColumns gives a store created before versioned migrations the
// columns added to its tables since: CREATE TABLE IF NOT EXISTS left its
// tables as they were.
func addLegacyColumns(ctx context.Context, tx *sql.Tx) error {
	for _, tc := range []struct{ table, column, def string }{
		{"records", "restore", `TEXT NOT NULL DEFAULT '{}'`},
		{"targets", "restore", `TEXT NOT NULL DEFAULT '{}'`},
	} {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`, tc.table, tc.column).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+tc.table+` ADD COLUMN `+tc.column+` `+tc.def); err != nil {
				return err
			}
		}
	}
	return nil
}

// busyRetryFor bounds how long a write keeps retrying a busy database
// (beyond the busy timeout each attempt already waits).
const busyRetryFor = time.Minute

// isBusy reports SQLITE_BUSY and SQLITE_LOCKED (and their extended codes):
// another connection, of this process or another, holds the lock the
// statement needs.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
		return true
	}
	return false
}

// retry runs fn until it succeeds, fails with something other than a busy
// database, ctx is done or busyRetryFor has passed, backing off between
// attempts. It waits on the wall clock: what it waits for is another
// process releasing the file's lock.
func retry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(busyRetryFor)
	wait := 5 * time.Millisecond
	for {
		err := fn()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE: the write lock is
// taken first, so a transaction never fails half-way for want of it),
// retried whole while the database is busy.
func (s *SQLite) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return retry(ctx, func() error {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// exec runs one write statement outside a transaction, retried while the
// database is busy.
func (s *SQLite) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := retry(ctx, func() error {
		var err error
		res, err = s.w.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}
