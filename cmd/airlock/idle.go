package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// idleRelease hands the memory a burst of tool calls left free back to the
// system once no call has been running for a while. The Go runtime keeps
// freed heap for reuse and returns it gradually, over minutes; a server
// that answered fifty clients, or scanned a hundred thousand records,
// would otherwise hold its peak long after. It is a tool middleware, so it
// sees stdio and HTTP alike.
type idleRelease struct {
	quiet time.Duration
	// min is the free, unreleased heap below which nothing is done.
	min    uint64
	logger *slog.Logger
	// let go, when set, drops what the process holds only for speed
	// (frozen scans the store keeps) before the memory is released.
	letGo func() int
	// clock and release are the wall clock and debug.FreeOSMemory,
	// replaced in tests.
	clock   clock.Clock
	release func()

	mu       sync.Mutex
	inFlight int
	timer    clock.Timer
}

// releaseQuiet is how long the server must be quiet before it releases
// memory; releaseMin how much free heap makes it worth a collection.
const (
	releaseQuiet = 5 * time.Second
	releaseMin   = 4 << 20
)

func newIdleRelease(logger *slog.Logger, letGo func() int) *idleRelease {
	return &idleRelease{quiet: releaseQuiet, min: releaseMin, logger: logger, letGo: letGo,
		clock: clock.Real{}, release: debug.FreeOSMemory}
}

// middleware counts the tool calls in flight.
func (h *idleRelease) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h.begin()
		defer h.end()
		return next(ctx, req)
	}
}

func (h *idleRelease) begin() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inFlight++
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}

func (h *idleRelease) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inFlight--; h.inFlight == 0 {
		h.timer = h.clock.AfterFunc(h.quiet, h.quietFor)
	}
}

// quietFor runs when no call came for h.quiet.
func (h *idleRelease) quietFor() {
	h.mu.Lock()
	idle := h.inFlight == 0
	h.timer = nil
	h.mu.Unlock()
	if !idle {
		return
	}
	if h.letGo != nil {
		if n := h.letGo(); n > 0 {
			h.logger.Debug("quiet: frozen scans let go (the store keeps them)", "scans", n)
		}
	}
	free, released := heapFree()
	if free < h.min {
		return
	}
	h.release()
	after, _ := heapFree()
	h.logger.Debug("quiet: freed memory returned to the system", "free_before", free, "released_before", released, "free_after", after)
}

// heapFree reads the heap the runtime holds free (not released to the
// system) and the heap it has released.
func heapFree() (free, released uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
