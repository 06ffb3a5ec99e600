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

func (s *SQLite) CreateOperation(ctx context.Context, op *selection.Operation) (*selection.Operation, bool, error) {
	var existing *selection.Operation
	subject, clientID := stored.PrincipalColumns(op.Principal)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		existing = nil
		// The partial unique index on (selection_id, action_digest) for
		// mode execute is what keeps it to one.
		res, err := tx.ExecContext(ctx, `INSERT INTO operations (id, selection_id, action_digest, mode, status, doc, created_at, updated_at,
			lease_holder, lease_epoch, lease_expires, subject, client_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			op.ID, op.SelectionID, op.ActionDigest, op.Mode, op.Status, stored.Encode(op), op.CreatedAt.UnixNano(), op.UpdatedAt.UnixNano(),
			op.Lease.Holder, op.Lease.Epoch, stored.UnixNano(op.Lease.Expires), subject, clientID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		if op.Mode != selection.ModeExecute {
			return fmt.Errorf("operation %q exists", op.ID)
		}
		existing, err = stored.ScanOperation(tx.QueryRowContext(ctx, `SELECT `+stored.OperationColumnNames+` FROM operations WHERE selection_id = ? AND action_digest = ? AND mode = 'execute'`,
			op.SelectionID, op.ActionDigest))
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("create operation: %w", err)
	}
	if existing != nil {
		return existing, false, nil
	}
	return op, true, nil
}

func (s *SQLite) Operation(ctx context.Context, id string) (*selection.Operation, error) {
	op, err := stored.ScanOperation(s.r.QueryRowContext(ctx, `SELECT `+stored.OperationColumnNames+` FROM operations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, selection.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read operation: %w", err)
	}
	return op, nil
}

func (s *SQLite) OperationsOf(ctx context.Context, selectionID string) ([]*selection.Operation, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+stored.OperationColumnNames+` FROM operations WHERE selection_id = ? ORDER BY created_at, id`, selectionID)
	if err != nil {
		return nil, fmt.Errorf("read operations: %w", err)
	}
	defer rows.Close()
	ops, err := stored.ScanOperations(rows)
	if err != nil {
		return nil, fmt.Errorf("read operations: %w", err)
	}
	return ops, nil
}

// UpdateOperation is fenced by op.Lease's epoch. An operation that is no
// longer running releases its lease (the epoch stays).
func (s *SQLite) UpdateOperation(ctx context.Context, op *selection.Operation) error {
	res, err := s.exec(ctx, `UPDATE operations SET status = ?, doc = ?, updated_at = ?,
		lease_expires = CASE WHEN ? = 'running' THEN lease_expires ELSE 0 END
		WHERE id = ? AND lease_epoch = ?`,
		op.Status, stored.Encode(op), op.UpdatedAt.UnixNano(), op.Status, op.ID, op.Lease.Epoch)
	if err != nil {
		return fmt.Errorf("update operation: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.fenceError(ctx, op.ID)
	}
	return nil
}

// fenceError says why a fenced write to an operation matched no row.
func (s *SQLite) fenceError(ctx context.Context, opID string) error {
	var n int
	if err := s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM operations WHERE id = ?`, opID).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return selection.ErrNotFound
	}
	return selection.ErrLeaseLost
}

func (s *SQLite) InitTargets(ctx context.Context, operationID, selectionID string) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO targets (operation_id, id, outcome, version, before, restore, doc, frame)
			SELECT ?, id, 'pending', version, before, restore, '{}', frame FROM records WHERE selection_id = ? AND disposition = 'member'
			ON CONFLICT DO NOTHING`, operationID, selectionID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM targets WHERE operation_id = ?`, operationID).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("init targets: %w", err)
	}
	return n, nil
}

const (
	journalSQL = `UPDATE targets SET outcome = ?, version = ?, doc = ? WHERE operation_id = ? AND id = ?`
	fenceSQL   = `SELECT lease_epoch FROM operations WHERE id = ?`
)

func (s *SQLite) Journal(ctx context.Context, l selection.Lease, entries []selection.Target) error {
	if len(entries) == 0 {
		return nil
	}
	return s.write(ctx, "journal", s.journalEntries(l, entries))
}

// journalEntries applies entries in a write transaction, after checking
// that the lease's epoch is still the operation's.
func (s *SQLite) journalEntries(l selection.Lease, entries []selection.Target) func(tx *sql.Tx) error {
	docs := make([]string, len(entries))
	for i := range entries {
		docs[i] = stored.TargetDoc(&entries[i])
	}
	return func(tx *sql.Tx) error {
		ctx := context.Background()
		var epoch int64
		fence := tx.StmtContext(ctx, s.fenceStmt)
		defer fence.Close()
		err := fence.QueryRowContext(ctx, l.OperationID).Scan(&epoch)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("journal: operation %q: %w", l.OperationID, selection.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if epoch != l.Epoch {
			return fmt.Errorf("journal: %w", selection.ErrLeaseLost)
		}
		stmt := tx.StmtContext(ctx, s.journalStmt)
		defer stmt.Close()
		for i, t := range entries {
			res, err := stmt.ExecContext(ctx, t.Outcome, t.Version, docs[i], l.OperationID, t.ID)
			if err != nil {
				return fmt.Errorf("journal %q: %w", t.ID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("journal %q: %w", t.ID, selection.ErrNotFound)
			}
		}
		return nil
	}
}

func (s *SQLite) Targets(ctx context.Context, operationID string, q selection.TargetQuery) ([]selection.Target, error) {
	where := "operation_id = ? AND id > ?"
	args := []any{operationID, q.After}
	if q.Outcome != "" {
		where += " AND outcome = ?"
		args = append(args, q.Outcome)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, `SELECT `+stored.TargetColumnNames+` FROM targets WHERE `+where+` ORDER BY id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("read targets: %w", err)
	}
	defer rows.Close()
	ts, err := stored.ScanTargets(rows, operationID)
	if err != nil {
		return nil, fmt.Errorf("read targets: %w", err)
	}
	return ts, nil
}

func (s *SQLite) CountTargets(ctx context.Context, operationID string) (map[selection.Outcome]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT outcome, COUNT(*) FROM targets WHERE operation_id = ? GROUP BY outcome`, operationID)
	if err != nil {
		return nil, fmt.Errorf("count targets: %w", err)
	}
	defer rows.Close()
	counts, err := stored.ScanCounts(rows)
	if err != nil {
		return nil, fmt.Errorf("count targets: %w", err)
	}
	return counts, nil
}

func (s *SQLite) AcquireLease(ctx context.Context, operationID, holder string, now time.Time, ttl time.Duration) (selection.Lease, error) {
	l := selection.Lease{OperationID: operationID, Holder: holder, Expires: now.Add(ttl)}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var expires int64
		err := tx.QueryRowContext(ctx, `SELECT lease_epoch, lease_expires FROM operations WHERE id = ?`, operationID).Scan(&l.Epoch, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return selection.ErrNotFound
		}
		if err != nil {
			return err
		}
		if expires > now.UnixNano() {
			return selection.ErrLeaseHeld
		}
		l.Epoch++
		if _, err := tx.ExecContext(ctx, `UPDATE operations SET lease_holder = ?, lease_epoch = ?, lease_expires = ?, updated_at = ? WHERE id = ?`,
			holder, l.Epoch, l.Expires.UnixNano(), now.UnixNano(), operationID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE targets SET outcome = 'unknown', doc = json_set(doc, '$.note', ?)
			WHERE operation_id = ? AND outcome = 'in_flight'`, stored.InFlightNote, operationID)
		return err
	})
	if errors.Is(err, selection.ErrNotFound) || errors.Is(err, selection.ErrLeaseHeld) {
		return selection.Lease{}, err
	}
	if err != nil {
		return selection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	return l, nil
}

func (s *SQLite) RenewLease(ctx context.Context, l selection.Lease, now time.Time, ttl time.Duration) (selection.Lease, error) {
	res, err := s.exec(ctx, `UPDATE operations SET lease_expires = ?, updated_at = ? WHERE id = ? AND lease_epoch = ?`,
		now.Add(ttl).UnixNano(), now.UnixNano(), l.OperationID, l.Epoch)
	if err != nil {
		return l, fmt.Errorf("renew lease: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return l, s.fenceError(ctx, l.OperationID)
	}
	l.Expires = now.Add(ttl)
	return l, nil
}

func (s *SQLite) ExpiredOperations(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM operations WHERE status = ? AND lease_expires <= ? ORDER BY created_at, id LIMIT ?`,
		selection.OpRunning, now.UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("expired operations: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
