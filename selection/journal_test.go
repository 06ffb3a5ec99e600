package selection

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/selection/internal/batch"
	"github.com/airlock-mcp/airlock/upstream"
)

// journalStore records the entries of each Journal call.
type journalStore struct {
	Store
	mu    sync.Mutex
	calls [][]string
	wrote chan struct{}
	asked chan struct{} // closed once the journal first asked whether to wait
}

func (s *journalStore) Journal(_ context.Context, _ Lease, entries []Target) error {
	var ids []string
	for _, e := range entries {
		ids = append(ids, string(e.Outcome)+":"+e.ID)
	}
	s.mu.Lock()
	s.calls = append(s.calls, ids)
	s.mu.Unlock()
	s.wrote <- struct{}{}
	return nil
}

// gatherLab is a journal whose store records its calls, that has seen
// four callers at once and whose last commit with intents took wait.
func gatherLab(t *testing.T, wait time.Duration) (*journal, *journalStore) {
	t.Helper()
	st := &journalStore{wrote: make(chan struct{}, 16)}
	f := newFence(Lease{OperationID: "op", Epoch: 1, Expires: time.Now().Add(time.Hour)}, upstream.WallClock, time.Hour)
	j := newJournal(st, f, upstream.WallClock, func([]AuditEvent) {})
	_ = j.close()
	// The same queue, that says when its consumer first asks whether to
	// wait.
	asked := make(chan struct{})
	var once sync.Once
	j.q = batch.NewGathering(batch.Options{Depth: 1024, Merge: 512}, func(reqs []jreq) time.Duration {
		once.Do(func() { close(asked) })
		return j.gather(reqs)
	}, j.write)
	t.Cleanup(func() { _ = j.close() })
	j.callers, j.took, j.maxWait = 4, wait, wait
	st.asked = asked
	return j, st
}

func intentOf(id string) Target { return Target{ID: id, Outcome: TargetInFlight} }

// nextCall waits for the store's next Journal call and returns its entries.
func (s *journalStore) nextCall(t *testing.T) []string {
	t.Helper()
	select {
	case <-s.wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("no journal write")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[len(s.calls)-1]
}

// TestJournal_IntentsOfCallersBetweenTwoTargetsShareOneCommit: the
// journal's writers send faster than the store commits. An intent does
// not go to the store alone while the other writers seen are between two
// targets: the intents that arrive share its commit, instead of taking
// turns with it.
func TestJournal_IntentsOfCallersBetweenTwoTargetsShareOneCommit(t *testing.T) {
	j, st := gatherLab(t, time.Hour)
	var wg sync.WaitGroup
	for i := range 4 {
		if i == 1 {
			<-st.asked // the first intent is the journal's, alone
		}
		wg.Go(func() {
			if err := j.intent(intentOf(fmt.Sprint("t", i))); err != nil {
				t.Error(err)
			}
		})
	}
	got := st.nextCall(t)
	wg.Wait()
	slices.Sort(got)
	if want := []string{"in_flight:t0", "in_flight:t1", "in_flight:t2", "in_flight:t3"}; !slices.Equal(got, want) {
		t.Fatalf("the first commit held %v, want the four intents", got)
	}
}

// TestJournal_AnIntentDoesNotWaitForSlowWrites: when the other writers
// are sending writes that take longer than a commit, an intent is
// committed at once.
func TestJournal_AnIntentDoesNotWaitForSlowWrites(t *testing.T) {
	j, st := gatherLab(t, time.Hour)
	j.maxWait = time.Millisecond
	for i := range 3 {
		if err := j.intent(intentOf(fmt.Sprint("t", i))); err != nil {
			t.Fatal(err)
		}
		st.nextCall(t)
	}
	// Three writes are being sent, each expected back in two hours; a
	// commit takes one.
	j.mu.Lock()
	j.callers, j.send, j.took, j.maxWait = 4, 2*time.Hour, time.Hour, time.Hour
	j.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- j.intent(intentOf("t3")) }()
	if got := st.nextCall(t); !slices.Equal(got, []string{"in_flight:t3"}) {
		t.Fatalf("commit %v, want t3's intent alone", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestJournal_ACallerThatDoesNotComeIsWaitedForOnce: an intent waits at
// most the last commit's time for a caller that does not come, and the
// next intent does not wait for it again.
func TestJournal_ACallerThatDoesNotComeIsWaitedForOnce(t *testing.T) {
	j, st := gatherLab(t, time.Millisecond)
	if err := j.intent(intentOf("t0")); err != nil {
		t.Fatal(err)
	}
	if got := st.nextCall(t); !slices.Equal(got, []string{"in_flight:t0"}) {
		t.Fatalf("commit %v", got)
	}
	j.outcome(Target{ID: "t0", Outcome: TargetSucceeded})
	st.nextCall(t)
	j.mu.Lock()
	j.took, j.maxWait = time.Hour, time.Hour // were it waited for again, the test would time out
	j.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- j.intent(intentOf("t1")) }()
	if got := st.nextCall(t); !slices.Equal(got, []string{"in_flight:t1"}) {
		t.Fatalf("commit %v", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
