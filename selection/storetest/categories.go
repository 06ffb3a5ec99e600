package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/selection"
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

// MetaRowsMoved checks a store opened over a database that kept approved
// group values and used approval nonces in meta, seeded as the stores'
// migration tests seed it: the values read back as approved and the
// nonces as used, meta no longer holds them, and a row whose value is not
// a JSON list, or that is something else, stays as it was.
func MetaRowsMoved(t *testing.T, s selection.Store) {
	t.Helper()
	ctx := context.Background()
	region, err := s.ApprovedCategories(ctx, "pause_collection", "region")
	if err != nil || len(region) != 2 || !region[`"eu"`] || !region[`"us"`] {
		t.Fatalf("approved regions: %v %v", region, err)
	}
	plan, err := s.ApprovedCategories(ctx, "pause_collection", "plan")
	if err != nil || len(plan) != 2 || !plan["null"] || !plan[`{"tier":1}`] {
		t.Fatalf("approved plans: %v %v", plan, err)
	}
	if _, err := s.Meta(ctx, "seen/pause_collection/region"); !errors.Is(err, selection.ErrNotFound) {
		t.Fatalf("the moved list is still in meta: %v", err)
	}
	if v, err := s.Meta(ctx, "seen/cancel/region"); err != nil || string(v) != "not json" {
		t.Fatalf("a row that is not a list: %q %v; want it left as it was", v, err)
	}
	if v, err := s.Meta(ctx, "seen/cancel/owner"); err != nil || string(v) != `{"a":"b"}` {
		t.Fatalf("a row that is not a list: %q %v; want it left as it was", v, err)
	}
	if other, err := s.ApprovedCategories(ctx, "cancel", "owner"); err != nil || len(other) != 0 {
		t.Fatalf("values read from a row that is not a list: %v %v", other, err)
	}
	if v, err := s.Meta(ctx, "task/t1"); err != nil || string(v) != "{}" {
		t.Fatalf("another meta row: %q %v", v, err)
	}
	now := time.Now()
	if first, err := s.UseNonce(ctx, "6f1c", "req_replay", now.Add(time.Hour), now); err != nil || first != "req_first" {
		t.Fatalf("a nonce used before the move: %q %v; want req_first", first, err)
	}
	if first, err := s.UseNonce(ctx, "6f1c", "req_later", now.Add(3*24*time.Hour), now.Add(2*24*time.Hour)); err != nil || first != "req_later" {
		t.Fatalf("a moved nonce two days later: %q %v; want it dropped", first, err)
	}
}
