package redact

import (
	"math/bits"
	"slices"
)

// A secret is looked for in some hundred encoded forms (see encodedForms):
// searching a text for each in turn would make the cost of the common case,
// a text without a secret, grow with their number. A table finds every
// form of at least minLong bytes in one pass whatever their number: it
// reads the text's eight-byte windows at every stride-th position, and
// knows each form by its windows at its first stride offsets (an
// occurrence of a form starting at p covers a read window at p+o for one
// o < stride). A bitmap of the windows' hashes answers most reads; a hit is
// checked against the sorted windows and then against the forms.

const (
	window  = 8
	stride  = 8
	minLong = window + stride - 1
)

// table finds the occurrences of a set of byte strings of at least
// minLong bytes. It is immutable once built.
type table struct {
	pats [][]byte
	// keys are the windows, sorted; refs[i] is the pattern and offset of
	// keys[i] (pattern<<4 | offset).
	keys []uint64
	refs []uint32
	// filter has a bit set for each window's hash (shift picks its bits).
	filter []uint64
	shift  uint
}

// newTable returns a table of pats (each at least minLong bytes), or nil
// when there are none.
func newTable(pats [][]byte) *table {
	if len(pats) == 0 {
		return nil
	}
	t := &table{pats: pats}
	type entry struct {
		key uint64
		ref uint32
	}
	entries := make([]entry, 0, len(pats)*stride)
	for i, p := range pats {
		for o := range stride {
			entries = append(entries, entry{load64(p, o), uint32(i)<<4 | uint32(o)})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return int(a.ref) - int(b.ref)
	})
	t.keys, t.refs = make([]uint64, len(entries)), make([]uint32, len(entries))
	for i, e := range entries {
		t.keys[i], t.refs[i] = e.key, e.ref
	}
	// About 64 bits per window: a read window that is none of them
	// passes the filter about once in 64, and the filter stays small.
	size := min(max(bits.Len(uint(len(entries)*64)), 12), 20)
	t.filter = make([]uint64, (1<<size)/64)
	t.shift = uint(64 - size)
	for _, k := range t.keys {
		h := t.hash(k)
		t.filter[h>>6] |= 1 << (h & 63)
	}
	return t
}

func (t *table) hash(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> t.shift }

// load64 reads the eight bytes of b at i, little-endian.
func load64[T ~string | ~[]byte](b T, i int) uint64 {
	_ = b[i+7]
	return uint64(b[i]) | uint64(b[i+1])<<8 | uint64(b[i+2])<<16 | uint64(b[i+3])<<24 |
		uint64(b[i+4])<<32 | uint64(b[i+5])<<40 | uint64(b[i+6])<<48 | uint64(b[i+7])<<56
}

// tableScan calls found with the start and the pattern's index of every
// occurrence of a pattern in b, each once, in no particular order, until
// it returns false. A nil table finds nothing.
func tableScan[T ~string | ~[]byte](t *table, b T, found func(start, pat int) bool) {
	if t == nil {
		return
	}
	for q := 0; q+window <= len(b); q += stride {
		v := load64(b, q)
		h := t.hash(v)
		if t.filter[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		j, _ := slices.BinarySearch(t.keys, v)
		for ; j < len(t.keys) && t.keys[j] == v; j++ {
			i := int(t.refs[j] >> 4)
			p := t.pats[i]
			start := q - int(t.refs[j]&15)
			if start < 0 || start+len(p) > len(b) || string(b[start:start+len(p)]) != string(p) {
				continue
			}
			if !found(start, i) {
				return
			}
		}
	}
}

// tableAny reports whether b holds a pattern.
func tableAny[T ~string | ~[]byte](t *table, b T) bool {
	any := false
	tableScan(t, b, func(int, int) bool {
		any = true
		return false
	})
	return any
}
