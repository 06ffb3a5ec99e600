package clocktest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestFake_ZeroValueStartsAtEpochAndStandsStill(t *testing.T) {
	var f Fake
	if got := f.Now(); !got.Equal(Epoch) {
		t.Fatalf("zero Fake's time is %s, want %s", got, Epoch)
	}
	f.Advance(90 * time.Second)
	if got := f.Now(); !got.Equal(Epoch.Add(90 * time.Second)) {
		t.Fatalf("after 90 s: %s", got)
	}
}

func TestFake_SetMovesBackWithoutFiringAndForwardLikeAdvance(t *testing.T) {
	var f Fake
	tm := f.NewTimer(time.Minute)
	f.Set(Epoch.Add(-time.Hour))
	if !f.Now().Equal(Epoch.Add(-time.Hour)) {
		t.Fatalf("set back: %s", f.Now())
	}
	f.Set(Epoch.Add(time.Minute))
	select {
	case <-tm.C():
	default:
		t.Fatal("setting the time past the timer's due time did not fire it")
	}
}

func TestFake_TimerFiresOnlyOnceItsTimeIsPassed(t *testing.T) {
	f := New(time.Unix(1000, 0))
	tm := f.NewTimer(10 * time.Second)
	f.Advance(9 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("the timer fired a second early")
	default:
	}
	f.Advance(time.Second)
	select {
	case at := <-tm.C():
		if !at.Equal(time.Unix(1010, 0)) {
			t.Fatalf("fired with %s, want its due time", at)
		}
	default:
		t.Fatal("the timer did not fire when its time passed")
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reported it armed")
	}
	if f.Waiters() != 0 {
		t.Fatalf("%d waiters after the timer fired", f.Waiters())
	}
}

func TestFake_StopAndResetDropAnUntakenValue(t *testing.T) {
	var f Fake
	tm := f.NewTimer(time.Second)
	f.Advance(time.Second)
	if tm.Reset(time.Minute) {
		t.Fatal("Reset of a fired timer reported it armed")
	}
	select {
	case <-tm.C():
		t.Fatal("the value sent before Reset was still delivered")
	default:
	}
	if !tm.Stop() {
		t.Fatal("Stop of a reset timer reported it not armed")
	}
	f.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
}

func TestFake_TickerTicksEveryPeriodAndDropsMissedTicks(t *testing.T) {
	var f Fake
	tk := f.NewTicker(time.Second)
	defer tk.Stop()
	for i := range 3 {
		f.Advance(time.Second)
		select {
		case at := <-tk.C():
			if want := Epoch.Add(time.Duration(i+1) * time.Second); !at.Equal(want) {
				t.Fatalf("tick %d at %s, want %s", i, at, want)
			}
		default:
			t.Fatalf("no tick %d", i)
		}
	}
	f.Advance(5 * time.Second)
	<-tk.C()
	select {
	case <-tk.C():
		t.Fatal("a reader that missed ticks got more than one")
	default:
	}
	tk.Reset(time.Minute)
	f.Advance(59 * time.Second)
	select {
	case <-tk.C():
		t.Fatal("the reset ticker ticked on its old period")
	default:
	}
}

func TestFake_AfterFuncRunsOnceAndBlockUntilSeesItArmed(t *testing.T) {
	var f Fake
	ran := make(chan struct{})
	var calls atomic.Int32
	go f.AfterFunc(time.Minute, func() { calls.Add(1); close(ran) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("the AfterFunc was never armed: %v", err)
	}
	f.Advance(2 * time.Minute)
	<-ran
	f.Advance(time.Hour)
	if n := calls.Load(); n != 1 {
		t.Fatalf("the function ran %d times", n)
	}
}

func TestFake_BlockUntilGivesUpWithItsContext(t *testing.T) {
	var f Fake
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.BlockUntil(ctx, 1); err == nil {
		t.Fatal("BlockUntil returned without an armed timer or an error")
	}
}
