package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/selection/pgstore"
	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
)

// TestOperatorOpen_RefusesADatabaseWithoutAStore: an operator's command
// pointed at the wrong database creates no table in it.
func TestOperatorOpen_RefusesADatabaseWithoutAStore(t *testing.T) {
	u := pgtest.Database(t)
	ctx := context.Background()
	for name, open := range map[string]func(context.Context, string) (*pgstore.Postgres, error){
		"OpenExisting": pgstore.OpenExisting, "OpenReadOnly": pgstore.OpenReadOnly,
	} {
		if _, err := open(ctx, u); !errors.Is(err, pgstore.ErrNoStore) {
			t.Errorf("%s of an empty database: %v, want ErrNoStore", name, err)
		}
	}
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var tables int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("%d tables in the database after the refusals (%v)", tables, err)
	}
}

// TestOpenReadOnly_ReadsAndNeverWrites: the audit's open reads what the
// server stored and refuses every write; OpenExisting may write.
func TestOpenReadOnly_ReadsAndNeverWrites(t *testing.T) {
	u := pgtest.Database(t)
	ctx := context.Background()
	s := open(t, u)
	if err := s.SetMeta(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	ro, err := pgstore.OpenReadOnly(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if v, err := ro.Meta(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("read: %q %v", v, err)
	}
	if err := ro.SetMeta(ctx, "k", []byte("changed")); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a write through the read-only open: %v", err)
	}
	rw, err := pgstore.OpenExisting(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if err := rw.SetMeta(ctx, "k", []byte("decided")); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Meta(ctx, "k"); string(v) != "decided" {
		t.Fatalf("the server reads %q", v)
	}
}
