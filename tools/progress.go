package tools

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/upstream"
)

// DefaultProgressInterval is how often a scan reports to a client that
// asked for progress while no page completes: clients that reset their
// request timeout on progress keep a long scan alive.
const DefaultProgressInterval = time.Second

// scanProgress reports a scan's work as notifications/progress to a client
// that sent a progressToken: every interval, whether or not a page
// completed in it (a slow page keeps the client's timeout alive), and never
// more often (mcp-go drops notifications its queue has no room for). stop
// ends it and must be called before the handler returns: a notification
// sent as the result leaves may reach the client after it, so none is sent
// once stop has begun.
//
// progress counts items scanned; total is the upstream's total when every
// source reported one. progress must increase with every notification, so
// a report with no new item adds a fraction below one.
type scanProgress struct {
	ctx   context.Context
	srv   *server.MCPServer
	token any

	mu      sync.Mutex
	last    upstream.ScanProgress
	beats   int // reports since ItemsScanned last changed
	stopped bool
	quit    chan struct{}
	done    chan struct{}
}

// startProgress returns the scan's progress hook and the function that
// stops it; without a progress token both do nothing.
func (d *Deps) startProgress(ctx context.Context, call *Call) (func(upstream.ScanProgress), func()) {
	tok := progressToken(call)
	srv := server.ServerFromContext(ctx)
	if tok == nil || srv == nil {
		return nil, func() {}
	}
	interval := d.ProgressInterval
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	p := &scanProgress{ctx: ctx, srv: srv, token: tok, quit: make(chan struct{}), done: make(chan struct{})}
	go p.beat(interval)
	return p.page, p.stop
}

// page records a completed page; the next beat reports it.
func (p *scanProgress) page(sp upstream.ScanProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sp.ItemsScanned != p.last.ItemsScanned {
		p.beats = 0
	}
	p.last = sp
}

func (p *scanProgress) beat(interval time.Duration) {
	defer close(p.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
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

// sendLocked sends one notification; the lock keeps notifications in
// order and none after stop.
func (p *scanProgress) sendLocked() {
	if p.stopped {
		return
	}
	sp := p.last
	progress := float64(sp.ItemsScanned) + float64(p.beats)/float64(p.beats+1)
	p.beats++
	params := map[string]any{
		"progressToken": p.token, "progress": progress,
		"message": fmt.Sprintf("%d pages, %d items scanned, %d matched", sp.Pages, sp.ItemsScanned, sp.Matched),
	}
	if sp.Total != nil {
		params["total"] = *sp.Total
	}
	_ = p.srv.SendNotificationToClient(p.ctx, "notifications/progress", params)
}

func (p *scanProgress) stop() {
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
