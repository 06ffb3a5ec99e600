package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

func (s *Postgres) Meta(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, selection.ErrNotFound
	}
	return v, err
}

func (s *Postgres) SetMeta(ctx context.Context, key string, value []byte) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	return nil
}

func (s *Postgres) SetMetaIfAbsent(ctx context.Context, key string, value []byte) ([]byte, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, value); err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	var v []byte
	if err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE key = $1`, key).Scan(&v); err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	return v, nil
}

func (s *Postgres) MetaKeys(ctx context.Context, from, to string, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT key FROM meta WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3`, from, to, limit)
	if err != nil {
		return nil, fmt.Errorf("meta keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("meta keys: %w", err)
	}
	return keys, nil
}

func (s *Postgres) DeleteMeta(ctx context.Context, key string) error {
	// The keys below key are those from key/ up to key0 ('0' follows '/';
	// the column's collation is C: byte order).
	if _, err := s.pool.Exec(ctx, `DELETE FROM meta WHERE key = $1 OR (key >= $2 AND key < $3)`, key, key+"/", key+"0"); err != nil {
		return fmt.Errorf("delete meta: %w", err)
	}
	return nil
}

// PutScan stores the scan and prunes the others under an advisory lock,
// so that replicas pruning at once do not deadlock on each other's rows.
func (s *Postgres) PutScan(ctx context.Context, sc selection.FrozenScan, b selection.ScanBounds) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(scanLock)); err != nil {
			return err
		}
		now := sc.UsedAt.UnixNano()
		if _, err := tx.Exec(ctx, `INSERT INTO scans (id, revision, doc, bytes, used_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, doc = excluded.doc, bytes = excluded.bytes, used_at = excluded.used_at
			WHERE scans.revision < excluded.revision`,
			sc.ID, sc.Revision, sc.Doc, len(sc.Doc), now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM scans WHERE used_at < $1 AND id <> $2`, now-b.TTL.Nanoseconds(), sc.ID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, bytes FROM scans WHERE id <> $1 ORDER BY used_at DESC, id`, sc.ID)
		if err != nil {
			return err
		}
		drop, err := stored.ScansToDrop(rows, len(sc.Doc), b)
		rows.Close()
		if err != nil {
			return err
		}
		if len(drop) > 0 {
			_, err = tx.Exec(ctx, `DELETE FROM scans WHERE id = ANY($1)`, drop)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("put scan: %w", err)
	}
	return nil
}

func (s *Postgres) FrozenScan(ctx context.Context, id string, now time.Time, ttl time.Duration) (*selection.FrozenScan, error) {
	sc := &selection.FrozenScan{ID: id, UsedAt: now}
	err := s.pool.QueryRow(ctx, `UPDATE scans SET used_at = $1 WHERE id = $2 AND used_at >= $3 RETURNING revision, doc`,
		now.UnixNano(), id, now.Add(-ttl).UnixNano()).Scan(&sc.Revision, &sc.Doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, selection.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read scan: %w", err)
	}
	return sc, nil
}
