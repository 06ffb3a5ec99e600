package stored

import (
	"context"
	"fmt"
	"strconv"

	"github.com/airlock-mcp/airlock/selection"
)

// recordPage is how many records EachRecord reads at a time.
const recordPage = 2000

// EachRecord calls fn for every record of a selection in id order, as
// selection.Store's EachRecord does, reading them through the store's
// records a keyset page at a time so that no read transaction is held
// open for long.
func EachRecord(ctx context.Context, records func(context.Context, string, selection.RecordQuery) ([]selection.Record, error),
	selectionID string, fn func(selection.Record) error) error {
	after := ""
	for {
		recs, err := records(ctx, selectionID, selection.RecordQuery{After: after, Limit: recordPage})
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(recs) < recordPage {
			return nil
		}
		after = recs[len(recs)-1].ID
	}
}

// Query runs sql with its arguments on a store's driver and returns the
// rows and what closes them (database/sql's Close returns an error and
// pgx's does not).
type Query func(ctx context.Context, sql string, args ...any) (Rows, func(), error)

// Placeholder writes a store's nth query parameter (from 1).
type Placeholder func(n int) string

// Question is SQLite's placeholder (?); Dollar is PostgreSQL's ($n).
func Question(int) string { return "?" }
func Dollar(n int) string { return "$" + strconv.Itoa(n) }

// RecentSelections lists the newest ready selections, newest first, as
// selection.Store's RecentSelections does, through the store's query.
func RecentSelections(ctx context.Context, query Query, arg Placeholder, limit int) ([]*selection.Selection, error) {
	rows, done, err := query(ctx, `SELECT `+DocColumnNames+` FROM selections WHERE state = `+arg(1)+` ORDER BY created_at DESC, id LIMIT `+arg(2),
		selection.StateReady, limit)
	if err != nil {
		return nil, fmt.Errorf("read selections: %w", err)
	}
	defer done()
	return ScanDocsWho(rows, SelectionWho)
}
