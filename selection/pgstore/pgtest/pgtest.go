// Package pgtest gives tests a PostgreSQL database of their own: the
// server named by AIRLOCK_TEST_POSTGRES, a database with a random name,
// dropped when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the server's URL (for example
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable).
const Env = "AIRLOCK_TEST_POSTGRES"

// Database creates a database for the test and returns its URL. Without
// AIRLOCK_TEST_POSTGRES the test is skipped, or fails when
// AIRLOCK_REQUIRE_INTEROP=1 (CI).
func Database(t testing.TB) string {
	t.Helper()
	server := os.Getenv(Env)
	if server == "" {
		if os.Getenv("AIRLOCK_REQUIRE_INTEROP") == "1" {
			t.Fatalf("%s is not set: PostgreSQL tests cannot run", Env)
		}
		t.Skipf("%s is not set: set it to a PostgreSQL server's URL to run the PostgreSQL tests", Env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	defer admin.Close(context.Background())
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "airlock_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
