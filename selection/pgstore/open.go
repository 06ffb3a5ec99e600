// Package pgstore is the PostgreSQL store, for airlock replicas on several
// machines sharing selections, approvals, operations and frozen scans. It
// keeps the same contract as the SQLite store (selection/storetest runs
// against both); what must hold across replicas is enforced by the
// database: one execute operation per (selection, action) by a unique
// index, approvals used once and leases taken by compare-and-set in single
// statements, the audit trail append-only by triggers. It must never
// decide such a question by reading first and writing after, outside a
// transaction that locks what it read.
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/batch"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

var _ selection.Store = (*Postgres)(nil)

// Postgres is a Store in a PostgreSQL database.
type Postgres struct {
	pool  *pgxpool.Pool
	name  string // the URL without its password
	group *batch.Queue[groupCall]
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key that serializes migrations
// between replicas starting at once.
const migrationLock = 0x6169726c6f636b01 // "airlock" 01

// scanLock serializes the pruning of frozen scans between replicas.
const scanLock = 0x6169726c6f636b02

// Open connects to the database at url (postgres://…; pgx's parameters,
// such as pool_max_conns, apply) and migrates its schema forward. A
// database whose schema is newer than this airlock knows is refused.
func Open(ctx context.Context, dbURL string) (*Postgres, error) {
	name := redact(dbURL)
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", name, redactErr(err, dbURL))
	}
	// A client stopped inside a transaction (a paused VM, SIGSTOP) would
	// hold its row locks, and so keep the other replicas from taking its
	// operations over, until it woke up: the server ends such a session.
	if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "10s"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", name, redactErr(err, dbURL))
	}
	s := newStore(pool, name)
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// redact is the URL without its password.
func redact(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

// redactErr keeps the URL's password out of an error message.
func redactErr(err error, dbURL string) error {
	u, perr := url.Parse(dbURL)
	if perr != nil || u.User == nil {
		return err
	}
	if p, ok := u.User.Password(); ok && p != "" {
		return errors.New(strings.ReplaceAll(err.Error(), p, "xxxxx"))
	}
	return err
}

// String names the store for messages: its URL without the password.
func (s *Postgres) String() string { return s.name }

// Close commits the writes already queued, then closes the pool. Later
// writes fail.
func (s *Postgres) Close() error {
	_ = s.group.Close()
	s.pool.Close()
	return nil
}

// SchemaVersion is the version of the newest migration this package has.
func SchemaVersion() int {
	ms, err := stored.Migrations(migrationFiles, "migrations")
	if err != nil {
		panic("pgstore: " + err.Error())
	}
	return len(ms)
}

// migrate applies the migrations the database lacks, in one transaction
// under an advisory lock: replicas starting at once apply each once.
func (s *Postgres) migrate(ctx context.Context) error {
	ms, err := stored.Migrations(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("store migrations: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return err
		}
		if have > len(ms) {
			return &stored.NewerSchemaError{Store: s.name, Version: have, Known: len(ms)}
		}
		for _, m := range ms[have:] {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
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
		return fmt.Errorf("store %s schema: %w", s.name, err)
	}
	return nil
}
