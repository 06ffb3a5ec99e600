package main

import (
	"os"
	"sync"
	"testing"
)

// trials runs crash trials as subtests, several at once whatever -parallel
// says: a trial mostly waits (for a lease to expire, for writes the
// upstream holds), so running a few together shortens the suite without
// dropping one. Under AIRLOCK_TEST_HEAVY (many more trials, with -race)
// two run at once, so that a slow machine does not turn the trials' own
// timeouts into failures.
type trials struct {
	t   *testing.T
	sem chan struct{}
	wg  sync.WaitGroup
}

func newTrials(t *testing.T) *trials {
	workers := 4
	if os.Getenv("AIRLOCK_TEST_HEAVY") == "1" {
		workers = 2
	}
	return &trials{t: t, sem: make(chan struct{}, workers)}
}

// run starts the subtest name once a slot is free.
func (r *trials) run(name string, f func(t *testing.T)) {
	r.sem <- struct{}{}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() { <-r.sem }()
		r.t.Run(name, f)
	}()
}

// wait returns once every subtest started has ended.
func (r *trials) wait() { r.wg.Wait() }
