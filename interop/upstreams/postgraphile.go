package upstreams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv names the PostgreSQL server that StartPostGraphile creates
// its database on, as a connection URL to an existing database; without
// it, postgres://postgres@127.0.0.1:5432/postgres (trust auth).
const PostgresEnv = "AIRLOCK_TEST_POSTGRES"

const defaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// PostGraphile is a running PostGraphile 4.14.1 over a fresh PostgreSQL
// database holding the seeded accounts in app.accounts, with a fault
// proxy in front of it. It has no credential and serves POST /graphql:
//
//	allAccounts(first:, after:, condition: {status:, team:, owner:, …}, orderBy: PRIMARY_KEY_ASC)
//	  { totalCount pageInfo { hasNextPage endCursor } nodes { … } edges { cursor node { … } } }
//	accountById(id:) { id name status team owner version updatedAt }
//	updateAccountById(input: {id:, accountPatch: {status:, team:, owner:}}) { account { … } }
//
// An account is {"id": 1, "name", "status", "team", "owner": null|""|"x",
// "version": 3, "updatedAt": "2026-01-05T09:37:00+00:00"}; every update
// bumps version and sets updatedAt (a trigger). A condition value of null
// selects IS NULL. Without first, a connection answers every row.
type PostGraphile struct {
	// URL is the fault proxy (point airlock at URL + "/graphql"); with no
	// fault set it forwards every request and answer unchanged.
	URL string
	// DirectURL is PostGraphile itself.
	DirectURL string
	// Database is the connection URL of the test's own database.
	Database string
	proxy    *graphQLProxy
}

// StartPostGraphile starts PostGraphile with DefaultAccounts accounts.
func StartPostGraphile(t testing.TB) *PostGraphile {
	t.Helper()
	return StartPostGraphileWith(t, SeedOptions{})
}

// StartPostGraphileWith creates a database with a unique name on the
// PostgreSQL server (see PostgresEnv), creates app.accounts and seeds the
// accounts the options draw, starts PostGraphile on a free loopback port
// (default mutations on, no watch, no GraphiQL) and the fault proxy in
// front of it. When the test ends it stops both and drops the database. A
// missing node, interop/node_modules/postgraphile or PostgreSQL skips (or
// fails under AIRLOCK_REQUIRE_INTEROP=1).
func StartPostGraphileWith(t testing.TB, opts SeedOptions) *PostGraphile {
	t.Helper()
	Enabled(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	cli := filepath.Join(interopDir(t), "node_modules", "postgraphile", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		missing(t, "interop/node_modules/postgraphile is missing; run `npm ci` in interop/")
	}
	opts = opts.withDefaults()
	started := time.Now()
	dsn := createDatabase(t)
	seedPostgres(t, dsn, seedRealAccounts(opts))
	direct, _ := startProcess(t, "postgraphile", t.TempDir(), func(port int) []string {
		return []string{node, cli, "--connection", dsn, "--schema", "app", "--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--disable-graphiql", "--disable-query-log"}
	}, answersGraphQL)
	proxy := &graphQLProxy{target: direct, pages: map[string]int{}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	p := &PostGraphile{URL: srv.URL, DirectURL: direct, Database: dsn, proxy: proxy}
	if n := len(p.Accounts(t)); n != opts.Accounts {
		t.Fatalf("PostgreSQL holds %d accounts, seeded %d", n, opts.Accounts)
	}
	t.Logf("PostGraphile 4.14.1: database created and seeded with %d accounts, server started, in %.1fs at %s (proxy %s)",
		opts.Accounts, time.Since(started).Seconds(), direct, srv.URL)
	return p
}

// answersGraphQL is PostGraphile's readiness probe: a trivial query
// answers 200.
func answersGraphQL(ctx context.Context, base string) bool {
	_, _, err := call(ctx, http.MethodPost, base+"/graphql", nil, map[string]any{"query": "{ __typename }"}, http.StatusOK)
	return err == nil
}

// adminDSN is the connection URL of the PostgreSQL server's existing
// database.
func adminDSN() string {
	if s := os.Getenv(PostgresEnv); s != "" {
		return s
	}
	return defaultPostgres
}

// createDatabase creates a database with a unique name and drops it when
// the test ends (after the server, registered later, has stopped). It
// returns its connection URL.
func createDatabase(t testing.TB) string {
	t.Helper()
	admin := adminDSN()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		missing(t, "PostgreSQL does not accept connections at %s (%v)", redactDSN(admin), err)
	}
	defer conn.Close(context.Background())
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	name := "airlock_real_pgl_" + hex.EncodeToString(suffix)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %q: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop database %q: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %q: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s is not a connection URL: %v", PostgresEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}

// redactDSN drops a password from a connection URL for messages.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable connection URL)"
	}
	return u.Redacted()
}

// accountsDDL is the schema PostGraphile reflects: one table in app, and
// the version trigger in app_private, which PostGraphile does not expose.
const accountsDDL = `
CREATE SCHEMA app;
CREATE SCHEMA app_private;
CREATE TABLE app.accounts (
	id serial PRIMARY KEY,
	name text NOT NULL,
	status text NOT NULL CHECK (status IN ('active', 'disabled', 'archived')),
	team text NOT NULL,
	owner text,
	version integer NOT NULL DEFAULT 1,
	updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE FUNCTION app_private.bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.version := OLD.version + 1;
	NEW.updated_at := clock_timestamp();
	RETURN NEW;
END
$$;
CREATE TRIGGER bump_version BEFORE UPDATE ON app.accounts
	FOR EACH ROW EXECUTE FUNCTION app_private.bump_version();
`

// seedPostgres creates the schema and copies the accounts in.
func seedPostgres(t testing.TB, dsn string, accounts []seedAccount) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, accountsDDL); err != nil {
		t.Fatalf("create app.accounts: %v", err)
	}
	rows := make([][]any, 0, len(accounts))
	for _, a := range accounts {
		rows = append(rows, []any{a.ID, a.Name, a.Status, a.Team, a.Owner, a.Version, a.UpdatedAt})
	}
	cols := []string{"id", "name", "status", "team", "owner", "version", "updated_at"}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"app", "accounts"}, cols, pgx.CopyFromRows(rows)); err != nil {
		t.Fatalf("seed app.accounts: %v", err)
	}
	if _, err := conn.Exec(ctx, `SELECT setval(pg_get_serial_sequence('app.accounts', 'id'), (SELECT max(id) FROM app.accounts))`); err != nil {
		t.Fatalf("move app.accounts' id sequence: %v", err)
	}
}

// Accounts is every account in app.accounts, by id, read with SQL and
// shaped as PostGraphile serves it (camelCase keys, numbers as float64).
func (p *PostGraphile) Accounts(t testing.TB) []Record {
	t.Helper()
	return p.query(t, "")
}

// Account is one account read with SQL (false when there is none).
func (p *PostGraphile) Account(t testing.TB, id int) (Record, bool) {
	t.Helper()
	recs := p.query(t, "WHERE id = $1", id)
	if len(recs) == 0 {
		return nil, false
	}
	return recs[0], true
}

func (p *PostGraphile) query(t testing.TB, where string, args ...any) []Record {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, p.Database)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(context.Background())
	// updated_at through to_json: PostgreSQL's own JSON form, which is
	// what PostGraphile serves.
	rows, err := conn.Query(ctx, `SELECT id, name, status, team, owner, version, to_json(updated_at) #>> '{}'
		FROM app.accounts `+where+` ORDER BY id`, args...)
	if err != nil {
		t.Fatalf("read app.accounts: %v", err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		var (
			id, version               int64
			name, status, team, stamp string
			owner                     *string
		)
		if err := rows.Scan(&id, &name, &status, &team, &owner, &version, &stamp); err != nil {
			t.Fatalf("read app.accounts: %v", err)
		}
		r := Record{"id": float64(id), "name": name, "status": status, "team": team, "owner": nil,
			"version": float64(version), "updatedAt": stamp}
		if owner != nil {
			r["owner"] = *owner
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read app.accounts: %v", err)
	}
	return out
}

// Update changes an account with SQL, behind PostGraphile's back (the
// trigger bumps its version). fields may set name, status, team and owner
// (nil for NULL). It fails the test when no account has the id.
func (p *PostGraphile) Update(t testing.TB, id int, fields map[string]any) {
	t.Helper()
	var (
		sets []string
		args = []any{id}
	)
	for _, col := range []string{"name", "status", "team", "owner"} {
		if v, ok := fields[col]; ok {
			args = append(args, v)
			sets = append(sets, fmt.Sprintf("%s = $%d", col, len(args)))
		}
	}
	if len(sets) != len(fields) || len(sets) == 0 {
		t.Fatalf("update account %d: %v; only name, status, team and owner can be set", id, fields)
	}
	conn, err := pgx.Connect(t.Context(), p.Database)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(context.Background())
	tag, err := conn.Exec(t.Context(), "UPDATE app.accounts SET "+strings.Join(sets, ", ")+" WHERE id = $1", args...)
	if err != nil {
		t.Fatalf("update account %d: %v", id, err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("update account %d: no such account", id)
	}
}

// Query posts a GraphQL request through the fault proxy, as airlock
// would, and returns whatever it answers.
func (p *PostGraphile) Query(t testing.TB, query string, variables map[string]any) Response {
	t.Helper()
	return send(t, http.MethodPost, p.URL+"/graphql", graphQLBody(query, variables))
}

// QueryDirect posts a GraphQL request to PostGraphile itself.
func (p *PostGraphile) QueryDirect(t testing.TB, query string, variables map[string]any) Response {
	t.Helper()
	return send(t, http.MethodPost, p.DirectURL+"/graphql", graphQLBody(query, variables))
}

func graphQLBody(query string, variables map[string]any) map[string]any {
	body := map[string]any{"query": query}
	if variables != nil {
		body["variables"] = variables
	}
	return body
}

// SetFaults sets every knob of the fault proxy at once and counts anew;
// GraphQLFaults{} turns them off.
func (p *PostGraphile) SetFaults(f GraphQLFaults) { p.proxy.set(f) }

// ProxyStats counts what the proxy did since the last SetFaults.
func (p *PostGraphile) ProxyStats() GraphQLProxyStats { return p.proxy.stats() }
