package main

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// fakeTimers records the timers armed; fire runs the last one.
type fakeTimers struct {
	mu    sync.Mutex
	armed []*fakeTimer
}

type fakeTimer struct {
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { t.stopped = true; return true }

func (ft *fakeTimers) afterFunc(_ time.Duration, f func()) interface{ Stop() bool } {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{f: f}
	ft.armed = append(ft.armed, t)
	return t
}

func (ft *fakeTimers) live() []*fakeTimer {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var out []*fakeTimer
	for _, t := range ft.armed {
		if !t.stopped {
			out = append(out, t)
		}
	}
	return out
}

// TestIdleRelease_ReturnsMemoryOnlyOnceEveryCallEnded: memory is handed
// back, frozen scans the store keeps let go first, when the last tool call
// in flight ended and none came for a while; a call arriving in the
// meantime puts it off.
func TestIdleRelease_ReturnsMemoryOnlyOnceEveryCallEnded(t *testing.T) {
	ft := &fakeTimers{}
	released := 0
	block, entered := make(chan struct{}), make(chan struct{}, 2)
	letGo := 0
	h := newIdleRelease(slog.New(slog.DiscardHandler), func() int { letGo++; return 1 })
	h.afterFunc, h.release, h.min = ft.afterFunc, func() { released++ }, 0
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
	if n := len(ft.live()); n != 0 {
		t.Fatalf("%d quiet timers armed while a call is in flight", n)
	}
	close(block)
	<-done
	live := ft.live()
	if len(live) != 1 {
		t.Fatalf("%d quiet timers once every call ended, want 1", len(live))
	}
	// A call in between puts the release off: its end arms a new timer.
	call("fast")
	if !live[0].stopped {
		t.Fatal("a request did not stop the quiet timer")
	}
	last := ft.live()
	if len(last) != 1 {
		t.Fatalf("%d quiet timers, want 1", len(last))
	}
	last[0].f()
	if released != 1 || letGo != 1 {
		t.Fatalf("released %d times and let scans go %d times after a quiet period, want 1 and 1", released, letGo)
	}
}

// TestIdleRelease_LeavesLittleFreeMemoryAlone: below the threshold of free
// heap, a quiet period costs no collection.
func TestIdleRelease_LeavesLittleFreeMemoryAlone(t *testing.T) {
	ft := &fakeTimers{}
	released := 0
	h := newIdleRelease(slog.New(slog.DiscardHandler), nil)
	h.afterFunc, h.release, h.min = ft.afterFunc, func() { released++ }, 1<<62
	h.begin()
	h.end()
	ft.live()[0].f()
	if released != 0 {
		t.Fatal("released memory below the threshold")
	}
}
