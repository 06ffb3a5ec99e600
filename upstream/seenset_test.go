package upstream

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSeenSet_HoldsWhatAMapHolds: the scan's duplicate check answers as a
// map of the same keys does, through growth, with the key 0 and with keys
// added twice, and lists every key once.
func TestSeenSet_HoldsWhatAMapHolds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 42))
	var s seenSet
	want := map[uint64]bool{}
	keys := []uint64{0, 1, ^uint64(0)}
	for range 50_000 {
		keys = append(keys, rng.Uint64())
		if rng.IntN(10) == 0 {
			keys = append(keys, uint64(rng.IntN(1000))) // small keys, which share high bits
		}
	}
	for i := range 5_000 {
		keys = append(keys, keys[i*7%len(keys)]) // again
	}
	for _, k := range keys {
		if got := s.add(k); got != !want[k] {
			t.Fatalf("add(%d) = %v with the key %s", k, got, map[bool]string{true: "there", false: "absent"}[want[k]])
		}
		want[k] = true
	}
	if s.len() != len(want) {
		t.Fatalf("len %d, want %d", s.len(), len(want))
	}
	var listed []uint64
	s.each(func(k uint64) { listed = append(listed, k) })
	slices.Sort(listed)
	if len(listed) != len(want) || len(slices.Compact(slices.Clone(listed))) != len(want) {
		t.Fatalf("each listed %d keys (%d distinct), want each of the %d once", len(listed), len(slices.Compact(slices.Clone(listed))), len(want))
	}
	for _, k := range listed {
		if !want[k] {
			t.Fatalf("each listed %d, never added", k)
		}
	}
	for i, sh := range s.shards {
		if n := len(sh.slots); sh.n*5 > n*4 {
			t.Fatalf("shard %d: %d keys in %d slots: over 80%% full", i, sh.n, n)
		}
	}
}
