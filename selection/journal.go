package selection

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/selection/internal/batch"
)

// journal writes target transitions through the store with group commit:
// concurrent writers' entries share one transaction. An intent is durable
// before write returns; an outcome may be queued (it is flushed before the
// operation reports its final status). The audit records of the
// operation's external calls are queued the same way, so that a worker
// never waits for the audit trail between two targets.
//
// A store write that holds intents waits, at most as long as the last one
// took, for the intents of the other callers (see gather): with writes
// faster than a commit, the callers would otherwise split into groups whose
// intents take turns, each waiting for the others' commits.
type journal struct {
	store Store
	fence *fence
	// clock times the waits between attempts at a store that is
	// unavailable: a write is tried again while the lease holds.
	clock clock.Clock
	audit func([]AuditEvent)
	// onLost, when set, is called when a write finds the lease lost or
	// about to expire, before the write's error is returned.
	onLost func()
	// observe, when set, is told of each store write and how long it took.
	observe func(entries []Target, took time.Duration, err error)
	q       *batch.Queue[jreq]

	mu sync.Mutex
	// sending is, by target, the intent call whose write is being sent:
	// its intent is durable and its outcome not queued yet; calls is the
	// set of those calls.
	sending map[string]*sent
	calls   map[*sent]bool
	// callers is how many callers were seen waiting for an intent or
	// sending its write at once, lately.
	callers int
	// took is how long the last store write with intents took, and send
	// how long a write takes to send, on average.
	took, send time.Duration
	// maxWait bounds gather's wait (maxGather).
	maxWait time.Duration
}

// sent is one intent call whose writes are being sent.
type sent struct {
	at   time.Time
	left int // targets without an outcome
}

type jreq struct {
	entries []Target
	events  []AuditEvent
	intent  bool // a caller waits for entries that announce writes
}

// newJournal starts the journal of the operation the fence holds; every
// write carries its lease. audit writes the queued audit events.
func newJournal(store Store, f *fence, c clock.Clock, audit func([]AuditEvent)) *journal {
	j := &journal{store: store, fence: f, clock: c, audit: audit, sending: map[string]*sent{}, calls: map[*sent]bool{}, maxWait: maxGather}
	j.q = batch.NewGathering(batch.Options{Depth: 1024, Merge: 512}, j.gather, j.write)
	return j
}

// gather says how long a batch may wait for more intents: while fewer
// callers wait in it than were seen lately, and only when writes take less
// time to send than a commit takes (then the callers sending come back
// within the wait), at most as long as the last commit with intents took.
// Waiting longer than a commit would cost a caller more than the next
// commit does; with writes slower than a commit, the commits are not what
// the callers wait for.
func (j *journal) gather(reqs []jreq) time.Duration {
	waiting := 0
	for _, r := range reqs {
		if r.intent {
			waiting++
		}
	}
	if waiting == 0 {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.callers = max(j.callers, waiting+len(j.calls))
	wait := min(j.took, j.maxWait)
	if waiting >= j.callers || wait <= 0 || j.send >= wait {
		return 0
	}
	return wait
}

// maxGather bounds gather's wait, so that a store that stalled once does
// not hold the next intents as long.
const maxGather = 50 * time.Millisecond

// write writes one batch of requests: the audit events first (before the
// outcomes they led to; audit keeps what the store refuses and writes it
// later, so that no line is lost and the operation goes on), then the
// entries in one store call, which outlives
// the caller's context: an outcome observed must be recorded even if the
// caller went away.
func (j *journal) write(reqs []jreq) error {
	var entries []Target
	var events []AuditEvent
	waiting := 0
	for _, r := range reqs {
		entries = append(entries, r.entries...)
		events = append(events, r.events...)
		if r.intent {
			waiting++
		}
	}
	if waiting > 0 {
		// Callers that did not come within the wait are not waited for
		// next time, until they are seen again.
		j.mu.Lock()
		j.callers = waiting + len(j.calls)
		j.mu.Unlock()
	}
	if len(events) > 0 {
		j.audit(events)
	}
	if len(entries) == 0 {
		return nil
	}
	start := time.Now()
	// A store that is unavailable (a connection cut, a server restarting)
	// is tried again, with a growing wait, as long as the lease holds:
	// the write must not be lost to a blip, and once the lease is gone it
	// is the takeover's.
	err := retryUnavailable(j.clock, time.Hour, j.fence.holds, func() error {
		return j.store.Journal(context.Background(), j.fence.current(), entries)
	})
	took := time.Since(start)
	if waiting > 0 && err == nil {
		j.mu.Lock()
		j.took = took
		j.mu.Unlock()
	}
	if j.observe != nil {
		j.observe(entries, took, err)
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
	err := j.q.SendWait(jreq{entries: entries, intent: len(entries) > 0})
	if err == nil && len(entries) > 0 && !j.fence.holds() {
		err = errLeaseExpiring
	}
	if err == nil {
		j.sendingStarts(entries)
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
func (j *journal) outcome(entries ...Target) {
	j.sendingEnds(entries)
	_ = j.q.Send(jreq{entries: entries})
}

// sendingStarts notes that the writes the durable intents announce are
// being sent.
func (j *journal) sendingStarts(intents []Target) {
	c := &sent{at: time.Now()}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, t := range intents {
		if t.Outcome == TargetInFlight {
			j.endLocked(t.ID)
			j.sending[t.ID] = c
			c.left++
		}
	}
	if c.left > 0 {
		j.calls[c] = true
	}
}

// sendingEnds notes the outcomes of writes being sent.
func (j *journal) sendingEnds(outcomes []Target) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, t := range outcomes {
		j.endLocked(t.ID)
	}
}

// endLocked notes that the write to id is no longer being sent, and, when
// it was its call's last, how long the call took to send.
func (j *journal) endLocked(id string) {
	c, ok := j.sending[id]
	if !ok {
		return
	}
	delete(j.sending, id)
	if c.left--; c.left == 0 {
		delete(j.calls, c)
		// A moving average over about eight calls.
		j.send += (time.Since(c.at) - j.send) / 8
	}
}

// record queues audit events.
func (j *journal) record(events ...AuditEvent) { _ = j.q.Send(jreq{events: events}) }

// flush waits until every entry queued before it is durable.
func (j *journal) flush() error { return j.intent() }

// close flushes every queued entry and returns the first write error.
func (j *journal) close() error { return j.q.Close() }
