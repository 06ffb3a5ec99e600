package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// groupWrite is one Journal or Audit call: its statements run in a shared
// transaction, inside a savepoint of their own, and done receives the
// call's result once the transaction is committed.
type groupWrite struct {
	what string
	fn   func(tx *sql.Tx) error
	done chan error
}

// maxGroup bounds the calls one transaction commits.
const maxGroup = 64

// errClosed is what a write to a closed store returns.
var errClosed = errors.New("store closed")

// write runs fn in the next group transaction and returns when that
// transaction is committed (or fn failed, leaving nothing behind). A
// caller whose context is already done gets its error and writes
// nothing; once queued, the write completes whatever the context does,
// so that the answer is always what happened.
func (s *SQLite) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	done := make(chan error, 1)
	if err := s.group.Send(groupWrite{what: what, fn: fn, done: done}); err != nil {
		return fmt.Errorf("%s: %w", what, errClosed)
	}
	err := <-done
	if p, ok := err.(callPanic); ok {
		// A call that panics panics in its caller, as it did before
		// writes were grouped.
		panic(p.v)
	}
	return err
}

// callPanic carries a call's panic back to its caller.
type callPanic struct{ v any }

func (p callPanic) Error() string { return fmt.Sprint("panic: ", p.v) }

// run runs one call's statements, turning a panic into a callPanic.
func (g groupWrite) run(tx *sql.Tx) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = callPanic{v}
		}
	}()
	return g.fn(tx)
}

// Queued writes are committed by a batch.Queue whose consumer is
// commitGroup: it takes every call waiting (up to maxGroup) into one
// transaction, each call in its own savepoint so that a failing call leaves
// nothing behind and does not fail the others. A commit costs the same for
// one call as for many, so concurrent writers (a commit's journal and its
// audit of every request) share them.

// commitGroup commits one batch, the whole batch again while another
// process holds the database busy.
func (s *SQLite) commitGroup(batch []groupWrite) error {
	var errs []error
	var err error
	_ = retry(context.Background(), func() error {
		errs, err = s.tryGroup(batch)
		return err
	})
	if err != nil {
		s.failGroup(batch, err)
		return nil // each call has its own answer
	}
	for i, g := range batch {
		g.done <- errs[i]
	}
	return nil
}

// tryGroup runs the batch in one transaction: the calls' own results, or
// the error that failed the whole transaction (nothing was committed).
func (s *SQLite) tryGroup(batch []groupWrite) ([]error, error) {
	// Statements never see a caller's context: a cancelled statement
	// would roll back the whole transaction, other calls included.
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	errs := make([]error, len(batch))
	if len(batch) == 1 {
		if errs[0] = batch[0].run(tx); errs[0] != nil {
			if isBusy(errs[0]) {
				return nil, errs[0]
			}
			return errs, nil
		}
	} else {
		for i, g := range batch {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT call`); err != nil {
				return nil, err
			}
			if errs[i] = g.run(tx); errs[i] != nil {
				if isBusy(errs[i]) {
					return nil, errs[i]
				}
				if _, err := tx.ExecContext(ctx, `ROLLBACK TO call`); err != nil {
					return nil, err
				}
			}
			if _, err := tx.ExecContext(ctx, `RELEASE call`); err != nil {
				return nil, err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return errs, nil
}

func (s *SQLite) failGroup(batch []groupWrite, err error) {
	for _, g := range batch {
		g.done <- fmt.Errorf("%s: %w", g.what, err)
	}
}
