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

func (s *SQLite) PutApproval(ctx context.Context, a *selection.Approval) error {
	subject, clientID := stored.PrincipalColumns(a.Principal)
	_, err := s.exec(ctx, `INSERT INTO approvals (id, selection_id, doc, used_by, created_at, subject, client_id) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.SelectionID, stored.Encode(a), a.UsedBy, a.CreatedAt.UnixNano(), subject, clientID)
	if err != nil {
		return fmt.Errorf("put approval: %w", err)
	}
	return nil
}

func (s *SQLite) Approvals(ctx context.Context, selectionID string) ([]*selection.Approval, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT doc, subject, client_id FROM approvals WHERE selection_id = ? ORDER BY created_at, id`, selectionID)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	return scanRowsWho(rows, setApprovalWho)
}

// UseApproval spends an approval once: for its first operation, and again
// for that same operation (a process that took the operation over does it
// again), never for another.
func (s *SQLite) UseApproval(ctx context.Context, approvalID, operationID string, at time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var doc, usedBy string
		err := tx.QueryRowContext(ctx, `SELECT doc, used_by FROM approvals WHERE id = ?`, approvalID).Scan(&doc, &usedBy)
		if errors.Is(err, sql.ErrNoRows) {
			return selection.ErrNotFound
		}
		if err != nil {
			return err
		}
		if usedBy == operationID {
			return nil
		}
		if usedBy != "" {
			return selection.ErrConflict
		}
		var a selection.Approval
		if err := stored.Doc(doc, &a); err != nil {
			return err
		}
		a.UsedAt, a.UsedBy = &at, operationID
		_, err = tx.ExecContext(ctx, `UPDATE approvals SET doc = ?, used_by = ? WHERE id = ? AND used_by = ''`, stored.Encode(&a), operationID, approvalID)
		return err
	})
	if err != nil && !errors.Is(err, selection.ErrNotFound) && !errors.Is(err, selection.ErrConflict) {
		return fmt.Errorf("use approval: %w", err)
	}
	return err
}
