package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
)

// TestIdleRelease_ReturnsMemoryOnlyOnceEveryCallEnded: memory is handed
// back, frozen scans the store keeps let go first, when the last tool call
// in flight ended and none came for a while; a call arriving in the
// meantime puts it off.
func TestIdleRelease_ReturnsMemoryOnlyOnceEveryCallEnded(t *testing.T) {
	clk := &clocktest.Fake{}
	released := make(chan struct{}, 2)
	block, entered := make(chan struct{}), make(chan struct{}, 2)
	letGo := 0
	h := newIdleRelease(slog.New(slog.DiscardHandler), func() int { letGo++; return 1 })
	h.clock, h.release, h.min = clk, func() { released <- struct{}{} }, 0
	handler := h.middleware(func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Name == "slow" {
			entered <- struct{}{}
			<-block
		}
		return mcp.NewToolResultText("ok"), nil
	})
	call := func(name string) {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		handler(context.Background(), req)
	}

	done := make(chan struct{})
	go func() { call("slow"); close(done) }()
	<-entered
	call("fast")
	if n := clk.Waiters(); n != 0 {
		t.Fatalf("%d quiet timers armed while a call is in flight", n)
	}
	close(block)
	<-done
	if n := clk.Waiters(); n != 1 {
		t.Fatalf("%d quiet timers once every call ended, want 1", n)
	}
	// A call in between puts the release off: it stops the timer, and
	// its end arms a new one.
	clk.Advance(releaseQuiet / 2)
	call("fast")
	if n := clk.Waiters(); n != 1 {
		t.Fatalf("%d quiet timers after a call in between, want 1: the call did not stop the first", n)
	}
	clk.Advance(releaseQuiet)
	<-released
	if letGo != 1 || len(released) != 0 {
		t.Fatalf("released %d times and let scans go %d times after a quiet period, want 1 and 1", 1+len(released), letGo)
	}
}

// TestIdleRelease_LeavesLittleFreeMemoryAlone: below the threshold of free
// heap, a quiet period costs no collection.
func TestIdleRelease_LeavesLittleFreeMemoryAlone(t *testing.T) {
	clk := &clocktest.Fake{}
	released := 0
	h := newIdleRelease(slog.New(slog.DiscardHandler), nil)
	h.clock, h.release, h.min = clk, func() { released++ }, 1<<62
	h.begin()
	h.end()
	if n := clk.Waiters(); n != 1 {
		t.Fatalf("%d quiet timers once the call ended, want 1", n)
	}
	// What the timer runs once the server was quiet for long enough.
	h.quietFor()
	if released != 0 {
		t.Fatal("released memory below the threshold")
	}
}
