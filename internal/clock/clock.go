// Package clock is the time source of airlock's logic: the current time and
// the timers and tickers that expire leases, pace runs, pause for a rate
// limit and beat progress. Logic takes a Clock instead of calling the time
// package, so that tests move time by hand (clocktest.Fake) instead of
// waiting it out. Real is the only implementation outside tests; nothing
// here may ever change how the wall clock behaves.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers on it.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that sends the time on its channel every
	// d (d must be positive); like time.Ticker, it drops ticks a slow
	// reader misses.
	NewTicker(d time.Duration) Ticker
	// AfterFunc calls f in its own goroutine once d has passed; the
	// returned timer's C is nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a time.Timer behind an interface: C is a method.
type Timer interface {
	// C is the channel the timer sends on; nil for AfterFunc.
	C() <-chan time.Time
	// Stop prevents the timer from firing; false means it already fired
	// or was stopped.
	Stop() bool
	// Reset makes the timer fire after d; false means it had already
	// fired or been stopped.
	Reset(d time.Duration) bool
}

// Ticker is a time.Ticker behind an interface: C is a method.
type Ticker interface {
	// C is the channel the ticks arrive on.
	C() <-chan time.Time
	// Stop turns the ticker off; no tick arrives after it returns.
	Stop()
	// Reset changes the period to d and restarts it from now.
	Reset(d time.Duration)
}

// Real is the wall clock: the time package itself.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// NewTicker is time.NewTicker.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }

// Sleep waits for d on c, or until done is closed; it reports whether the
// whole of d passed.
func Sleep(c Clock, d time.Duration, done <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-done:
		return false
	}
}

// UntilDeadline is how long ctx has left before its deadline; false when
// it has none. A context's deadline is set on the wall clock (the context
// package knows no other), so it is measured there, never on an injected
// Clock, whose time may be anywhere; a testing/synctest bubble, which
// fakes the time package, moves both together.
func UntilDeadline(ctx context.Context) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(dl), true
}
