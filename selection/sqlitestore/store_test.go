package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/selection/storetest"
)

func openSQLite(t *testing.T, path string) *sqlitestore.SQLite {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSQLiteStoreContract(t *testing.T) {
	storetest.Run(t, storetest.Opener{
		Open: func(t *testing.T) selection.Store {
			return openSQLite(t, filepath.Join(t.TempDir(), "airlock.db"))
		},
		Reopen: func(t *testing.T, s selection.Store) selection.Store {
			path := s.(*sqlitestore.SQLite).Path()
			s.Close()
			return openSQLite(t, path)
		},
	})
}
