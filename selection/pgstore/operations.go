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

func (s *Postgres) CreateOperation(ctx context.Context, op *selection.Operation) (*selection.Operation, bool, error) {
	subject, clientID := stored.PrincipalColumns(op.Principal)
	ct, err := s.pool.Exec(ctx, `INSERT INTO operations (id, selection_id, action_digest, mode, status, doc, created_at, updated_at,
		lease_holder, lease_epoch, lease_expires, subject, client_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING`,
		op.ID, op.SelectionID, op.ActionDigest, op.Mode, op.Status, stored.Encode(op), op.CreatedAt.UnixNano(), op.UpdatedAt.UnixNano(),
		op.Lease.Holder, op.Lease.Epoch, stored.UnixNano(op.Lease.Expires), subject, clientID)
	if err != nil {
		return nil, false, fmt.Errorf("create operation: %w", err)
	}
	if ct.RowsAffected() == 1 {
		return op, true, nil
	}
	if op.Mode != selection.ModeExecute {
		return nil, false, fmt.Errorf("create operation: operation %q exists", op.ID)
	}
	// The insert waited for the conflicting one to commit: it is there.
	existing, err := stored.ScanOperation(s.pool.QueryRow(ctx, `SELECT `+stored.OperationColumnNames+` FROM operations WHERE selection_id = $1 AND action_digest = $2 AND mode = 'execute'`,
		op.SelectionID, op.ActionDigest))
	if err != nil {
		return nil, false, fmt.Errorf("create operation: %w", err)
	}
	return existing, false, nil
}

func (s *Postgres) Operation(ctx context.Context, id string) (*selection.Operation, error) {
	op, err := stored.ScanOperation(s.pool.QueryRow(ctx, `SELECT `+stored.OperationColumnNames+` FROM operations WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, selection.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read operation: %w", err)
	}
	return op, nil
}

func (s *Postgres) OperationsOf(ctx context.Context, selectionID string) ([]*selection.Operation, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+stored.OperationColumnNames+` FROM operations WHERE selection_id = $1 ORDER BY created_at, id`, selectionID)
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
func (s *Postgres) UpdateOperation(ctx context.Context, op *selection.Operation) error {
	ct, err := s.pool.Exec(ctx, `UPDATE operations SET status = $1, doc = $2, updated_at = $3,
		lease_expires = CASE WHEN $1 = 'running' THEN lease_expires ELSE 0 END
		WHERE id = $4 AND lease_epoch = $5`,
		op.Status, stored.Encode(op), op.UpdatedAt.UnixNano(), op.ID, op.Lease.Epoch)
	if err != nil {
		return fmt.Errorf("update operation: %w", err)
	}
	if ct.RowsAffected() == 0 {
		return s.fenceError(ctx, op.ID)
	}
	return nil
}

// fenceError says why a fenced write to an operation matched no row.
func (s *Postgres) fenceError(ctx context.Context, opID string) error {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM operations WHERE id = $1`, opID).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return selection.ErrNotFound
	}
	return selection.ErrLeaseLost
}

func (s *Postgres) InitTargets(ctx context.Context, operationID, selectionID string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO targets (operation_id, id, outcome, version, before, restore, doc, frame)
			SELECT $1, id, 'pending', version, before, restore, '{}', frame FROM records WHERE selection_id = $2 AND disposition = 'member'
			ON CONFLICT DO NOTHING`, operationID, selectionID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT COUNT(*) FROM targets WHERE operation_id = $1`, operationID).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("init targets: %w", err)
	}
	return n, nil
}

// asyncCommit makes a transaction's commit return before its WAL is
// flushed. Groups without an intent use it: an intent must be durable
// before its write is sent, but an outcome need not (lost in a crash of
// the database, it leaves its target in flight, to be re-read, never
// re-sent blindly), and every synchronous commit after it (the next
// intent, the operation's end) flushes it too.
const asyncCommit = `SET LOCAL synchronous_commit = off`

// hasIntent reports an entry that announces a write.
func hasIntent(entries []selection.Target) bool {
	for _, e := range entries {
		if e.Outcome == selection.TargetInFlight {
			return true
		}
	}
	return false
}

// Journal applies the entries in the next group transaction (see
// group.go), after checking the lease's epoch under a share lock on the
// operation: a takeover (which updates that row) waits for the group to
// commit, and the journal write of a holder whose lease was taken finds
// the new epoch. A group with an intent commits synchronously.
func (s *Postgres) Journal(ctx context.Context, l selection.Lease, entries []selection.Target) error {
	if len(entries) == 0 {
		return nil
	}
	docs := make([]string, len(entries))
	for i := range entries {
		docs[i] = stored.TargetDoc(&entries[i])
	}
	return s.write(ctx, groupCall{what: "journal", lease: l, entries: entries, docs: docs})
}

func (s *Postgres) Targets(ctx context.Context, operationID string, q selection.TargetQuery) ([]selection.Target, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	var rows pgx.Rows
	var err error
	if q.Outcome != "" {
		rows, err = s.pool.Query(ctx, `SELECT `+stored.TargetColumnNames+` FROM targets
			WHERE operation_id = $1 AND id > $2 AND outcome = $3 ORDER BY id LIMIT $4`, operationID, q.After, q.Outcome, limit)
	} else {
		rows, err = s.pool.Query(ctx, `SELECT `+stored.TargetColumnNames+` FROM targets
			WHERE operation_id = $1 AND id > $2 ORDER BY id LIMIT $3`, operationID, q.After, limit)
	}
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

func (s *Postgres) CountTargets(ctx context.Context, operationID string) (map[selection.Outcome]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT outcome, COUNT(*) FROM targets WHERE operation_id = $1 GROUP BY outcome`, operationID)
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

// AcquireLease takes the lease in one conditional update (the
// compare-and-set: PostgreSQL re-checks the condition on the row it
// locks), then turns the targets left in flight into unknown, in the same
// transaction.
func (s *Postgres) AcquireLease(ctx context.Context, operationID, holder string, now time.Time, ttl time.Duration) (selection.Lease, error) {
	l := selection.Lease{OperationID: operationID, Holder: holder, Expires: now.Add(ttl)}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE operations SET lease_holder = $2, lease_epoch = lease_epoch + 1, lease_expires = $3, updated_at = $4
			WHERE id = $1 AND lease_expires <= $4 RETURNING lease_epoch`,
			operationID, holder, l.Expires.UnixNano(), now.UnixNano()).Scan(&l.Epoch)
		if errors.Is(err, pgx.ErrNoRows) {
			var n int
			if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM operations WHERE id = $1`, operationID).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return selection.ErrNotFound
			}
			return selection.ErrLeaseHeld
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE targets SET outcome = 'unknown', doc = (doc::jsonb || jsonb_build_object('note', $2::text))::text
			WHERE operation_id = $1 AND outcome = 'in_flight'`, operationID, stored.InFlightNote)
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

func (s *Postgres) RenewLease(ctx context.Context, l selection.Lease, now time.Time, ttl time.Duration) (selection.Lease, error) {
	ct, err := s.pool.Exec(ctx, `UPDATE operations SET lease_expires = $1, updated_at = $2 WHERE id = $3 AND lease_epoch = $4`,
		now.Add(ttl).UnixNano(), now.UnixNano(), l.OperationID, l.Epoch)
	if err != nil {
		return l, fmt.Errorf("renew lease: %w", err)
	}
	if ct.RowsAffected() == 0 {
		return l, s.fenceError(ctx, l.OperationID)
	}
	l.Expires = now.Add(ttl)
	return l, nil
}

func (s *Postgres) ExpiredOperations(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM operations WHERE status = $1 AND lease_expires <= $2 ORDER BY created_at, id LIMIT $3`,
		selection.OpRunning, now.UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("expired operations: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("expired operations: %w", err)
	}
	return ids, nil
}
