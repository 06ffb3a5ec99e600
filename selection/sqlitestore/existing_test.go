package sqlitestore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/selection/sqlitestore"
)

type opener func(context.Context, string) (*sqlitestore.SQLite, error)

var operatorOpens = map[string]opener{"OpenExisting": sqlitestore.OpenExisting, "OpenReadOnly": sqlitestore.OpenReadOnly}

// TestOperatorOpen_NeverCreatesAStore: a mistyped path is refused, and no
// file or directory appears.
func TestOperatorOpen_NeverCreatesAStore(t *testing.T) {
	for name, open := range operatorOpens {
		dir := t.TempDir()
		for _, path := range []string{filepath.Join(dir, "typo"), filepath.Join(dir, "missing", "airlock.db")} {
			s, err := open(context.Background(), path)
			if !errors.Is(err, sqlitestore.ErrNoStore) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s(%s): %v, want ErrNoStore naming the path", name, path, err)
			}
			if s != nil {
				s.Close()
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s created %d entries in %s", name, len(entries), dir)
		}
	}
}

// TestOperatorOpen_RefusesAFileThatIsNotAStore: an empty file (which SQLite
// would take for an empty database) and a text file are refused unchanged.
func TestOperatorOpen_RefusesAFileThatIsNotAStore(t *testing.T) {
	for name, open := range operatorOpens {
		for what, content := range map[string][]byte{"empty": nil, "text": []byte("environment: prod\n")} {
			path := filepath.Join(t.TempDir(), what)
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := open(context.Background(), path); !errors.Is(err, sqlitestore.ErrNoStore) {
				t.Errorf("%s of a %s file: %v, want ErrNoStore", name, what, err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, content) {
				t.Errorf("%s changed a %s file: %q", name, what, got)
			}
		}
	}
}

// TestOpenReadOnly_ReadsAndNeverWrites: the audit's open reads what the
// server stored, refuses every write, and leaves the file's bytes alone.
func TestOpenReadOnly_ReadsAndNeverWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "airlock.db")
	s := openSQLite(t, path)
	if err := s.SetMeta(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, _ := os.ReadFile(path)

	ro, err := sqlitestore.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if v, err := ro.Meta(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("read through the read-only open: %q %v", v, err)
	}
	if err := ro.SetMeta(ctx, "k", []byte("changed")); err == nil {
		t.Fatal("a write through the read-only open succeeded")
	}
	ro.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the read-only open changed the store's file")
	}
}

// TestOpenExisting_WritesToAServersStore: approve and review record
// decisions in the store the server created.
func TestOpenExisting_WritesToAServersStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "airlock.db")
	openSQLite(t, path).Close()
	s, err := sqlitestore.OpenExisting(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetMeta(ctx, "decided", []byte("yes")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Meta(ctx, "decided"); err != nil || string(v) != "yes" {
		t.Fatalf("read back: %q %v", v, err)
	}
}

// TestOperatorOpen_RefusesAnotherSchemaVersion: only a server migrates a
// store; an operator's command refuses a store older or newer than it.
func TestOperatorOpen_RefusesAnotherSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	openSQLite(t, path).Close()
	db := rawDB(t, path)
	if _, err := db.Exec(`DELETE FROM schema_migrations WHERE version = (SELECT MAX(version) FROM schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	for name, open := range operatorOpens {
		if _, err := open(context.Background(), path); err == nil || !strings.Contains(err.Error(), "older than this airlock's") {
			t.Errorf("%s of an older store: %v", name, err)
		}
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'a', 0), (?, 'from_the_future', 0)`,
		sqlitestore.SchemaVersion(), sqlitestore.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	for name, open := range operatorOpens {
		if _, err := open(context.Background(), path); err == nil || !strings.Contains(err.Error(), "newer than this airlock knows") {
			t.Errorf("%s of a newer store: %v", name, err)
		}
	}
}
