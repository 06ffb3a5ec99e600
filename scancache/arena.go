package scancache

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/airlock-mcp/airlock/redact"
)

// itemArena keeps a frozen scan's items, in order, in chunks of items
// separated by newlines (compact JSON holds none): a kept item costs its
// bytes and nothing more. Chunks start small (most scans keep few items)
// and double up to arenaChunk; a full chunk is sealed: redacted and
// compressed. A listing of 100,000 records then costs a few megabytes,
// and delivery decompresses the one or two chunks an answer reads.
type itemArena struct {
	chunks []arenaChunk
	n      int
	// red redacts a chunk before it is sealed (the store cannot redact
	// compressed bytes). Without one no chunk is sealed: the items stay
	// readable JSON, which the redacting store redacts when it saves them.
	red *redact.Redactor
}

// arenaChunk holds items first..first+n-1: open (raw, being filled) or
// sealed (z, compressed).
type arenaChunk struct {
	first, n int
	raw      []byte
	z        []byte
}

const (
	arenaFirstChunk = 4 << 10
	arenaChunkSize  = 256 << 10
)

var (
	// One compressor seals every chunk, one at a time: a compressor's
	// state is half a megabyte, too much to make per chunk, and sealing
	// takes about a millisecond.
	sealMu sync.Mutex
	sealer *flate.Writer

	flateReaders = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

func (a *itemArena) len() int { return a.n }

// size is what the arena holds in memory.
func (a *itemArena) size() int {
	total := 0
	for _, c := range a.chunks {
		total += cap(c.raw) + len(c.z)
	}
	return total
}

// add appends one item (compact JSON).
func (a *itemArena) add(item []byte) {
	if bytes.IndexByte(item, '\n') >= 0 {
		var b bytes.Buffer
		if json.Compact(&b, item) == nil {
			item = b.Bytes()
		}
	}
	last := len(a.chunks) - 1
	if last < 0 || a.chunks[last].z != nil {
		size := arenaFirstChunk
		if last >= 0 {
			// Past the first sealed chunk, chunks are full-sized from
			// the start: no copies as they grow.
			size = arenaChunkSize + arenaFirstChunk
		}
		a.chunks = append(a.chunks, arenaChunk{first: a.n, raw: make([]byte, 0, size)})
		last++
	}
	c := &a.chunks[last]
	c.raw = append(append(c.raw, item...), '\n')
	c.n++
	a.n++
	if len(c.raw) >= arenaChunkSize {
		a.seal(last)
	}
}

// seal redacts and compresses chunk i; without a redactor it leaves the
// chunk open, so that nothing reaches the store unread by one.
func (a *itemArena) seal(i int) {
	if a.red == nil {
		return
	}
	c := &a.chunks[i]
	raw := a.red.Bytes(c.raw)
	z := bytes.NewBuffer(make([]byte, 0, len(raw)/4))
	sealMu.Lock()
	var err error
	if sealer == nil {
		sealer, err = flate.NewWriter(z, flate.BestSpeed)
	} else {
		sealer.Reset(z)
	}
	if err == nil {
		if _, err = sealer.Write(raw); err == nil {
			err = sealer.Close()
		}
	}
	sealMu.Unlock()
	if err != nil {
		return // kept open: it costs more memory, nothing else
	}
	c.z, c.raw = bytes.Clone(z.Bytes()), nil
}

// chunkBytes returns chunk i's items, newline-terminated.
func (a *itemArena) chunkBytes(i int) ([]byte, error) {
	c := &a.chunks[i]
	if c.z == nil {
		return c.raw, nil
	}
	r := flateReaders.Get().(io.ReadCloser)
	defer flateReaders.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(c.z), nil); err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(make([]byte, 0, arenaChunkSize))
	if _, err := io.Copy(out, r); err != nil {
		return nil, fmt.Errorf("a sealed chunk of items: %w", err)
	}
	return out.Bytes(), nil
}

// each calls fn with items from, from+1, … until fn returns false or the
// items run out. An item's bytes stay valid after fn returns (its
// capacity ends with it: appending to it copies).
func (a *itemArena) each(from int, fn func(i int, item json.RawMessage) bool) error {
	if from >= a.n {
		return nil
	}
	c := sort.Search(len(a.chunks), func(c int) bool { return a.chunks[c].first > from }) - 1
	for ; c < len(a.chunks); c++ {
		b, err := a.chunkBytes(c)
		if err != nil {
			return err
		}
		for i := a.chunks[c].first; len(b) > 0; i++ {
			end := bytes.IndexByte(b, '\n')
			if end < 0 {
				return fmt.Errorf("a chunk of items is cut short")
			}
			if i >= from && !fn(i, b[:end:end]) {
				return nil
			}
			b = b[end+1:]
		}
	}
	return nil
}
