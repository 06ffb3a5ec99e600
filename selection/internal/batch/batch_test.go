package batch

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestQueue_ConsumesEveryValueInOrder(t *testing.T) {
	var got []int
	q := New(Options{Depth: 2, Chunk: 3}, func(vs []int) error { got = append(got, vs...); return nil })
	for i := range 10 {
		if err := q.Add(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Send(10, 11); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; !slices.Equal(got, want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}
	if err := q.Add(12); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v, want ErrClosed", err)
	}
}

func TestQueue_SendWaitAnswersWithItsBatchsResult(t *testing.T) {
	boom := errors.New("boom")
	q := New(Options{Depth: 4}, func(vs []string) error {
		if slices.Contains(vs, "bad") {
			return boom
		}
		return nil
	})
	defer q.Close()
	if err := q.SendWait("good"); err != nil {
		t.Fatalf("good batch: %v", err)
	}
	if err := q.SendWait("bad"); !errors.Is(err, boom) {
		t.Fatalf("bad batch: %v", err)
	}
	// Without StopOnError later batches are still consumed.
	if err := q.SendWait("good"); err != nil {
		t.Fatalf("a later batch: %v", err)
	}
	if !errors.Is(q.Err(), boom) || q.FailedAt() != 2 {
		t.Fatalf("first error %v at %d, want boom at 2", q.Err(), q.FailedAt())
	}
}

func TestQueue_StopOnErrorDropsWhatFollows(t *testing.T) {
	boom := errors.New("boom")
	var consumed []int
	q := New(Options{Depth: 8, StopOnError: true}, func(vs []int) error {
		consumed = append(consumed, vs...)
		if vs[0] == 2 {
			return boom
		}
		return nil
	})
	for i := range 5 {
		_ = q.Send(i)
	}
	if err := q.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close: %v, want boom", err)
	}
	if !slices.Equal(consumed, []int{0, 1, 2}) {
		t.Fatalf("consumed %v after the failure at 2", consumed)
	}
}

func TestQueue_MergeTakesWaitingHandoversTogether(t *testing.T) {
	release, holding := make(chan struct{}), make(chan struct{})
	var sizes []int
	q := New(Options{Depth: 16, Merge: 5}, func(vs []int) error {
		if vs[0] == 0 {
			close(holding)
			<-release // hold the consumer while handovers pile up
		}
		sizes = append(sizes, len(vs))
		return nil
	})
	_ = q.Send(0)
	<-holding
	for i := 1; i <= 7; i++ {
		_ = q.Send(i)
	}
	close(release)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if sizes[0] != 1 || sizes[1] != 5 || len(sizes) != 3 || sizes[2] != 2 {
		t.Fatalf("batch sizes %v, want [1 5 2]", sizes)
	}
}

func TestQueue_AbortDropsTheRestAndConcurrentProducersAreSafe(t *testing.T) {
	var mu sync.Mutex
	n := 0
	q := New(Options{Depth: 1, Chunk: 4}, func(vs []int) error { mu.Lock(); n += len(vs); mu.Unlock(); return nil })
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				_ = q.Add(g*1000 + i)
			}
		}()
	}
	wg.Wait()
	q.Abort()
	mu.Lock()
	defer mu.Unlock()
	if n > 400 {
		t.Fatalf("consumed %d of 400", n)
	}
	if err := q.Send(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Abort: %v", err)
	}
}

// TestQueue_GatherWaitsForHandoversUntilItSaysEnough: a merged batch waits
// for the handovers its gather asks for, and a waiting producer's answer is
// that batch's.
func TestQueue_GatherWaitsForHandoversUntilItSaysEnough(t *testing.T) {
	asked := make(chan struct{}, 16)
	var consumed [][]int
	q := NewGathering(Options{Depth: 8, Merge: 8}, func(vs []int) time.Duration {
		asked <- struct{}{}
		if len(vs) < 3 {
			return time.Hour
		}
		return 0
	}, func(vs []int) error {
		consumed = append(consumed, slices.Clone(vs))
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- q.SendWait(1) }()
	<-asked // 1 is waiting alone
	if err := q.Send(2); err != nil {
		t.Fatal(err)
	}
	if err := q.Send(3); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if len(consumed) != 1 || !slices.Equal(consumed[0], []int{1, 2, 3}) {
		t.Fatalf("consumed %v, want one batch of 1, 2, 3", consumed)
	}
}

// TestQueue_CloseEndsAGatherWait: Close does not wait for a gather's
// deadline: the batch waiting is consumed at once.
func TestQueue_CloseEndsAGatherWait(t *testing.T) {
	asked := make(chan struct{}, 1)
	var consumed []int
	q := NewGathering(Options{Depth: 8, Merge: 8}, func(vs []int) time.Duration {
		select {
		case asked <- struct{}{}:
		default:
		}
		return time.Hour
	}, func(vs []int) error {
		consumed = append(consumed, vs...)
		return nil
	})
	if err := q.Send(1); err != nil {
		t.Fatal(err)
	}
	<-asked
	closed := make(chan error, 1)
	go func() { closed <- q.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the gather's deadline")
	}
	if !slices.Equal(consumed, []int{1}) {
		t.Fatalf("consumed %v", consumed)
	}
}
