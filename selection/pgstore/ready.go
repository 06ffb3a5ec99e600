package pgstore

import (
	"context"
	"fmt"

	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

// Ready reports whether the database answers and holds exactly the schema
// this airlock knows (a readiness probe): nil when it does.
func (s *Postgres) Ready(ctx context.Context) error {
	var have int
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("store %s: unreachable", s.name)
	}
	return stored.ExistingSchema(s.name, have, SchemaVersion())
}
