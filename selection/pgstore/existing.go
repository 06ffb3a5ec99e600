package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

// ErrNoStore is returned by OpenExisting and OpenReadOnly when the
// database holds no airlock store.
var ErrNoStore = stored.ErrNoStore

// OpenExisting connects to the store at dbURL for an operator's command
// that records decisions (approve, review): unlike Open it never migrates
// the schema. A database without airlock's schema, or with another version
// of it than this airlock knows, is refused and left as it was.
func OpenExisting(ctx context.Context, dbURL string) (*Postgres, error) {
	return openExisting(ctx, dbURL, false)
}

// OpenReadOnly connects as OpenExisting does, in sessions whose
// transactions are read-only (audit): every write through it fails.
func OpenReadOnly(ctx context.Context, dbURL string) (*Postgres, error) {
	return openExisting(ctx, dbURL, true)
}

func openExisting(ctx context.Context, dbURL string, readOnly bool) (*Postgres, error) {
	name := redact(dbURL)
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", name, redactErr(err, dbURL))
	}
	if readOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "10s"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", name, redactErr(err, dbURL))
	}
	var have int
	err = pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42P01": // undefined_table
		err = fmt.Errorf("%w at %s: it has no airlock schema", ErrNoStore, name)
	case err != nil:
		err = fmt.Errorf("store %s: %w", name, redactErr(err, dbURL))
	default:
		err = stored.ExistingSchema(name, have, SchemaVersion())
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return newStore(pool, name), nil
}
