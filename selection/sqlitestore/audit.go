package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

const auditSQL = `INSERT INTO audit (at, operation_id, selection_id, doc, subject, client_id) VALUES (?, ?, ?, ?, ?, ?)`

// Audit appends events; the trail is append-only (triggers refuse any
// update or delete).
func (s *SQLite) Audit(ctx context.Context, events []selection.AuditEvent) error {
	if len(events) == 0 {
		return nil
	}
	return s.write(ctx, "audit", s.auditEvents(events))
}

// auditEvents inserts events in a write transaction, with the statement
// prepared once: a commit audits every target's request, and parsing the
// insert each time was a fifth of its cost.
func (s *SQLite) auditEvents(events []selection.AuditEvent) func(tx *sql.Tx) error {
	docs := make([]string, len(events))
	for i := range events {
		docs[i] = stored.Encode(events[i])
	}
	return func(tx *sql.Tx) error {
		ctx := context.Background()
		stmt := tx.StmtContext(ctx, s.auditStmt)
		defer stmt.Close()
		for i, e := range events {
			subject, clientID := stored.PrincipalColumns(e.Principal)
			if _, err := stmt.ExecContext(ctx, e.At.UnixNano(), e.OperationID, e.SelectionID, docs[i], subject, clientID); err != nil {
				return fmt.Errorf("audit: %w", err)
			}
		}
		return nil
	}
}

func (s *SQLite) AuditTrail(ctx context.Context, operationID string) ([]selection.AuditEvent, error) {
	op, err := s.Operation(ctx, operationID)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+stored.DocColumnNames+` FROM audit WHERE operation_id = ? OR (operation_id = '' AND selection_id = ?) ORDER BY seq`,
		operationID, op.SelectionID)
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	defer rows.Close()
	evs, err := stored.ScanDocsWho(rows, stored.AuditWho)
	if err != nil {
		return nil, err
	}
	out := make([]selection.AuditEvent, len(evs))
	for i, e := range evs {
		out[i] = *e
	}
	return out, nil
}
