package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// testApprovedCategoriesAreAddedNotReplaced: values added at once by
// several callers are all kept, a value added twice is kept once, and
// each (action, dimension) keeps its own set.
func testApprovedCategoriesAreAddedNotReplaced(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	seen, err := s.ApprovedCategories(ctx, "pause", "region")
	if err != nil || seen == nil || len(seen) != 0 {
		t.Fatalf("nothing approved yet: %v %v; want an empty set", seen, err)
	}
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := s.AddApprovedCategories(ctx, "pause", "region", []string{`"eu"`, fmt.Sprintf(`"r%d"`, i)}); err != nil {
				t.Errorf("add: %v", err)
			}
		})
	}
	wg.Wait()
	if err := s.AddApprovedCategories(ctx, "pause", "owner", []string{"null"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddApprovedCategories(ctx, "pause", "region", nil); err != nil {
		t.Fatalf("adding nothing: %v", err)
	}
	seen, err = s.ApprovedCategories(ctx, "pause", "region")
	if err != nil || len(seen) != n+1 || !seen[`"eu"`] {
		t.Fatalf("after %d callers added at once: %v %v; want eu and r0…r%d", n, seen, err, n-1)
	}
	for i := range n {
		if !seen[fmt.Sprintf(`"r%d"`, i)] {
			t.Fatalf("a concurrent caller's value was lost: r%d not in %v", i, seen)
		}
	}
	if other, err := s.ApprovedCategories(ctx, "resume", "region"); err != nil || len(other) != 0 {
		t.Fatalf("another action's values: %v %v; want none", other, err)
	}
	if owner, err := s.ApprovedCategories(ctx, "pause", "owner"); err != nil || len(owner) != 1 || !owner["null"] {
		t.Fatalf("another dimension's values: %v %v", owner, err)
	}
}

// testNoncesAreUsedOnceAndForgottenAfterTheirTime: of several callers
// using one nonce at once, one is first and every caller is told which;
// a later use is told the same; once the time it was kept for has passed,
// the next use of any nonce drops it.
func testNoncesAreUsedOnceAndForgottenAfterTheirTime(t *testing.T, o Opener) {
	ctx := context.Background()
	s := o.Open(t)
	keep := t0.Add(time.Minute)
	const n = 8
	var wg sync.WaitGroup
	firsts := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			first, err := s.UseNonce(ctx, "n1", fmt.Sprint("req_", i), keep, t0)
			if err != nil {
				t.Errorf("use nonce: %v", err)
				return
			}
			firsts <- first
		})
	}
	wg.Wait()
	close(firsts)
	winner := ""
	for f := range firsts {
		if winner == "" {
			winner = f
		}
		if f != winner || f == "" {
			t.Fatalf("callers were told different first users: %q and %q", winner, f)
		}
	}
	if first, err := s.UseNonce(ctx, "n1", "req_late", keep, t0.Add(30*time.Second)); err != nil || first != winner {
		t.Fatalf("a later use: %q %v; want %q", first, err, winner)
	}
	if first, err := s.UseNonce(ctx, "n2", "req_other", t0.Add(3*time.Minute), t0.Add(2*time.Minute)); err != nil || first != "req_other" {
		t.Fatalf("another nonce: %q %v", first, err)
	}
	if first, err := s.UseNonce(ctx, "n1", "req_again", t0.Add(3*time.Minute), t0.Add(2*time.Minute)); err != nil || first != "req_again" {
		t.Fatalf("a nonce past the time it was kept for: %q %v; want it forgotten", first, err)
	}
	if first, err := s.UseNonce(ctx, "n2", "req_third", t0.Add(3*time.Minute), t0.Add(2*time.Minute)); err != nil || first != "req_other" {
		t.Fatalf("a nonce still kept: %q %v; want req_other", first, err)
	}
	if o.Reopen != nil {
		s = o.Reopen(t, s)
		if first, err := s.UseNonce(ctx, "n2", "req_fourth", t0.Add(3*time.Minute), t0.Add(2*time.Minute)); err != nil || first != "req_other" {
			t.Fatalf("after a reopen: %q %v; want req_other", first, err)
		}
		if seen, err := s.ApprovedCategories(ctx, "pause", "region"); err != nil || len(seen) != 0 {
			t.Fatalf("after a reopen: %v %v", seen, err)
		}
	}
}
