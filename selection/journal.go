package selection

import (
	"context"
	"sync"
)

// journal writes target transitions through the store with group commit:
// concurrent writers' entries share one transaction. An intent is durable
// before write returns; an outcome may be queued (it is flushed before the
// operation reports its final status).
type journal struct {
	store Store
	opID  string
	ch    chan jreq
	done  chan struct{}
	mu    sync.Mutex
	err   error
}

type jreq struct {
	entries []Target
	ack     chan error
}

func newJournal(store Store, opID string) *journal {
	j := &journal{store: store, opID: opID, ch: make(chan jreq, 1024), done: make(chan struct{})}
	go j.loop()
	return j
}

func (j *journal) loop() {
	defer close(j.done)
	for first := range j.ch {
		batch := []jreq{first}
	drain:
		for len(batch) < 512 {
			select {
			case r, ok := <-j.ch:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		var entries []Target
		for _, r := range batch {
			entries = append(entries, r.entries...)
		}
		// The journal outlives the caller's context: an outcome observed
		// must be recorded even if the caller went away.
		err := j.store.Journal(context.Background(), j.opID, entries)
		if err != nil {
			j.mu.Lock()
			if j.err == nil {
				j.err = err
			}
			j.mu.Unlock()
		}
		for _, r := range batch {
			if r.ack != nil {
				r.ack <- err
			}
		}
	}
}

// intent records entries and waits until they are durable.
func (j *journal) intent(entries ...Target) error {
	ack := make(chan error, 1)
	j.ch <- jreq{entries: entries, ack: ack}
	return <-ack
}

// outcome queues entries.
func (j *journal) outcome(entries ...Target) {
	j.ch <- jreq{entries: entries}
}

// flush waits until every entry queued before it is durable.
func (j *journal) flush() error { return j.intent() }

// close flushes every queued entry and returns the first write error.
func (j *journal) close() error {
	close(j.ch)
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

func (j *journal) failed() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}
