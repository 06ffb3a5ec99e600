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

func (s *Postgres) PutApproval(ctx context.Context, a *selection.Approval) error {
	subject, clientID := stored.PrincipalColumns(a.Principal)
	_, err := s.pool.Exec(ctx, `INSERT INTO approvals (id, selection_id, doc, used_by, created_at, subject, client_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		a.ID, a.SelectionID, stored.Encode(a), a.UsedBy, a.CreatedAt.UnixNano(), subject, clientID)
	if err != nil {
		return fmt.Errorf("put approval: %w", err)
	}
	return nil
}

func (s *Postgres) Approvals(ctx context.Context, selectionID string) ([]*selection.Approval, error) {
	rows, err := s.pool.Query(ctx, `SELECT doc, subject, client_id FROM approvals WHERE selection_id = $1 ORDER BY created_at, id`, selectionID)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	return docsWho(rows, setApprovalWho)
}

// UseApproval spends an approval once across replicas: the row is locked
// while it is read and marked. The operation that used it may use it
// again (a replica that took the operation over does).
func (s *Postgres) UseApproval(ctx context.Context, approvalID, operationID string, at time.Time) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var doc, usedBy string
		err := tx.QueryRow(ctx, `SELECT doc, used_by FROM approvals WHERE id = $1 FOR UPDATE`, approvalID).Scan(&doc, &usedBy)
		if errors.Is(err, pgx.ErrNoRows) {
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
		_, err = tx.Exec(ctx, `UPDATE approvals SET doc = $1, used_by = $2 WHERE id = $3 AND used_by = ''`, stored.Encode(&a), operationID, approvalID)
		return err
	})
	if err != nil && !errors.Is(err, selection.ErrNotFound) && !errors.Is(err, selection.ErrConflict) {
		return fmt.Errorf("use approval: %w", err)
	}
	return err
}
