package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/pgstore"
	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
	"github.com/airlock-mcp/airlock/selection/storetest"
)

func open(t *testing.T, url string) *pgstore.Postgres {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPostgresStoreContract(t *testing.T) {
	urls := map[selection.Store]string{}
	storetest.Run(t, storetest.Opener{
		Open: func(t *testing.T) selection.Store {
			u := pgtest.Database(t)
			s := open(t, u)
			urls[s] = u
			return s
		},
		Reopen: func(t *testing.T, s selection.Store) selection.Store {
			u := urls[s]
			s.Close()
			return open(t, u)
		},
	})
}

// TestPostgresAuditIsAppendOnly: no client of the database, airlock or
// another, can change or remove a line of the audit trail.
func TestPostgresAuditIsAppendOnly(t *testing.T) {
	u := pgtest.Database(t)
	s := open(t, u)
	ctx := context.Background()
	if err := s.Audit(ctx, []selection.AuditEvent{{Kind: selection.AuditDecision, Event: "approved"}}); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{`UPDATE audit SET doc = '{}'`, `DELETE FROM audit`, `TRUNCATE audit`} {
		if _, err := c.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only refusal", q, err)
		}
	}
}

// TestPostgresNewerSchemaIsRefused: a database migrated by a newer airlock
// is refused with a message that says so, and left as it is.
func TestPostgresNewerSchemaIsRefused(t *testing.T) {
	u := pgtest.Database(t)
	s := open(t, u)
	s.Close()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	next := pgstore.SchemaVersion() + 1
	if _, err := c.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'from_the_future', 0)`, next); err != nil {
		t.Fatal(err)
	}
	_, err = pgstore.Open(ctx, u)
	if err == nil || !strings.Contains(err.Error(), "newer than this airlock knows") || !strings.Contains(err.Error(), "upgrade airlock") {
		t.Fatalf("opening a newer schema: %v", err)
	}
	var have int
	if err := c.QueryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&have); err != nil || have != next {
		t.Fatalf("the refused store was changed: version %d %v", have, err)
	}
}
