package pgstore

import (
	"context"
	"fmt"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

// Audit appends events in the next group transaction (see group.go),
// committed asynchronously unless the group holds an intent (the next
// intent or operation update flushes them); the trail is append-only
// (triggers refuse any update, delete or truncate).
func (s *Postgres) Audit(ctx context.Context, events []selection.AuditEvent) error {
	if len(events) == 0 {
		return nil
	}
	return s.write(ctx, groupCall{what: "audit", events: events})
}

func (s *Postgres) AuditTrail(ctx context.Context, operationID string) ([]selection.AuditEvent, error) {
	op, err := s.Operation(ctx, operationID)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+stored.DocColumnNames+` FROM audit WHERE operation_id = $1 OR (operation_id = '' AND selection_id = $2) ORDER BY seq`,
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
