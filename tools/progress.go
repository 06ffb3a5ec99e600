package tools

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/upstream"
)

// DefaultProgressInterval is how often a call reports to a client that
// asked for progress, whether or not its work moved: clients that reset
// their request timeout on progress keep a long scan or commit alive.
const DefaultProgressInterval = time.Second

// progress reports one call's work to the call's Progress (the edge sends
// it to a client that asked, as notifications/progress): every interval of
// the deps' clock, whether or not the work moved in it (a slow page or
// write keeps the client's timeout alive), and never more often (an edge
// may drop reports it has no room for). stop ends it and must be called
// before the handler returns: a report sent as the result leaves may reach
// the client after it, so none is sent once stop has begun.
//
// progress must increase with every notification: a report below the last
// one (workers report out of order) is ignored, and a beat with no new work
// adds a fraction below one.
type progress struct {
	ctx  context.Context
	send func(Progress)

	mu      sync.Mutex
	last    progressReport
	known   bool // a report arrived: until then there is nothing to send
	beats   int  // notifications since last.Done last increased
	stopped bool
	quit    chan struct{}
	done    chan struct{}
}

// progressReport is where a call's work stands.
type progressReport struct {
	// Done counts the work done: items scanned, targets with an outcome.
	Done int
	// Total is how much there is, when known.
	Total   *int
	Message string
}

// newProgress starts the reporter of a call; nil (whose methods do
// nothing) when nobody asked for the call's progress.
func (d *Deps) newProgress(ctx context.Context, call *Call) *progress {
	if call == nil || call.Progress == nil {
		return nil
	}
	interval := d.ProgressInterval
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	c := d.Clock
	if c == nil {
		c = upstream.WallClock
	}
	p := &progress{ctx: ctx, send: call.Progress, quit: make(chan struct{}), done: make(chan struct{})}
	// The ticker starts here, not in the goroutine, so that the first
	// beat is due one interval after the call began.
	go p.beat(c.NewTicker(interval))
	return p
}

// startProgress returns a scan's progress hook and the function that stops
// it; without a progress token both do nothing.
func (d *Deps) startProgress(ctx context.Context, call *Call) (func(upstream.ScanProgress), func()) {
	p := d.newProgress(ctx, call)
	if p == nil {
		return nil, func() {}
	}
	p.report(progressReport{Message: scanMessage(upstream.ScanProgress{})})
	return func(sp upstream.ScanProgress) {
		p.report(progressReport{Done: sp.ItemsScanned, Total: sp.Total, Message: scanMessage(sp)})
	}, p.stop
}

func scanMessage(sp upstream.ScanProgress) string {
	return fmt.Sprintf("%d pages, %d items scanned, %d matched", sp.Pages, sp.ItemsScanned, sp.Matched)
}

// commitProgress returns a commit's progress hook (targets with an
// outcome, of the operation's total) and the function that stops it;
// without a progress token the hook is nil.
func (d *Deps) commitProgress(ctx context.Context, call *Call) (func(done, total int), func()) {
	p := d.newProgress(ctx, call)
	if p == nil {
		return nil, func() {}
	}
	return func(done, total int) {
		p.report(progressReport{Done: done, Total: &total, Message: "targets with an outcome"})
	}, p.stop
}

// report records where the work stands; the next beat sends it.
func (p *progress) report(r progressReport) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known && r.Done < p.last.Done {
		return
	}
	if r.Done != p.last.Done {
		p.beats = 0
	}
	p.last, p.known = r, true
}

func (p *progress) beat(t clock.Ticker) {
	defer close(p.done)
	defer t.Stop()
	for {
		select {
		case <-t.C():
			p.mu.Lock()
			p.sendLocked()
			p.mu.Unlock()
		case <-p.quit:
			return
		case <-p.ctx.Done():
			return
		}
	}
}

// sendLocked sends one report; the lock keeps reports in order and none
// after stop.
func (p *progress) sendLocked() {
	if p.stopped || !p.known {
		return
	}
	r := p.last
	out := Progress{Progress: float64(r.Done) + float64(p.beats)/float64(p.beats+1), Message: r.Message}
	p.beats++
	if r.Total != nil {
		out.Total = envelope.Ptr(*r.Total)
	}
	p.send(out)
}

// stop ends the reports: none is sent once it has begun, and the beat has
// ended when it returns.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	p.mu.Unlock()
	close(p.quit)
	<-p.done
}
