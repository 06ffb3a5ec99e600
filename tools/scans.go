package tools

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/upstream"
)

// frozenScan is a search_all scan kept between calls: the resumable scan
// and the matched items, projected, in scan order. Delivery pages through
// these items; it never re-reads the upstream for them.
type frozenScan struct {
	id          string
	fingerprint string
	scan        *upstream.Scan
	sink        *frozenSink
	lastUsed    time.Time
}

// frozenSink keeps projected items up to a cap; past the cap it only counts.
type frozenSink struct {
	mu      sync.Mutex
	r       *upstream.Resource
	fields  []string
	items   []json.RawMessage
	bytes   int
	cap     int
	dropped int
	missing map[string]bool
}

func (f *frozenSink) Add(it *upstream.Item) error {
	proj, miss := f.r.Project(it.Doc, f.fields)
	b, err := json.Marshal(proj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range miss {
		f.missing[m] = true
	}
	if len(f.items) >= f.cap {
		f.dropped++
		return nil
	}
	f.items = append(f.items, b)
	f.bytes += len(b)
	return nil
}

// wireCost is what an item costs in a tool result: once in the structured
// content and once, escaped, in the text copy.
func wireCost(item json.RawMessage) int {
	text, err := json.Marshal(string(item))
	if err != nil {
		return 3 * len(item)
	}
	return len(item) + len(text) + 2
}

// slice returns items from off, bounded by count and by the wire cost of
// both copies (at least one item when any remain, so that delivery always
// progresses).
func (f *frozenSink) slice(off, count, budget int) ([]json.RawMessage, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off >= len(f.items) || count <= 0 {
		return nil, len(f.items)
	}
	var out []json.RawMessage
	used := 0
	for i := off; i < len(f.items) && len(out) < count; i++ {
		n := wireCost(f.items[i])
		if len(out) > 0 && used+n > budget {
			break
		}
		out = append(out, f.items[i])
		used += n
	}
	return out, len(f.items)
}

// ScanCache holds frozen scans for a while, least recently used first out.
type ScanCache struct {
	mu      sync.Mutex
	scans   map[string]*frozenScan
	ttl     time.Duration
	max     int
	maxByte int
	clock   upstream.Clock
}

// NewScanCache returns a cache of up to max scans kept for ttl, holding at
// most maxBytes of items in all.
func NewScanCache(ttl time.Duration, max, maxBytes int, clock upstream.Clock) *ScanCache {
	if clock == nil {
		clock = upstream.WallClock
	}
	return &ScanCache{scans: map[string]*frozenScan{}, ttl: ttl, max: max, maxByte: maxBytes, clock: clock}
}

func (c *ScanCache) put(s *frozenScan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.lastUsed = c.clock.Now()
	c.scans[s.id] = s
	c.evictLocked()
}

func (c *ScanCache) get(id string) (*frozenScan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked()
	s, ok := c.scans[id]
	if ok {
		s.lastUsed = c.clock.Now()
	}
	return s, ok
}

func (c *ScanCache) evictLocked() {
	now := c.clock.Now()
	total := 0
	for id, s := range c.scans {
		if now.Sub(s.lastUsed) > c.ttl {
			delete(c.scans, id)
			continue
		}
		s.sink.mu.Lock()
		total += s.sink.bytes
		s.sink.mu.Unlock()
	}
	for len(c.scans) > c.max || (total > c.maxByte && len(c.scans) > 1) {
		var oldest *frozenScan
		for _, s := range c.scans {
			if oldest == nil || s.lastUsed.Before(oldest.lastUsed) {
				oldest = s
			}
		}
		oldest.sink.mu.Lock()
		total -= oldest.sink.bytes
		oldest.sink.mu.Unlock()
		delete(c.scans, oldest.id)
	}
}
