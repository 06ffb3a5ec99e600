package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

func (s *Postgres) CreateSelection(ctx context.Context, sel *selection.Selection) error {
	subject, clientID := stored.PrincipalColumns(sel.Principal)
	_, err := s.pool.Exec(ctx, `INSERT INTO selections (id, doc, state, created_at, expires_at, subject, client_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		sel.ID, stored.Encode(sel), sel.State, sel.CreatedAt.UnixNano(), sel.ExpiresAt.UnixNano(), subject, clientID)
	if err != nil {
		return fmt.Errorf("create selection: %w", err)
	}
	return nil
}

var recordColumnNames = []string{"selection_id", "id", "disposition", "rule", "note", "version", "source", "review", "before", "groups", "restore", "frame"}

// PutRecords copies the records in (COPY: one statement, all or nothing).
func (s *Postgres) PutRecords(ctx context.Context, selectionID string, recs []selection.Record) error {
	rows := make([][]any, len(recs))
	for i := range recs {
		r := &recs[i]
		review, before, groups, restore := stored.RecordColumns(r)
		rows[i] = []any{selectionID, r.ID, r.Disposition, int32(r.Rule), r.Note, r.Version, r.Source, review, before, groups, restore, stored.FrameColumn(r.Frame)}
	}
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"records"}, recordColumnNames, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("put records: %w", err)
	}
	return nil
}

func (s *Postgres) FinishSelection(ctx context.Context, sel *selection.Selection) error {
	ct, err := s.pool.Exec(ctx, `UPDATE selections SET doc = $1, state = $2, expires_at = $3 WHERE id = $4`,
		stored.Encode(sel), sel.State, sel.ExpiresAt.UnixNano(), sel.ID)
	if err != nil {
		return fmt.Errorf("finish selection: %w", err)
	}
	if ct.RowsAffected() == 0 {
		return selection.ErrNotFound
	}
	return nil
}

func (s *Postgres) Selection(ctx context.Context, id string) (*selection.Selection, error) {
	sel, err := stored.ScanDocWho(s.pool.QueryRow(ctx, `SELECT `+stored.DocColumnNames+` FROM selections WHERE id = $1`, id), stored.SelectionWho)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, selection.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read selection: %w", err)
	}
	return sel, nil
}

func (s *Postgres) Records(ctx context.Context, selectionID string, q selection.RecordQuery) ([]selection.Record, error) {
	where := []string{"selection_id = $1", "id > $2"}
	args := []any{selectionID, q.After}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if q.Disposition != "" {
		where = append(where, "disposition = "+arg(q.Disposition))
	}
	for _, k := range stored.SortedKeys(q.Group) {
		// A missing dimension reads as null, as SQLite's json_extract has it.
		where = append(where, "COALESCE(groups::jsonb -> "+arg(k)+"::text, 'null'::jsonb) = "+arg(q.Group[k])+"::jsonb")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT `+stored.RecordColumnNames+` FROM records WHERE `+strings.Join(where, " AND ")+` ORDER BY id LIMIT `+arg(limit), args...)
	if err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	defer rows.Close()
	recs, err := stored.ScanRecords(rows)
	if err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	return recs, nil
}

func (s *Postgres) EachRecord(ctx context.Context, selectionID string, fn func(selection.Record) error) error {
	return stored.EachRecord(ctx, s.Records, selectionID, fn)
}

func (s *Postgres) RecentSelections(ctx context.Context, limit int) ([]*selection.Selection, error) {
	return stored.RecentSelections(ctx, func(ctx context.Context, q string, args ...any) (stored.Rows, func(), error) {
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return nil, nil, err
		}
		return rows, rows.Close, nil
	}, stored.Dollar, limit)
}
