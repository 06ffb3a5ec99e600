package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
)

// openStore opens the SQLite store at path (the default under the user's
// state directory when empty).
func openStore(ctx context.Context, path string) (*selection.SQLite, error) {
	if path == "" {
		p, err := selection.DefaultStorePath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	return selection.OpenSQLite(ctx, path)
}

// lockStore takes an exclusive lock next to the store so that one server
// owns it: recovery marks the operations it finds running as interrupted,
// which is only right when no other server is running them.
func lockStore(path string) (func(), error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock store: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another airlock server is using the store %s", path)
		}
		return nil, fmt.Errorf("lock store: %w", err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// attachStore opens and locks the store, wires it into the tools and
// recovers operations a previous process left running.
func attachStore(ctx, background context.Context, deps *tools.Deps, path string, logger *slog.Logger) (func(), error) {
	st, err := openStore(ctx, path)
	if err != nil {
		return nil, err
	}
	unlock, err := lockStore(st.Path())
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := deps.UseStore(ctx, background, st); err != nil {
		unlock()
		st.Close()
		return nil, err
	}
	ids, err := deps.Engine.Recover(ctx)
	if err != nil {
		unlock()
		st.Close()
		return nil, fmt.Errorf("recover operations: %w", err)
	}
	for _, id := range ids {
		logger.Warn("operation interrupted by a previous stop; resume it with commit_bulk_action resume: true", "operation_id", id)
	}
	logger.Info("store", "path", st.Path())
	return func() {
		deps.Engine.Wait()
		unlock()
		st.Close()
	}, nil
}
