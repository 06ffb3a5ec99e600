package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/selection/pgstore"
	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
	"github.com/airlock-mcp/airlock/selection/storetest"
)

// TestPostgresMetaRows_MoveToTheirTables: a database that kept approved
// group values and used approval nonces in meta gets them in their own
// tables on open: the values read back as approved and the nonces as
// used, and meta no longer holds them; a row whose value is not a JSON
// list stays unread.
func TestPostgresMetaRows_MoveToTheirTables(t *testing.T) {
	u := pgtest.Database(t)
	open(t, u).Close()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// Back to the schema before the tables, with what it kept in meta.
	for _, q := range []string{
		`DROP TABLE approved_categories`, `DROP TABLE used_nonces`,
		`DELETE FROM schema_migrations WHERE version >= 3`,
		`ALTER TABLE records DROP COLUMN frame`, `ALTER TABLE targets DROP COLUMN frame`,
		`INSERT INTO meta (key, value) VALUES ('seen/pause_collection/region', convert_to('["\"eu\"","\"us\""]', 'UTF8'))`,
		`INSERT INTO meta (key, value) VALUES ('seen/pause_collection/plan', convert_to('["null","{\"tier\":1}"]', 'UTF8'))`,
		`INSERT INTO meta (key, value) VALUES ('seen/cancel/region', convert_to('not json', 'UTF8'))`,
		`INSERT INTO meta (key, value) VALUES ('seen/cancel/owner', convert_to('{"a":"b"}', 'UTF8'))`,
		`INSERT INTO meta (key, value) VALUES ('elicitation_used/6f1c', convert_to('req_first', 'UTF8'))`,
		`INSERT INTO meta (key, value) VALUES ('task/t1', convert_to('{}', 'UTF8'))`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s := open(t, u)
	if v := pgstore.SchemaVersion(); v < 3 {
		t.Fatalf("schema version %d; this test rolls back migration 3", v)
	}
	storetest.MetaRowsMoved(t, s)
}
