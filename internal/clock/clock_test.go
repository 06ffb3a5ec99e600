package clock_test

import (
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
)

func TestSleep_WaitsOnTheClockOrReturnsWhenDone(t *testing.T) {
	var f clocktest.Fake
	slept := make(chan bool)
	go func() { slept <- clock.Sleep(&f, time.Minute, nil) }()
	if err := f.BlockUntil(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	if !<-slept {
		t.Fatal("Sleep said it was cut short when its duration passed")
	}
	done := make(chan struct{})
	close(done)
	if clock.Sleep(&f, time.Hour, done) {
		t.Fatal("Sleep waited out its duration after done was closed")
	}
	if f.Waiters() != 0 {
		t.Fatal("Sleep left its timer armed")
	}
}

func TestReal_TimersFireOnTheWallClock(t *testing.T) {
	var c clock.Clock = clock.Real{}
	start := time.Now()
	<-c.NewTimer(time.Millisecond).C()
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
	if c.Now().Before(start) {
		t.Fatal("the real clock went backwards")
	}
}
