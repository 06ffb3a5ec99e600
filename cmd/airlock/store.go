package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/pgstore"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/tools"
)

// The environment that configures the store and what replicas share.
const (
	// envStore names the store when --store is not given: a SQLite file or
	// a postgres:// URL.
	envStore = "AIRLOCK_STORE"
	// envSecret (or the file named by envSecretFile) is the secret every
	// signing key derives from: cursors, elicitation state, the review
	// page's form tokens. Replicas given the same secret accept each
	// other's cursors; without it the keys are kept in the store.
	envSecret     = "AIRLOCK_SECRET"
	envSecretFile = "AIRLOCK_SECRET_FILE"
	// envLeaseTTL is how long a running operation's lease lasts without
	// renewal (a Go duration, default 30s).
	envLeaseTTL = "AIRLOCK_LEASE_TTL"
	// envShutdownGrace is the default of serve --shutdown-grace.
	envShutdownGrace = "AIRLOCK_SHUTDOWN_GRACE"
)

// defaultShutdownGrace is how long a stopping server waits for its running
// operations before it cancels them.
const defaultShutdownGrace = 30 * time.Second

// isPostgres reports a PostgreSQL URL.
func isPostgres(spec string) bool {
	return strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://")
}

// openStore opens the store spec names: a postgres:// URL, or the path of a
// SQLite file; empty means $AIRLOCK_STORE, else the SQLite file under the
// user's state directory.
func openStore(ctx context.Context, spec string) (selection.Store, error) {
	if spec == "" {
		spec = os.Getenv(envStore)
	}
	if isPostgres(spec) {
		return pgstore.Open(ctx, spec)
	}
	if spec == "" {
		p, err := sqlitestore.DefaultPath()
		if err != nil {
			return nil, err
		}
		spec = p
	}
	return sqlitestore.Open(ctx, spec)
}

// openOperatorStore opens, for an operator's command, the store spec names
// (as openStore resolves it) without ever creating or migrating one:
// readOnly for audit, read-write for approve and review, which record
// decisions.
func openOperatorStore(ctx context.Context, spec string, readOnly bool) (selection.Store, error) {
	if spec == "" {
		spec = os.Getenv(envStore)
	}
	var st selection.Store
	var err error
	switch {
	case isPostgres(spec) && readOnly:
		st, err = pgstore.OpenReadOnly(ctx, spec)
	case isPostgres(spec):
		st, err = pgstore.OpenExisting(ctx, spec)
	default:
		if spec == "" {
			if spec, err = sqlitestore.DefaultPath(); err != nil {
				return nil, err
			}
		}
		if readOnly {
			st, err = sqlitestore.OpenReadOnly(ctx, spec)
		} else {
			st, err = sqlitestore.OpenExisting(ctx, spec)
		}
	}
	if errors.Is(err, sqlitestore.ErrNoStore) || errors.Is(err, pgstore.ErrNoStore) {
		return nil, fmt.Errorf("%w; give the --store the server uses (or set %s)", err, envStore)
	}
	return st, err
}

// storeName names a store in messages: its file, or its URL without the
// password.
func storeName(st selection.Store) string {
	if s, ok := st.(fmt.Stringer); ok {
		return s.String()
	}
	return "the store"
}

// sharedSecret reads the secret the signing keys derive from, if any.
func sharedSecret() ([]byte, error) {
	if v := os.Getenv(envSecret); v != "" {
		if len(v) < 32 {
			return nil, fmt.Errorf("%s must hold at least 32 characters", envSecret)
		}
		return []byte(v), nil
	}
	path := os.Getenv(envSecretFile)
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envSecretFile, err)
	}
	b = []byte(strings.TrimSpace(string(b)))
	if len(b) < 32 {
		return nil, fmt.Errorf("%s: the secret must hold at least 32 characters", envSecretFile)
	}
	return b, nil
}

// leaseTTL reads the lease duration from the environment.
func leaseTTL() (time.Duration, error) {
	v := os.Getenv(envLeaseTTL)
	if v == "" {
		return selection.DefaultLeaseTTL, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 300*time.Millisecond {
		return 0, fmt.Errorf("%s=%q: want a duration of at least 300ms, such as 30s", envLeaseTTL, v)
	}
	return d, nil
}

// withStore completes c for a store: the shared secret the signing keys
// derive from and the lease duration, from the environment.
func withStore(c tools.Config, st selection.Store) (tools.Config, error) {
	secret, err := sharedSecret()
	if err != nil {
		return c, err
	}
	ttl, err := leaseTTL()
	if err != nil {
		return c, err
	}
	c.Store, c.Secret, c.LeaseTTL = st, secret, ttl
	return c, nil
}

// attachStore opens the store, builds the tools on it (c, completed by
// withStore) and keeps taking over the operations whose lease expired
// (their process stopped): any number of servers may share one store.
// Operations run in c.Background.
//
// The function it returns closes the store: it stops taking operations
// over, gives those running in background the grace period to finish, then
// calls cancelRuns (background's cancel) and waits for them to stop. A
// cancelled run leaves each target it did not finish pending (not sent) or
// unknown (sent, its answer not observed) and records no end: once its
// lease expires, another process, or this one restarted, takes the
// operation over, re-reads the unknown targets and sends the pending ones.
// With cancelRuns nil it waits however long they take.
func attachStore(ctx context.Context, c tools.Config, spec string, logger *slog.Logger) (*tools.Deps, func(grace time.Duration, cancelRuns func()), error) {
	st, err := openStore(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	if c, err = withStore(c, st); err != nil {
		st.Close()
		return nil, nil, err
	}
	deps, err := tools.New(ctx, c)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	background := c.Background
	if background == nil {
		background = context.Background()
	}
	watch, stopWatch := context.WithCancel(background)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		deps.Engine.Watch(watch, 0)
	}()
	logger.Info("store", "store", storeName(st), "lease_ttl", deps.Engine.LeaseTTL.String())
	return deps, func(grace time.Duration, cancelRuns func()) {
		stopWatch()
		<-watching
		if cancelRuns != nil {
			drain(deps.Engine, grace, cancelRuns, logger)
		}
		deps.Engine.Wait()
		st.Close()
	}, nil
}

// drain waits for the operations running in this process to finish, for
// the grace period at most, then cancels them.
func drain(e *selection.Engine, grace time.Duration, cancelRuns func(), logger *slog.Logger) {
	done := make(chan struct{})
	go func() {
		e.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	default:
	}
	logger.Info("stopping: waiting for the running operations to finish", "grace", grace.String())
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	logger.Warn("stopping: operations still running after the grace period are cancelled; a takeover finishes them once their leases expire",
		"grace", grace.String())
	cancelRuns()
	<-done
}

// shutdownGrace reads --shutdown-grace (or its environment default).
func shutdownGrace(v string) (time.Duration, error) {
	if v == "" {
		return defaultShutdownGrace, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, usagef("--shutdown-grace %q: want a duration such as 30s", v)
	}
	return d, nil
}
