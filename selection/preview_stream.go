package selection

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/airlock-mcp/airlock/upstream"
)

// itemBatch is how many scanned items go to the classifying goroutine at
// once.
const itemBatch = 250

// itemQueue classifies a scan's items on a goroutine of its own: the scan
// hands them over (Sink.Add, called with the scan's lock held) and goes on
// to read the next page while they are classified, counted, digested and
// queued for the store, in the order they were handed over. The scan does
// not touch an item once it has handed it over.
type itemQueue struct {
	c    *classifier
	done chan struct{}
	stop atomic.Bool

	mu      sync.Mutex // pending, queue sends, closed
	pending []*upstream.Item
	queue   chan []*upstream.Item
	closed  bool

	emu sync.Mutex
	err error
}

func newItemQueue(c *classifier) *itemQueue {
	q := &itemQueue{c: c, done: make(chan struct{}), queue: make(chan []*upstream.Item, 8), pending: make([]*upstream.Item, 0, itemBatch)}
	go q.run()
	return q
}

func (q *itemQueue) run() {
	defer close(q.done)
	for batch := range q.queue {
		// After a failure or an abort the rest is drained, never
		// classified.
		if q.stop.Load() || q.firstErr() != nil {
			continue
		}
		for _, it := range batch {
			if err := q.c.add(q.c.classify(it.ID, it.Version, it.Source, it.Doc, it.Violations)); err != nil {
				q.emu.Lock()
				q.err = err
				q.emu.Unlock()
				break
			}
		}
	}
}

func (q *itemQueue) firstErr() error {
	q.emu.Lock()
	defer q.emu.Unlock()
	return q.err
}

// add hands an item over. It returns the first error classifying or
// storing met so far: the scan stops, as it did when the sink failed.
func (q *itemQueue) add(it *upstream.Item) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errors.New("preview: item handed over after the scan ended")
	}
	q.pending = append(q.pending, it)
	if len(q.pending) < itemBatch {
		return nil
	}
	if err := q.firstErr(); err != nil {
		return err
	}
	if err := q.c.w.err(); err != nil {
		return err
	}
	q.queue <- q.pending
	q.pending = make([]*upstream.Item, 0, itemBatch)
	return nil
}

// finish classifies the items still pending, waits until every item is
// classified and returns the first error.
func (q *itemQueue) finish() error {
	q.mu.Lock()
	if !q.closed && len(q.pending) > 0 {
		q.queue <- q.pending
		q.pending = nil
	}
	q.mu.Unlock()
	q.close()
	return q.firstErr()
}

// abort drops what is left and waits for the goroutine to end.
func (q *itemQueue) abort() {
	q.stop.Store(true)
	q.close()
}

func (q *itemQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.queue)
	}
	q.mu.Unlock()
	<-q.done
}

// recordWriter writes batches of records to the store from its own
// goroutine, so that the scan (which calls the classifier with its lock
// held) does not wait for the store. It holds at most two batches besides
// the one being written; put blocks beyond that.
type recordWriter struct {
	store  Store
	selID  string
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan []Record
	done   chan struct{}
	closed bool
	puts   int // batches handed over

	mu        sync.Mutex
	firstErr  error
	failedPut int // the batch that failed, counting from 1
}

func newRecordWriter(ctx context.Context, store Store, selID string) *recordWriter {
	ctx, cancel := context.WithCancel(ctx)
	w := &recordWriter{store: store, selID: selID, ctx: ctx, cancel: cancel, queue: make(chan []Record, 2), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *recordWriter) run() {
	defer close(w.done)
	n := 0
	for batch := range w.queue {
		n++
		// After a failure the rest is drained, never written: the
		// selection fails.
		if w.err() != nil {
			continue
		}
		if err := w.store.PutRecords(w.ctx, w.selID, batch); err != nil {
			w.mu.Lock()
			w.firstErr, w.failedPut = err, n
			w.mu.Unlock()
		}
	}
}

// err is the first write error so far.
func (w *recordWriter) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr
}

// put hands a batch to the writer; the writer owns it from then on.
func (w *recordWriter) put(batch []Record) {
	w.puts++
	w.queue <- batch
}

// finish writes the last batch, waits for every batch handed over and
// returns the first write error, and whether it was one of the batches
// handed over before the last (while the records were being read).
func (w *recordWriter) finish(last []Record) (duringScan bool, err error) {
	handed := w.puts
	if len(last) > 0 {
		w.put(last)
	}
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr != nil && w.failedPut <= handed, w.firstErr
}

// abort stops writing and waits for the goroutine to end: the selection
// failed, its records do not matter.
func (w *recordWriter) abort() {
	w.cancel()
	w.close()
}

func (w *recordWriter) close() {
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	<-w.done
	w.cancel()
}

// streamable reports whether a record's values read back from the store
// exactly as they are (stored as JSON, read with numbers as json.Number), so
// that digesting it now gives the bytes a digest over the stored records
// would. Values decoded from JSON always do; a float64 (encoded in another
// number form) or a string that is not valid UTF-8 (replaced byte by byte
// when stored, by runs when digested) does not.
func streamable(r *Record) bool {
	return utf8.ValidString(r.ID) && utf8.ValidString(r.Disposition) && utf8.ValidString(r.Note) && utf8.ValidString(r.Version) &&
		roundTrips(r.Review) && roundTrips(r.Before) && roundTrips(r.Restore)
}

func roundTrips(v any) bool {
	switch x := v.(type) {
	case nil, bool, json.Number, int, int64:
		return true
	case string:
		return utf8.ValidString(x)
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !roundTrips(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !roundTrips(e) {
				return false
			}
		}
		return true
	case []string:
		for _, e := range x {
			if !utf8.ValidString(e) {
				return false
			}
		}
		return true
	}
	return false
}
