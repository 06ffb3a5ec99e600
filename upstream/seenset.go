package upstream

import "math/bits"

// seenSet is the set of keys (seenKey) a scan has read, for its duplicate
// check: one key for every record of the scope, so a scan of a million
// records holds a million. A Go map of them took about 31 bytes a key;
// open-addressed tables (linear probing, at most 80% full, grown by half)
// take 10 to 15. The keys are spread over seenShards tables that grow one
// at a time: one table of a million keys held the old and the new array
// together while it grew, 21 MB at the last growth, where a shard holds a
// sixty-fourth of that beside the rest.
type seenSet struct {
	shards [seenShards]seenTable
	n      int  // keys in the shards
	zero   bool // the key 0, which slots cannot hold
}

// seenShards is how many tables a seenSet spreads its keys over.
const seenShards = 64

// seenTable is one shard: an open-addressed table of mixed keys.
type seenTable struct {
	slots []uint64 // 0 is an empty slot
	n     int
}

// add adds k and reports whether it was not there yet.
func (s *seenSet) add(k uint64) bool {
	if k == 0 {
		added := !s.zero
		s.zero = true
		return added
	}
	m := mix(k)
	// The shard is chosen by the low bits, the slot by the high ones
	// (seenTable.slot), so that the two do not correlate.
	t := &s.shards[m%seenShards]
	if (t.n+1)*5 > len(t.slots)*4 {
		t.grow()
	}
	if !t.put(k, m) {
		return false
	}
	t.n++
	s.n++
	return true
}

// mix is murmur3's finalizer: every bit of the key moves every bit that
// picks a shard or a slot.
func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// put places k, whose mixed bits are m, in slots; false when it is there
// already.
func (t *seenTable) put(k, m uint64) bool {
	i := t.slot(m)
	for {
		switch t.slots[i] {
		case 0:
			t.slots[i] = k
			return true
		case k:
			return false
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// slot is the first slot of a key whose mixed bits are m: its high bits
// scaled to the table's size.
func (t *seenTable) slot(m uint64) int {
	hi, _ := bits.Mul64(m, uint64(len(t.slots)))
	return int(hi)
}

func (t *seenTable) grow() {
	old := t.slots
	t.slots = make([]uint64, max(8, len(old)+len(old)/2))
	for _, k := range old {
		if k != 0 {
			t.put(k, mix(k))
		}
	}
}

// len is how many keys the set holds.
func (s *seenSet) len() int {
	if s.zero {
		return s.n + 1
	}
	return s.n
}

// each calls fn with every key, in no particular order.
func (s *seenSet) each(fn func(uint64)) {
	if s.zero {
		fn(0)
	}
	for i := range s.shards {
		for _, k := range s.shards[i].slots {
			if k != 0 {
				fn(k)
			}
		}
	}
}
