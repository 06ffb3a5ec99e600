package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

// Audit appends events in one transaction, committed asynchronously (see
// asyncCommit: the next intent or operation update flushes them); the
// trail is append-only (triggers refuse any update, delete or truncate).
func (s *Postgres) Audit(ctx context.Context, events []selection.AuditEvent) error {
	if len(events) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(asyncCommit)
	for _, e := range events {
		subject, clientID := stored.PrincipalColumns(e.Principal)
		b.Queue(`INSERT INTO audit (at, operation_id, selection_id, doc, subject, client_id) VALUES ($1, $2, $3, $4, $5, $6)`,
			e.At.UnixNano(), e.OperationID, e.SelectionID, stored.Encode(e), subject, clientID)
	}
	ctx = context.WithoutCancel(ctx)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

func (s *Postgres) AuditTrail(ctx context.Context, operationID string) ([]selection.AuditEvent, error) {
	op, err := s.Operation(ctx, operationID)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT doc, subject, client_id FROM audit WHERE operation_id = $1 OR (operation_id = '' AND selection_id = $2) ORDER BY seq`,
		operationID, op.SelectionID)
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	evs, err := docsWho(rows, setAuditWho)
	if err != nil {
		return nil, err
	}
	out := make([]selection.AuditEvent, len(evs))
	for i, e := range evs {
		out[i] = *e
	}
	return out, nil
}
