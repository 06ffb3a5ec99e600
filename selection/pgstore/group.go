package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/internal/batch"
	"github.com/airlock-mcp/airlock/selection/internal/stored"
)

// Journal and Audit calls are committed in groups: every call that arrives
// while the previous group's commit is in flight goes into the next group,
// one transaction with one commit. A commit costs the same for one call as
// for many (on most disks, a WAL flush), so concurrent operations, and an
// operation's journal and the audit of its calls, share them.
//
// A group holding an intent (an entry that announces a write) commits
// synchronously: no caller in it returns before every intent in it is
// durable. A group of outcomes and audit lines only commits
// asynchronously (asyncCommit).
//
// Each call keeps its own answer. Every journal call is fenced by its
// lease: the epochs of the group's operations are read under a share lock
// before any entry is written, and a call whose epoch moved (or whose
// operation or target does not exist) is refused. The group is then rolled
// back and committed again without the refused calls, so that a refused
// call leaves nothing and does not fail the others. A group whose
// transaction fails (the database refused a statement, the connection
// broke, the commit failed) fails every call in it: nothing of it was
// committed.

// groupCall is one Journal or Audit call waiting for its group.
type groupCall struct {
	what    string // "journal" or "audit"
	lease   selection.Lease
	entries []selection.Target
	docs    []string // the entries' encoded documents
	events  []selection.AuditEvent
	done    chan error
}

// maxGroup bounds the calls one transaction commits.
const maxGroup = 64

// errClosed is what a write to a closed store returns.
var errClosed = errors.New("store closed")

// newStore starts the group commit of a store on pool.
func newStore(pool *pgxpool.Pool, name string) *Postgres {
	s := &Postgres{pool: pool, name: name}
	s.group = batch.New(batch.Options{Depth: maxGroup, Merge: maxGroup}, s.commitGroup)
	return s
}

// write queues c for the next group and returns its answer once that group
// is committed (or c was refused, leaving nothing behind). A caller whose
// context is already done gets its error and writes nothing; once queued,
// the call completes whatever the context does, so that the answer is
// always what happened.
func (s *Postgres) write(ctx context.Context, c groupCall) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", c.what, err)
	}
	c.done = make(chan error, 1)
	if err := s.group.Send(c); err != nil {
		return fmt.Errorf("%s: %w", c.what, errClosed)
	}
	return <-c.done
}

// commitGroup commits one group: again without the calls their checks
// refused, until what is left commits or nothing is left.
func (s *Postgres) commitGroup(calls []groupCall) error {
	for len(calls) > 0 {
		refused, err := s.tryGroup(calls)
		if err != nil {
			for _, c := range calls {
				c.done <- fmt.Errorf("%s: %w", c.what, err)
			}
			return nil // each call has its own answer
		}
		rest := calls[:0:0]
		for i, c := range calls {
			switch {
			case refused == nil:
				c.done <- nil
			case refused[i] != nil:
				c.done <- fmt.Errorf("%s: %w", c.what, refused[i])
			default:
				rest = append(rest, c)
			}
		}
		calls = rest
		if refused == nil {
			break
		}
	}
	return nil
}

// tryGroup runs calls in one transaction, all its statements sent at once
// after the BEGIN that opens it, and commits it when no call was refused.
// refused is nil when the group was committed; otherwise it holds, by
// call, why the call was refused (nil for the calls that were not), and
// the transaction was rolled back. err says the group failed as a whole:
// nothing of it was committed.
func (s *Postgres) tryGroup(calls []groupCall) (refused []error, err error) {
	// Statements never see a caller's context: a cancelled statement
	// would roll back the whole group, other callers included.
	ctx := context.Background()
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	intent := false
	var ops []string
	for _, c := range calls {
		if c.what != "journal" {
			continue
		}
		intent = intent || hasIntent(c.entries)
		if !slices.Contains(ops, c.lease.OperationID) {
			ops = append(ops, c.lease.OperationID)
		}
	}
	if !intent {
		b.Queue(asyncCommit)
	}
	if len(ops) > 0 {
		// In id order, so that two groups lock the same operations in
		// the same order.
		slices.Sort(ops)
		b.Queue(`SELECT id, lease_epoch FROM operations WHERE id = ANY($1) ORDER BY id FOR SHARE`, ops)
	}
	for _, c := range calls {
		for i, t := range c.entries {
			b.Queue(`UPDATE targets SET outcome = $1, version = $2, doc = $3 WHERE operation_id = $4 AND id = $5`,
				t.Outcome, t.Version, c.docs[i], c.lease.OperationID, t.ID)
		}
		for _, e := range c.events {
			subject, clientID := stored.PrincipalColumns(e.Principal)
			b.Queue(`INSERT INTO audit (at, operation_id, selection_id, doc, subject, client_id) VALUES ($1, $2, $3, $4, $5, $6)`,
				e.At.UnixNano(), e.OperationID, e.SelectionID, stored.Encode(e), subject, clientID)
		}
	}
	br := s.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer func() { _ = tx.Rollback(ctx) }()
	refused, err = readGroup(br, calls, !intent, len(ops) > 0)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil || refused != nil {
		return refused, err
	}
	return nil, tx.Commit(ctx)
}

// readGroup reads a group's results in the order tryGroup queued them and
// says which calls their checks refused (nil when none was).
func readGroup(br pgx.BatchResults, calls []groupCall, async, fenced bool) ([]error, error) {
	if _, err := br.Exec(); err != nil { // BEGIN
		return nil, err
	}
	if async {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	epochs := map[string]int64{}
	if fenced {
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var epoch int64
			if err := rows.Scan(&id, &epoch); err != nil {
				rows.Close()
				return nil, err
			}
			epochs[id] = epoch
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	var refused []error
	refuse := func(i int, err error) {
		if refused == nil {
			refused = make([]error, len(calls))
		}
		if refused[i] == nil {
			refused[i] = err
		}
	}
	for i, c := range calls {
		if c.what == "journal" {
			switch epoch, ok := epochs[c.lease.OperationID]; {
			case !ok:
				refuse(i, fmt.Errorf("operation %q: %w", c.lease.OperationID, selection.ErrNotFound))
			case epoch != c.lease.Epoch:
				refuse(i, selection.ErrLeaseLost)
			}
		}
		for _, t := range c.entries {
			ct, err := br.Exec()
			if err != nil {
				return nil, fmt.Errorf("%q: %w", t.ID, err)
			}
			if ct.RowsAffected() == 0 {
				refuse(i, fmt.Errorf("%q: %w", t.ID, selection.ErrNotFound))
			}
		}
		for range c.events {
			if _, err := br.Exec(); err != nil {
				return nil, err
			}
		}
	}
	return refused, nil
}
