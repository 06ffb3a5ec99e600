package upstream

import "math/bits"

// seenSet is the set of keys (seenKey) a scan has read, for its duplicate
// check: one key for every record of the scope, so a scan of a million
// records holds a million. A Go map of them took about 31 bytes a key;
// this open-addressed table (linear probing, at most 80% full, grown by
// half) takes 10 to 15.
type seenSet struct {
	slots []uint64 // 0 is an empty slot
	n     int      // keys in slots
	zero  bool     // the key 0, which slots cannot hold
}

// add adds k and reports whether it was not there yet.
func (s *seenSet) add(k uint64) bool {
	if k == 0 {
		added := !s.zero
		s.zero = true
		return added
	}
	if (s.n+1)*5 > len(s.slots)*4 {
		s.grow()
	}
	if !s.put(k) {
		return false
	}
	s.n++
	return true
}

// put places k in slots; false when it is there already.
func (s *seenSet) put(k uint64) bool {
	i := s.slot(k)
	for {
		switch s.slots[i] {
		case 0:
			s.slots[i] = k
			return true
		case k:
			return false
		}
		if i++; i == len(s.slots) {
			i = 0
		}
	}
}

// slot is k's first slot: its mixed bits scaled to the table's size.
func (s *seenSet) slot(k uint64) int {
	// murmur3's finalizer: every bit of the key moves the high bits the
	// scaling reads.
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	hi, _ := bits.Mul64(k, uint64(len(s.slots)))
	return int(hi)
}

func (s *seenSet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(64, len(old)+len(old)/2))
	for _, k := range old {
		if k != 0 {
			s.put(k)
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
	for _, k := range s.slots {
		if k != 0 {
			fn(k)
		}
	}
}
