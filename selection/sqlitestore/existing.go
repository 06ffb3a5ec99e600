package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

// ErrNoStore is returned by OpenExisting and OpenReadOnly when there is no
// airlock store at the path.
var ErrNoStore = stored.ErrNoStore

// OpenExisting opens the store at path for an operator's command that
// records decisions (approve, review): unlike Open it never creates the
// file or its directory and never migrates the schema. A missing file, a
// file that holds no airlock store, and a store whose schema is not the
// one this airlock knows are refused, and left as they were.
func OpenExisting(ctx context.Context, path string) (*SQLite, error) {
	s, err := openExisting(ctx, path, false)
	if err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens the store at path as OpenExisting does, for reading
// only (audit): every write through it fails, and nothing of the file
// changes.
func OpenReadOnly(ctx context.Context, path string) (*SQLite, error) {
	return openExisting(ctx, path, true)
}

func openExisting(ctx context.Context, path string, readOnly bool) (*SQLite, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w at %s: the file does not exist", ErrNoStore, path)
	case err != nil:
		return nil, fmt.Errorf("open store: %w", err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%w at %s: not a file", ErrNoStore, path)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
	} else {
		// rw, not rwc: a file removed meanwhile is not recreated.
		q.Set("mode", "rw")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	dsn := "file:" + path + "?" + q.Encode()
	wdsn := dsn
	if !readOnly {
		wdsn += "&_txlock=immediate"
	}
	w, err := sql.Open("sqlite", wdsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	r.SetMaxOpenConns(4)
	s := &SQLite{w: w, r: r, path: path}
	if err := s.checkSchema(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// checkSchema accepts exactly the schema this airlock knows.
func (s *SQLite) checkSchema(ctx context.Context) error {
	var have int
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "not a database") {
			return fmt.Errorf("%w at %s: it has no airlock schema", ErrNoStore, s.path)
		}
		return fmt.Errorf("open store %s: %w", s.path, err)
	}
	return stored.ExistingSchema(s.path, have, SchemaVersion())
}
