package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

func (s *SQLite) CreateSelection(ctx context.Context, sel *selection.Selection) error {
	subject, clientID := stored.PrincipalColumns(sel.Principal)
	_, err := s.exec(ctx, `INSERT INTO selections (id, doc, state, created_at, expires_at, subject, client_id) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		sel.ID, stored.Encode(sel), sel.State, sel.CreatedAt.UnixNano(), sel.ExpiresAt.UnixNano(), subject, clientID)
	if err != nil {
		return fmt.Errorf("create selection: %w", err)
	}
	return nil
}

// recordsPerInsert is how many records one INSERT statement adds: one
// statement per row made PutRecords pay a statement execution per record.
const recordsPerInsert = 100

// recordColumns is the number of values bound per record.
const recordColumns = 12

// insertRecordsSQL is an INSERT of n records.
func insertRecordsSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO records (selection_id, id, disposition, rule, note, version, source, review, before, groups, restore, frame) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	}
	return b.String()
}

func (s *SQLite) PutRecords(ctx context.Context, selectionID string, recs []selection.Record) error {
	// Encode once, outside the transaction that may be retried.
	args := make([]any, 0, len(recs)*recordColumns)
	for i := range recs {
		r := &recs[i]
		review, before, groups, restore := stored.RecordColumns(r)
		args = append(args, selectionID, r.ID, r.Disposition, r.Rule, r.Note, r.Version, r.Source, review, before, groups, restore, stored.FrameColumn(r.Frame))
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		full := tx.StmtContext(ctx, s.recordsStmt)
		defer full.Close()
		for start := 0; start < len(recs); start += recordsPerInsert {
			n := min(recordsPerInsert, len(recs)-start)
			chunk := args[start*recordColumns : (start+n)*recordColumns]
			var err error
			if n == recordsPerInsert {
				_, err = full.ExecContext(ctx, chunk...)
			} else {
				_, err = tx.ExecContext(ctx, insertRecordsSQL(n), chunk...)
			}
			if err != nil {
				return fmt.Errorf("records %q to %q: %w", recs[start].ID, recs[start+n-1].ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put records: %w", err)
	}
	return nil
}

func (s *SQLite) FinishSelection(ctx context.Context, sel *selection.Selection) error {
	res, err := s.exec(ctx, `UPDATE selections SET doc = ?, state = ?, expires_at = ? WHERE id = ?`,
		stored.Encode(sel), sel.State, sel.ExpiresAt.UnixNano(), sel.ID)
	if err != nil {
		return fmt.Errorf("finish selection: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return selection.ErrNotFound
	}
	return nil
}

func (s *SQLite) Selection(ctx context.Context, id string) (*selection.Selection, error) {
	sel, err := stored.ScanDocWho(s.r.QueryRowContext(ctx, `SELECT `+stored.DocColumnNames+` FROM selections WHERE id = ?`, id), stored.SelectionWho)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, selection.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read selection: %w", err)
	}
	return sel, nil
}

func (s *SQLite) Records(ctx context.Context, selectionID string, q selection.RecordQuery) ([]selection.Record, error) {
	where := []string{"selection_id = ?", "id > ?"}
	args := []any{selectionID, q.After}
	if q.Disposition != "" {
		where = append(where, "disposition = ?")
		args = append(args, q.Disposition)
	}
	for _, k := range stored.SortedKeys(q.Group) {
		where = append(where, "json_extract(groups, ?) IS json_extract(?, '$')")
		args = append(args, "$."+stored.QuoteKey(k), q.Group[k])
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, `SELECT `+stored.RecordColumnNames+` FROM records WHERE `+strings.Join(where, " AND ")+` ORDER BY id LIMIT ?`, args...)
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

func (s *SQLite) EachRecord(ctx context.Context, selectionID string, fn func(selection.Record) error) error {
	return stored.EachRecord(ctx, s.Records, selectionID, fn)
}

func (s *SQLite) RecentSelections(ctx context.Context, limit int) ([]*selection.Selection, error) {
	return stored.RecentSelections(ctx, func(ctx context.Context, q string, args ...any) (stored.Rows, func(), error) {
		rows, err := s.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, nil, err
		}
		return rows, func() { rows.Close() }, nil
	}, stored.Question, limit)
}
