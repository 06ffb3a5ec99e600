package sqlitestore

import (
	"context"

	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

// Ready reports whether the store answers and holds exactly the schema
// this airlock knows (a readiness probe): nil when it does.
func (s *SQLite) Ready(ctx context.Context) error {
	var have int
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return err
	}
	return stored.ExistingSchema(s.path, have, SchemaVersion())
}
