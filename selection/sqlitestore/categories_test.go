package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/selection/storetest"
)

// TestMetaRows_MoveToTheirTables: a store that kept approved group values
// and used approval nonces in meta gets them in their own tables on open:
// the values read back as approved and the nonces as used, and meta no
// longer holds them; a row whose value is not a JSON list stays unread.
func TestMetaRows_MoveToTheirTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	openSQLite(t, path).Close()
	db := rawDB(t, path)
	// Back to the schema before the tables, with what it kept in meta.
	for _, q := range []string{
		`DROP TABLE approved_categories`, `DROP TABLE used_nonces`,
		`DELETE FROM schema_migrations WHERE version >= 5`,
		`ALTER TABLE records DROP COLUMN frame`, `ALTER TABLE targets DROP COLUMN frame`,
		`INSERT INTO meta (key, value) VALUES ('seen/pause_collection/region', CAST('["\"eu\"","\"us\""]' AS BLOB))`,
		`INSERT INTO meta (key, value) VALUES ('seen/pause_collection/plan', CAST('["null","{\"tier\":1}"]' AS BLOB))`,
		`INSERT INTO meta (key, value) VALUES ('seen/cancel/region', CAST('not json' AS BLOB))`,
		`INSERT INTO meta (key, value) VALUES ('seen/cancel/owner', CAST('{"a":"b"}' AS BLOB))`,
		`INSERT INTO meta (key, value) VALUES ('elicitation_used/6f1c', CAST('req_first' AS BLOB))`,
		`INSERT INTO meta (key, value) VALUES ('task/t1', CAST('{}' AS BLOB))`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s := openSQLite(t, path)
	if v := sqlitestore.SchemaVersion(); v < 5 {
		t.Fatalf("schema version %d; this test rolls back migration 5", v)
	}
	storetest.MetaRowsMoved(t, s)
}
