package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// frozenScan is a search_all scan kept between calls: the resumable scan
// and the matched items, projected, in scan order. Delivery pages through
// these items; it never re-reads the upstream for them. rev counts the
// times it was saved to the store; a cursor carries the rev it was issued
// at, so that a process holding an older copy reads the newer one.
type frozenScan struct {
	id          string
	fingerprint string
	scan        *upstream.Scan
	sink        *frozenSink
	lastUsed    time.Time
	rev         int
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
// Once shared with a store, every scan a cursor names is also saved there
// (under the same bounds), and a scan this process does not hold is read
// from it: a cursor continues on any process sharing the store.
type ScanCache struct {
	mu      sync.Mutex
	scans   map[string]*frozenScan
	ttl     time.Duration
	max     int
	maxByte int
	clock   upstream.Clock

	store   selection.ScanStore
	runtime *upstream.Runtime
	logger  *slog.Logger
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

// get returns the frozen scan id at revision rev or later: this process's
// copy, else the store's.
func (c *ScanCache) get(ctx context.Context, id string, rev int) (*frozenScan, bool) {
	c.mu.Lock()
	c.evictLocked()
	s, ok := c.scans[id]
	if ok && s.rev >= rev {
		s.lastUsed = c.clock.Now()
		c.mu.Unlock()
		return s, true
	}
	c.mu.Unlock()
	if c.store == nil {
		return nil, false
	}
	s, err := c.load(ctx, id)
	if err != nil {
		if !errors.Is(err, selection.ErrNotFound) {
			c.logger.Warn("a frozen scan could not be read from the store: its cursor reads as expired", "scan", id, "err", err)
		}
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s.lastUsed = c.clock.Now()
	c.scans[id] = s
	c.evictLocked()
	return s, true
}

// share keeps the cache's scans in st as well; rt resolves the resources
// of scans read back.
func (c *ScanCache) share(st selection.ScanStore, rt *upstream.Runtime, logger *slog.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c.store, c.runtime, c.logger = st, rt, logger
}

// savedScan is a frozen scan as the store keeps it: what rebuilds the
// scan's spec and sink, the items kept, and the scan's own state.
type savedScan struct {
	Fingerprint string            `json:"fingerprint"`
	Resource    string            `json:"resource"`
	Filter      map[string]any    `json:"filter"`
	GroupBy     []string          `json:"group_by,omitempty"`
	RequestID   string            `json:"request_id,omitempty"`
	Decision    []string          `json:"decision,omitempty"`
	Sink        bool              `json:"sink"`
	Fields      []string          `json:"fields,omitempty"`
	Cap         int               `json:"cap"`
	Items       []json.RawMessage `json:"items"`
	Dropped     int               `json:"dropped,omitempty"`
	Missing     []string          `json:"missing,omitempty"`
	State       json.RawMessage   `json:"state"`
}

// save stores fs at its next revision and returns that revision; the
// cursor about to name it carries it.
func (c *ScanCache) save(ctx context.Context, fs *frozenScan) (int, error) {
	state, err := fs.scan.State()
	if err != nil {
		return 0, err
	}
	spec := fs.scan.Spec()
	doc := savedScan{Fingerprint: fs.fingerprint, Resource: fs.scan.Resource().Name, Filter: spec.Filter, GroupBy: spec.GroupBy,
		RequestID: spec.RequestID, Decision: spec.Decision, Sink: spec.Sink != nil, State: state}
	fs.sink.mu.Lock()
	doc.Fields, doc.Cap, doc.Items, doc.Dropped, doc.Missing = fs.sink.fields, fs.sink.cap, fs.sink.items, fs.sink.dropped, sortedSet(fs.sink.missing)
	b, err := json.Marshal(doc)
	fs.sink.mu.Unlock()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	rev := fs.rev + 1
	now := c.clock.Now()
	bounds := selection.ScanBounds{TTL: c.ttl, MaxScans: c.max, MaxBytes: c.maxByte}
	c.mu.Unlock()
	if err := c.store.PutScan(ctx, selection.FrozenScan{ID: fs.id, Revision: rev, Doc: b, UsedAt: now}, bounds); err != nil {
		return 0, err
	}
	c.mu.Lock()
	fs.rev = max(fs.rev, rev)
	c.mu.Unlock()
	return rev, nil
}

// load reads a frozen scan from the store and rebuilds it.
func (c *ScanCache) load(ctx context.Context, id string) (*frozenScan, error) {
	c.mu.Lock()
	ttl := c.ttl
	c.mu.Unlock()
	sc, err := c.store.FrozenScan(ctx, id, c.clock.Now(), ttl)
	if err != nil {
		return nil, err
	}
	var doc savedScan
	dec := json.NewDecoder(bytes.NewReader(sc.Doc))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode frozen scan: %w", err)
	}
	var r *upstream.Resource
	ok := false
	if c.runtime != nil {
		r, ok = c.runtime.Resources[doc.Resource]
	}
	if !ok {
		return nil, fmt.Errorf("frozen scan of resource %q, which this configuration does not have", doc.Resource)
	}
	missing := map[string]bool{}
	for _, f := range doc.Missing {
		missing[f] = true
	}
	sink := &frozenSink{r: r, fields: doc.Fields, cap: doc.Cap, items: doc.Items, dropped: doc.Dropped, missing: missing}
	for _, it := range doc.Items {
		sink.bytes += len(it)
	}
	spec := upstream.ScanSpec{Filter: doc.Filter, GroupBy: doc.GroupBy, RequestID: doc.RequestID, Decision: doc.Decision}
	if doc.Sink {
		spec.Sink = sink
	}
	scan, err := r.ResumeScan(spec, doc.State)
	if err != nil {
		return nil, err
	}
	return &frozenScan{id: id, fingerprint: doc.Fingerprint, scan: scan, sink: sink, rev: sc.Revision}, nil
}

// cursor returns the continuation cursor of fs at delivery offset off.
// With a shared store the scan is saved first; when that fails the cursor
// still continues on this process (elsewhere it reads as expired, and the
// caller restarts).
func (d *Deps) scanCursor(fs *frozenScan, off int) string {
	p := cursorPayload{Scan: fs.id, Offset: off, Fingerprint: fs.fingerprint}
	if d.Scans.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rev, err := d.Scans.save(ctx, fs)
		if err != nil {
			d.Logger.Warn("a frozen scan could not be saved to the store: its cursor continues only on this process", "scan", fs.id, "err", err)
		}
		p.Rev = rev
	}
	return d.Cursors.encode(p)
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
