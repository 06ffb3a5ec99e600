// Package batch hands values from any number of producers to one consumer
// goroutine in batches: the preview's scanned items and records, a commit's
// journal, the SQLite store's group commit. It owns the one way those
// pipelines close, abort and keep their first error.
//
// The consumer is never called with a lock of the queue held, and a
// producer never calls the consumer itself.
package batch

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by a handover after Close or Abort.
var ErrClosed = errors.New("batch: queue closed")

// Options shape a Queue.
type Options struct {
	// Depth is how many handovers may wait for the consumer; a producer
	// blocks beyond that (backpressure).
	Depth int
	// Chunk is how many values Add buffers before it hands them over
	// (0 or 1: every Add hands over at once).
	Chunk int
	// Merge, when above 0, lets the consumer take handovers that wait
	// together, up to Merge values, in one call.
	Merge int
	// StopOnError drops what comes after the first consumer error instead
	// of consuming it.
	StopOnError bool
}

type handover[T any] struct {
	vals []T
	seq  int
	ack  chan error
}

// Queue is a batching pipeline to one consumer. Its methods are safe for
// concurrent use.
type Queue[T any] struct {
	opts    Options
	consume func([]T) error
	gather  func([]T) time.Duration
	ch      chan handover[T]
	done    chan struct{}
	aborted atomic.Bool

	mu      sync.Mutex // pending, closed, seq, sends on ch
	pending []T
	closed  bool
	seq     int

	emu      sync.Mutex
	err      error
	failedAt int
}

// New starts a queue whose consumer is consume.
func New[T any](opts Options, consume func([]T) error) *Queue[T] {
	return NewGathering(opts, nil, consume)
}

// NewGathering starts a queue that, with opts.Merge, asks gather before it
// consumes a merged batch how long at most to wait for more handovers to
// merge into it (0: none). It asks again after each handover that arrives
// meanwhile; the wait ends at its first zero, at the first answer's
// deadline, or when the batch holds Merge values. A nil gather never
// waits.
func NewGathering[T any](opts Options, gather func(batch []T) time.Duration, consume func([]T) error) *Queue[T] {
	q := &Queue[T]{opts: opts, consume: consume, gather: gather, ch: make(chan handover[T], max(opts.Depth, 0)), done: make(chan struct{})}
	go q.loop()
	return q
}

func (q *Queue[T]) loop() {
	defer close(q.done)
	var acks []chan error
	for first := range q.ch {
		batch, last := first.vals, first.seq
		acks = acks[:0]
		if first.ack != nil {
			acks = append(acks, first.ack)
		}
		if q.opts.Merge > 0 {
			batch = append([]T(nil), batch...)
		drain:
			for len(batch) < q.opts.Merge {
				select {
				case h, ok := <-q.ch:
					if !ok {
						break drain
					}
					batch, last = append(batch, h.vals...), h.seq
					if h.ack != nil {
						acks = append(acks, h.ack)
					}
				default:
					break drain
				}
			}
			batch, last, acks = q.gatherMore(batch, last, acks)
		}
		var err error
		switch {
		case q.aborted.Load():
			err = ErrClosed
		case q.opts.StopOnError && q.Err() != nil:
			err = q.Err()
		case len(batch) > 0:
			if err = q.consume(batch); err != nil {
				q.emu.Lock()
				if q.err == nil {
					q.err, q.failedAt = err, last
				}
				q.emu.Unlock()
			}
		}
		for _, a := range acks {
			a <- err
		}
	}
}

// gatherMore waits for more handovers as long as q.gather says, merging
// them into batch.
func (q *Queue[T]) gatherMore(batch []T, last int, acks []chan error) ([]T, int, []chan error) {
	if q.gather == nil {
		return batch, last, acks
	}
	d := q.gather(batch)
	if d <= 0 {
		return batch, last, acks
	}
	// The wall clock, not an injected one: the wait is measured against
	// the consumer's real I/O (a store's commit time), and a test's clock
	// must neither stretch it nor leave a pipeline waiting for it to move.
	timer := time.NewTimer(d)
	defer timer.Stop()
	for len(batch) < q.opts.Merge {
		select {
		case h, ok := <-q.ch:
			if !ok {
				return batch, last, acks
			}
			batch, last = append(batch, h.vals...), h.seq
			if h.ack != nil {
				acks = append(acks, h.ack)
			}
			if q.gather(batch) <= 0 {
				return batch, last, acks
			}
		case <-timer.C:
			return batch, last, acks
		}
	}
	return batch, last, acks
}

// Err is the consumer's first error so far.
func (q *Queue[T]) Err() error {
	q.emu.Lock()
	defer q.emu.Unlock()
	return q.err
}

// FailedAt is the number (from 1) of the handover whose batch failed
// first, 0 when none did.
func (q *Queue[T]) FailedAt() int {
	q.emu.Lock()
	defer q.emu.Unlock()
	return q.failedAt
}

// Handed is how many handovers were made so far.
func (q *Queue[T]) Handed() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.seq
}

// handLocked hands vals over; q.mu is held.
func (q *Queue[T]) handLocked(vals []T, ack chan error) error {
	if q.closed {
		return ErrClosed
	}
	q.seq++
	q.ch <- handover[T]{vals: vals, seq: q.seq, ack: ack}
	return nil
}

// Add buffers v and hands the buffer over once it holds Chunk values. It
// returns the consumer's first error so far (with StopOnError the
// producer should stop).
func (q *Queue[T]) Add(v T) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.pending = append(q.pending, v)
	if len(q.pending) >= max(q.opts.Chunk, 1) {
		if err := q.Err(); err != nil && q.opts.StopOnError {
			return err
		}
		vals := q.pending
		q.pending = make([]T, 0, max(q.opts.Chunk, 1))
		if err := q.handLocked(vals, nil); err != nil {
			return err
		}
	}
	if q.opts.StopOnError {
		return q.Err()
	}
	return nil
}

// Send hands vals over now, behind anything buffered by Add; the consumer
// owns them from then on. It does not wait for them to be consumed.
func (q *Queue[T]) Send(vals ...T) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.flushPendingLocked(); err != nil {
		return err
	}
	return q.handLocked(vals, nil)
}

// SendWait hands vals over and waits until the batch holding them was
// consumed; it returns that batch's error. With no values it waits for
// everything handed over before it (a flush).
func (q *Queue[T]) SendWait(vals ...T) error {
	ack := make(chan error, 1)
	q.mu.Lock()
	err := q.flushPendingLocked()
	if err == nil {
		err = q.handLocked(vals, ack)
	}
	q.mu.Unlock()
	if err != nil {
		return err
	}
	return <-ack
}

func (q *Queue[T]) flushPendingLocked() error {
	if len(q.pending) == 0 {
		return nil
	}
	vals := q.pending
	q.pending = nil
	return q.handLocked(vals, nil)
}

// Close hands over what Add buffered, waits until everything was consumed
// and stops the consumer. It returns the first error. Later handovers get
// ErrClosed.
func (q *Queue[T]) Close() error {
	q.mu.Lock()
	if !q.closed {
		_ = q.flushPendingLocked()
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
	return q.Err()
}

// Abort drops what was not consumed yet and waits for the consumer to
// stop.
func (q *Queue[T]) Abort() {
	q.aborted.Store(true)
	q.mu.Lock()
	q.pending = nil
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
}
