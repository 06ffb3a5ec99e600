package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
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
		`DELETE FROM schema_migrations WHERE version = 5`,
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
	if v := sqlitestore.SchemaVersion(); v != 5 {
		t.Fatalf("schema version %d; this test rolls back migration 5", v)
	}
	ctx := context.Background()
	region, err := s.ApprovedCategories(ctx, "pause_collection", "region")
	if err != nil || len(region) != 2 || !region[`"eu"`] || !region[`"us"`] {
		t.Fatalf("approved regions: %v %v", region, err)
	}
	plan, err := s.ApprovedCategories(ctx, "pause_collection", "plan")
	if err != nil || len(plan) != 2 || !plan["null"] || !plan[`{"tier":1}`] {
		t.Fatalf("approved plans: %v %v", plan, err)
	}
	if _, err := s.Meta(ctx, "seen/pause_collection/region"); !errors.Is(err, selection.ErrNotFound) {
		t.Fatalf("the moved list is still in meta: %v", err)
	}
	if v, err := s.Meta(ctx, "seen/cancel/region"); err != nil || string(v) != "not json" {
		t.Fatalf("a row that is not a list: %q %v; want it left as it was", v, err)
	}
	if v, err := s.Meta(ctx, "seen/cancel/owner"); err != nil || string(v) != `{"a":"b"}` {
		t.Fatalf("a row that is not a list: %q %v; want it left as it was", v, err)
	}
	if other, err := s.ApprovedCategories(ctx, "cancel", "owner"); err != nil || len(other) != 0 {
		t.Fatalf("values read from a row that is not a list: %v %v", other, err)
	}
	if v, err := s.Meta(ctx, "task/t1"); err != nil || string(v) != "{}" {
		t.Fatalf("another meta row: %q %v", v, err)
	}
	now := time.Now()
	if first, err := s.UseNonce(ctx, "6f1c", "req_replay", now.Add(time.Hour), now); err != nil || first != "req_first" {
		t.Fatalf("a nonce used before the move: %q %v; want req_first", first, err)
	}
	if first, err := s.UseNonce(ctx, "6f1c", "req_later", now.Add(3*24*time.Hour), now.Add(2*24*time.Hour)); err != nil || first != "req_later" {
		t.Fatalf("a moved nonce two days later: %q %v; want it dropped", first, err)
	}
}
