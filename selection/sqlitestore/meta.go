package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

func (s *SQLite) Meta(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, selection.ErrNotFound
	}
	return v, err
}

func (s *SQLite) SetMeta(ctx context.Context, key string, value []byte) error {
	if _, err := s.exec(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	return nil
}

func (s *SQLite) SetMetaIfAbsent(ctx context.Context, key string, value []byte) ([]byte, error) {
	var v []byte
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`, key, value); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	})
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	return v, nil
}

func (s *SQLite) MetaKeys(ctx context.Context, from, to string, limit int) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT key FROM meta WHERE key >= ? AND key < ? ORDER BY key LIMIT ?`, from, to, limit)
	if err != nil {
		return nil, fmt.Errorf("meta keys: %w", err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("meta keys: %w", err)
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

func (s *SQLite) DeleteMeta(ctx context.Context, key string) error {
	// The keys below key are those from key/ up to key0 ('0' follows '/').
	if _, err := s.exec(ctx, `DELETE FROM meta WHERE key = ? OR (key >= ? AND key < ?)`, key, key+"/", key+"0"); err != nil {
		return fmt.Errorf("delete meta: %w", err)
	}
	return nil
}

func (s *SQLite) PutScan(ctx context.Context, sc selection.FrozenScan, b selection.ScanBounds) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		now := sc.UsedAt.UnixNano()
		if _, err := tx.ExecContext(ctx, `INSERT INTO scans (id, revision, doc, bytes, used_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, doc = excluded.doc, bytes = excluded.bytes, used_at = excluded.used_at
			WHERE scans.revision < excluded.revision`,
			sc.ID, sc.Revision, sc.Doc, len(sc.Doc), now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM scans WHERE used_at < ? AND id <> ?`, now-b.TTL.Nanoseconds(), sc.ID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, bytes FROM scans WHERE id <> ? ORDER BY used_at DESC, id`, sc.ID)
		if err != nil {
			return err
		}
		drop, err := stored.ScansToDrop(rows, len(sc.Doc), b)
		rows.Close()
		if err != nil {
			return err
		}
		for _, id := range drop {
			if _, err := tx.ExecContext(ctx, `DELETE FROM scans WHERE id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put scan: %w", err)
	}
	return nil
}

func (s *SQLite) FrozenScan(ctx context.Context, id string, now time.Time, ttl time.Duration) (*selection.FrozenScan, error) {
	sc := &selection.FrozenScan{ID: id, UsedAt: now}
	err := retry(ctx, func() error {
		return s.w.QueryRowContext(ctx, `UPDATE scans SET used_at = ? WHERE id = ? AND used_at >= ? RETURNING revision, doc`,
			now.UnixNano(), id, now.Add(-ttl).UnixNano()).Scan(&sc.Revision, &sc.Doc)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, selection.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read scan: %w", err)
	}
	return sc, nil
}
