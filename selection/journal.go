package selection

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-mcp/airlock/selection/internal/batch"
)

// journal writes target transitions through the store with group commit:
// concurrent writers' entries share one transaction. An intent is durable
// before write returns; an outcome may be queued (it is flushed before the
// operation reports its final status). The audit records of the
// operation's external calls are queued the same way, so that a worker
// never waits for the audit trail between two targets.
type journal struct {
	store Store
	fence *fence
	audit func([]AuditEvent)
	// onLost, when set, is called when a write finds the lease lost or
	// about to expire, before the write's error is returned.
	onLost func()
	// observe, when set, is told of each store write and how long it took.
	observe func(entries []Target, took time.Duration, err error)
	q       *batch.Queue[jreq]
}

type jreq struct {
	entries []Target
	events  []AuditEvent
}

// newJournal starts the journal of the operation the fence holds; every
// write carries its lease. audit writes the queued audit events.
func newJournal(store Store, f *fence, audit func([]AuditEvent)) *journal {
	j := &journal{store: store, fence: f, audit: audit}
	j.q = batch.New(batch.Options{Depth: 1024, Merge: 512}, j.write)
	return j
}

// write writes one batch of requests: the audit events first (before the
// outcomes they led to; an audit failure is logged by audit and does not
// stop the operation), then the entries in one store call, which outlives
// the caller's context: an outcome observed must be recorded even if the
// caller went away.
func (j *journal) write(reqs []jreq) error {
	var entries []Target
	var events []AuditEvent
	for _, r := range reqs {
		entries = append(entries, r.entries...)
		events = append(events, r.events...)
	}
	if len(events) > 0 {
		j.audit(events)
	}
	if len(entries) == 0 {
		return nil
	}
	start := time.Now()
	err := j.store.Journal(context.Background(), j.fence.current(), entries)
	if j.observe != nil {
		j.observe(entries, time.Since(start), err)
	}
	if errors.Is(err, ErrLeaseLost) {
		j.fence.lose()
	}
	return err
}

// intent records entries and waits until they are durable. It refuses,
// writing nothing, when the lease is lost or about to expire, and fails
// when the lease was lost or came close to its expiry while it wrote: the
// write it announces must then not be sent (its target stays in flight,
// and the process that takes the operation over reconciles it).
func (j *journal) intent(entries ...Target) error {
	if len(entries) > 0 && !j.fence.holds() {
		return j.lost(errLeaseExpiring)
	}
	err := j.q.SendWait(jreq{entries: entries})
	if err == nil && len(entries) > 0 && !j.fence.holds() {
		err = errLeaseExpiring
	}
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, errLeaseExpiring) {
		return j.lost(err)
	}
	return err
}

func (j *journal) lost(err error) error {
	if j.onLost != nil {
		j.onLost()
	}
	return err
}

// outcome queues entries.
func (j *journal) outcome(entries ...Target) { _ = j.q.Send(jreq{entries: entries}) }

// record queues audit events.
func (j *journal) record(events ...AuditEvent) { _ = j.q.Send(jreq{events: events}) }

// flush waits until every entry queued before it is durable.
func (j *journal) flush() error { return j.intent() }

// close flushes every queued entry and returns the first write error.
func (j *journal) close() error { return j.q.Close() }
