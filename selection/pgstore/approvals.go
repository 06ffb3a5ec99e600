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
	rows, err := s.pool.Query(ctx, `SELECT `+stored.DocColumnNames+` FROM approvals WHERE selection_id = $1 ORDER BY created_at, id`, selectionID)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	defer rows.Close()
	return stored.ScanDocsWho(rows, stored.ApprovalWho)
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

func (s *Postgres) ApprovedCategories(ctx context.Context, action, dim string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT value FROM approved_categories WHERE action = $1 AND dim = $2`, action, dim)
	if err != nil {
		return nil, fmt.Errorf("read approved categories: %w", err)
	}
	vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read approved categories: %w", err)
	}
	seen := make(map[string]bool, len(vals))
	for _, v := range vals {
		seen[v] = true
	}
	return seen, nil
}

func (s *Postgres) AddApprovedCategories(ctx context.Context, action, dim string, values []string) error {
	if len(values) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO approved_categories (action, dim, value) SELECT $1, $2, v FROM unnest($3::text[]) AS v ON CONFLICT DO NOTHING`,
		action, dim, values); err != nil {
		return fmt.Errorf("add approved categories: %w", err)
	}
	return nil
}

// UseNonce drops the expired nonces, records this one unless it is there,
// then reads who used it first: a statement of its own, so that it sees a
// concurrent caller's insert that the one before waited for.
func (s *Postgres) UseNonce(ctx context.Context, nonce, usedBy string, keepUntil, now time.Time) (string, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM used_nonces WHERE expires_at < $1`, now.UnixNano()); err != nil {
		return "", fmt.Errorf("use nonce: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO used_nonces (nonce, used_by, expires_at) VALUES ($1, $2, $3) ON CONFLICT (nonce) DO NOTHING`,
		nonce, usedBy, keepUntil.UnixNano()); err != nil {
		return "", fmt.Errorf("use nonce: %w", err)
	}
	var first string
	if err := s.pool.QueryRow(ctx, `SELECT used_by FROM used_nonces WHERE nonce = $1`, nonce).Scan(&first); err != nil {
		return "", fmt.Errorf("use nonce: %w", err)
	}
	return first, nil
}
