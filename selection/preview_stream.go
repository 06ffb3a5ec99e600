package selection

import (
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/airlock-mcp/airlock/selection/internal/batch"
	"github.com/airlock-mcp/airlock/upstream"
)

// itemBatch is how many scanned items go to the classifying goroutine at
// once.
const itemBatch = 250

// itemQueue classifies a scan's items on a goroutine of its own: the scan
// hands them over (Sink.Add) and goes on to read the next page while they
// are classified, counted, digested and queued for the store, in the order
// they were handed over. The scan does not touch an item once it has
// handed it over. After a failure or an abort the rest is dropped, never
// classified.
type itemQueue struct {
	c *classifier
	q *batch.Queue[*upstream.Item]
}

func newItemQueue(c *classifier) *itemQueue {
	iq := &itemQueue{c: c}
	// Two chunks waiting are enough to keep the classifier busy while the
	// scan reads; every chunk more is decoded items held in memory.
	iq.q = batch.New(batch.Options{Depth: 2, Chunk: itemBatch, StopOnError: true}, func(items []*upstream.Item) error {
		for _, it := range items {
			if err := c.add(c.classify(it.ID, it.Version, it.Source, it.Doc, it.Violations)); err != nil {
				return err
			}
		}
		return nil
	})
	return iq
}

// add hands an item over. It returns the first error classifying or
// storing met so far: the scan stops, as it did when the sink failed.
func (q *itemQueue) add(it *upstream.Item) error {
	if err := q.c.w.err(); err != nil {
		return err
	}
	if err := q.q.Add(it); err != nil {
		if errors.Is(err, batch.ErrClosed) {
			return errors.New("preview: item handed over after the scan ended")
		}
		return err
	}
	return nil
}

// finish classifies the items still pending, waits until every item is
// classified and returns the first error.
func (q *itemQueue) finish() error { return q.q.Close() }

// abort drops what is left and waits for the goroutine to end.
func (q *itemQueue) abort() { q.q.Abort() }

// recordWriter writes batches of records to the store from its own
// goroutine, so that classifying does not wait for the store. It holds at
// most one batch besides the one being written; put blocks beyond that:
// more only held more records in memory (issue 41), since the store sets
// the pace either way.
// After a failure the rest is dropped, never written: the selection fails.
type recordWriter struct {
	ctx    context.Context
	cancel context.CancelFunc
	q      *batch.Queue[Record]
}

func newRecordWriter(ctx context.Context, store Store, selID string) *recordWriter {
	ctx, cancel := context.WithCancel(ctx)
	w := &recordWriter{ctx: ctx, cancel: cancel}
	w.q = batch.New(batch.Options{Depth: 1, StopOnError: true}, func(recs []Record) error {
		return store.PutRecords(ctx, selID, recs)
	})
	return w
}

// err is the first write error so far.
func (w *recordWriter) err() error { return w.q.Err() }

// put hands a batch to the writer; the writer owns it from then on.
func (w *recordWriter) put(batch []Record) { _ = w.q.Send(batch...) }

// finish writes the last batch, waits for every batch handed over and
// returns the first write error, and whether it was one of the batches
// handed over before the last (while the records were being read).
func (w *recordWriter) finish(last []Record) (duringScan bool, err error) {
	handed := w.q.Handed()
	if len(last) > 0 {
		w.put(last)
	}
	err = w.q.Close()
	w.cancel()
	return err != nil && w.q.FailedAt() <= handed, err
}

// abort stops writing and waits for the goroutine to end: the selection
// failed, its records do not matter.
func (w *recordWriter) abort() {
	w.cancel()
	w.q.Abort()
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
