package pgstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
)

// TestSchemaOne_MigratesForwardWithRowsReadAsUnrecorded: a database at
// schema 1 (before principals) holding a selection, an operation, an
// approval and an audit line migrates forward on open, keeps them, and
// reads their principal as unrecorded: never empty, never a guess. The
// append-only audit trail's triggers do not stop the migration.
func TestSchemaOne_MigratesForwardWithRowsReadAsUnrecorded(t *testing.T) {
	u := pgtest.Database(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	first, err := os.ReadFile(filepath.Join("migrations", "0001_initial.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		string(first),
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
		`INSERT INTO schema_migrations VALUES (1, 'initial', 0)`,
		`INSERT INTO selections (id, doc, state, created_at, expires_at) VALUES ('sel_old', '{"selection_id":"sel_old","state":"ready"}', 'ready', 1, 2)`,
		`INSERT INTO operations (id, selection_id, action_digest, mode, status, doc, created_at, updated_at)
			VALUES ('op_old', 'sel_old', 'sha256:a', 'execute', 'completed', '{"operation_id":"op_old","selection_id":"sel_old","status":"completed"}', 1, 1)`,
		`INSERT INTO approvals (id, selection_id, doc, created_at) VALUES ('apr_old', 'sel_old', '{"approval_id":"apr_old","selection_id":"sel_old"}', 1)`,
		`INSERT INTO audit (at, operation_id, selection_id, doc) VALUES (1, 'op_old', 'sel_old', '{"kind":"decision","event":"commit"}')`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("build a schema-1 database: %v", err)
		}
	}
	s := open(t, u)
	sel, err := s.Selection(ctx, "sel_old")
	if err != nil || sel.Principal.Subject != selection.SubjectUnrecorded {
		t.Fatalf("the schema-1 selection: %+v %v", sel, err)
	}
	op, err := s.Operation(ctx, "op_old")
	if err != nil || op.Principal.Subject != selection.SubjectUnrecorded {
		t.Fatalf("the schema-1 operation: %+v %v", op, err)
	}
	aps, err := s.Approvals(ctx, "sel_old")
	if err != nil || len(aps) != 1 || aps[0].Principal.Subject != selection.SubjectUnrecorded {
		t.Fatalf("the schema-1 approval: %+v %v", aps, err)
	}
	trail, err := s.AuditTrail(ctx, "op_old")
	if err != nil || len(trail) != 1 || trail[0].Principal.Subject != selection.SubjectUnrecorded {
		t.Fatalf("the schema-1 audit line: %+v %v", trail, err)
	}
}
