// Package clocktest is the clock tests move by hand: time stands still
// until the test advances it, and timers, tickers and AfterFunc fire as
// the advance passes their time. A test waits for the logic to arm its
// timers (BlockUntil) instead of sleeping. It is for tests only.
package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/internal/clock"
)

// Epoch is where a zero Fake's time starts.
var Epoch = time.Date(2026, time.January, 1, 9, 0, 0, 0, time.UTC)

// Fake is a clock.Clock that moves only when Advance is called. Its zero
// value is ready and starts at Epoch; it is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	started bool
	waiters []*waiter
	// changed is closed and replaced whenever the set of armed waiters
	// changes, so that BlockUntil wakes up to count them again.
	changed chan struct{}
}

// New returns a fake clock whose time starts at start.
func New(start time.Time) *Fake {
	return &Fake{now: start, started: true}
}

var _ clock.Clock = (*Fake)(nil)

func (f *Fake) nowLocked() time.Time {
	if !f.started {
		f.now, f.started = Epoch, true
	}
	return f.now
}

// Now is the fake's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nowLocked()
}

// Advance moves the time forward by d, firing in order every timer, ticker
// and AfterFunc whose time the move passes. Like a real ticker's, a tick
// that its reader has not taken yet is dropped, so that a ticker passed
// several periods at once delivers one tick.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic("clocktest: Advance by a negative duration")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.nowLocked().Add(d)
	for {
		w := f.nextLocked(end)
		if w == nil {
			break
		}
		if w.when.After(f.now) {
			f.now = w.when
		}
		if w.ch != nil {
			select {
			case w.ch <- f.now:
			default:
			}
		}
		if w.fn != nil {
			go w.fn()
		}
		if w.period > 0 {
			w.when = w.when.Add(w.period)
			continue
		}
		f.removeLocked(w)
	}
	f.now = end
}

// Set moves the time to t: forward as Advance does, or back (as a wall
// clock stepped back does), where armed timers keep their due times.
func (f *Fake) Set(t time.Time) {
	if d := t.Sub(f.Now()); d >= 0 {
		f.Advance(d)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
}

// nextLocked is the armed waiter due first at or before end.
func (f *Fake) nextLocked(end time.Time) *waiter {
	var next *waiter
	for _, w := range f.waiters {
		if !w.when.After(end) && (next == nil || w.when.Before(next.when)) {
			next = w
		}
	}
	return next
}

// Waiters is how many timers, tickers and AfterFuncs are armed.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil returns once at least n timers, tickers and AfterFuncs are
// armed (the logic under test is waiting on them), or with ctx's error.
func (f *Fake) BlockUntil(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		if len(f.waiters) >= n {
			f.mu.Unlock()
			return nil
		}
		ch := f.changedLocked()
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *Fake) changedLocked() chan struct{} {
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

func (f *Fake) notifyLocked() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

func (f *Fake) addLocked(w *waiter) {
	if !slices.Contains(f.waiters, w) {
		f.waiters = append(f.waiters, w)
		f.notifyLocked()
	}
}

// removeLocked disarms w and reports whether it was armed.
func (f *Fake) removeLocked(w *waiter) bool {
	i := slices.Index(f.waiters, w)
	if i < 0 {
		return false
	}
	f.waiters = slices.Delete(f.waiters, i, i+1)
	f.notifyLocked()
	return true
}

// NewTimer returns a timer that fires once the fake's time passes d from
// now.
func (f *Fake) NewTimer(d time.Duration) clock.Timer {
	return f.arm(&waiter{f: f, ch: make(chan time.Time, 1)}, d)
}

// AfterFunc calls fn in its own goroutine once the fake's time passes d
// from now.
func (f *Fake) AfterFunc(d time.Duration, fn func()) clock.Timer {
	return f.arm(&waiter{f: f, fn: fn}, d)
}

// NewTicker returns a ticker that fires every d of the fake's time.
func (f *Fake) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("clocktest: non-positive interval for NewTicker")
	}
	return ticker{f.arm(&waiter{f: f, ch: make(chan time.Time, 1), period: d}, d)}
}

func (f *Fake) arm(w *waiter, d time.Duration) *waiter {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.when = f.nowLocked().Add(d)
	if d <= 0 && w.period == 0 {
		// Due now: fire at once, as the time package does.
		w.fire(f.now)
		return w
	}
	f.addLocked(w)
	return w
}

// waiter is a fake timer, ticker or AfterFunc.
type waiter struct {
	f      *Fake
	when   time.Time
	period time.Duration // tickers only
	ch     chan time.Time
	fn     func()
}

func (w *waiter) fire(now time.Time) {
	if w.ch != nil {
		select {
		case w.ch <- now:
		default:
		}
	}
	if w.fn != nil {
		go w.fn()
	}
}

// C is the channel the waiter sends on (nil for AfterFunc).
func (w *waiter) C() <-chan time.Time { return w.ch }

// Stop disarms the waiter; a value it sent and no one took is dropped, as
// with the time package's timers since Go 1.23.
func (w *waiter) Stop() bool {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	w.drain()
	return w.f.removeLocked(w)
}

// Reset arms the waiter again, d from now (and, for a ticker, makes d its
// period).
func (w *waiter) Reset(d time.Duration) bool {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	w.drain()
	was := w.f.removeLocked(w)
	if w.period > 0 {
		if d <= 0 {
			panic("clocktest: non-positive interval for Ticker.Reset")
		}
		w.period = d
	}
	w.when = w.f.nowLocked().Add(d)
	if d <= 0 && w.period == 0 {
		w.fire(w.f.now)
		return was
	}
	w.f.addLocked(w)
	return was
}

func (w *waiter) drain() {
	if w.ch == nil {
		return
	}
	select {
	case <-w.ch:
	default:
	}
}

// ticker gives a waiter the clock.Ticker method set (Stop and Reset
// without results).
type ticker struct{ *waiter }

func (t ticker) Stop()                 { t.waiter.Stop() }
func (t ticker) Reset(d time.Duration) { t.waiter.Reset(d) }
