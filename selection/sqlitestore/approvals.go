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
	rows, err := s.r.QueryContext(ctx, `SELECT `+stored.DocColumnNames+` FROM approvals WHERE selection_id = ? ORDER BY created_at, id`, selectionID)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	defer rows.Close()
	return stored.ScanDocsWho(rows, stored.ApprovalWho)
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

func (s *SQLite) ApprovedCategories(ctx context.Context, action, dim string) (map[string]bool, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT value FROM approved_categories WHERE action = ? AND dim = ?`, action, dim)
	if err != nil {
		return nil, fmt.Errorf("read approved categories: %w", err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read approved categories: %w", err)
		}
		seen[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read approved categories: %w", err)
	}
	return seen, nil
}

func (s *SQLite) AddApprovedCategories(ctx context.Context, action, dim string, values []string) error {
	if len(values) == 0 {
		return nil
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, v := range values {
			if _, err := tx.ExecContext(ctx, `INSERT INTO approved_categories (action, dim, value) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, action, dim, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add approved categories: %w", err)
	}
	return nil
}

// UseNonce drops the expired nonces, records this one unless it is there,
// and reads who used it first, in one transaction.
func (s *SQLite) UseNonce(ctx context.Context, nonce, usedBy string, keepUntil, now time.Time) (string, error) {
	var first string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM used_nonces WHERE expires_at < ?`, now.UnixNano()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO used_nonces (nonce, used_by, expires_at) VALUES (?, ?, ?) ON CONFLICT (nonce) DO NOTHING`,
			nonce, usedBy, keepUntil.UnixNano()); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT used_by FROM used_nonces WHERE nonce = ?`, nonce).Scan(&first)
	})
	if err != nil {
		return "", fmt.Errorf("use nonce: %w", err)
	}
	return first, nil
}
