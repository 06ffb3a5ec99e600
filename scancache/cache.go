// Package scancache keeps search_all's frozen scans between calls: the
// resumable scan and the items it matched, in a compact arena, so that a
// continuation cursor pages through what was scanned and continues the
// same scan, on this process or, once the cache is shared with a store,
// on any process sharing it. It never calls an upstream by itself (a scan
// runs only when a tool runs it) and never holds an unredacted chunk once
// it is sealed.
package scancache

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// Scan is a search_all scan kept between calls: the resumable scan and the
// matched items, projected, in scan order. Delivery pages through these
// items; it never re-reads the upstream for them. ID, Fingerprint, Scan
// and Sink are set by NewScan and never change.
//
// rev counts the times it was saved to the store; a cursor carries the rev
// it was issued at, so that a process holding an older copy reads the
// newer one. changed says the scan ran since the store last had it (a new
// scan is changed); savedAt is when the store last had it. Delivery alone
// changes nothing (the offset lives in the cursor), so it saves nothing.
// They are guarded by the cache's lock.
type Scan struct {
	ID          string
	Fingerprint string
	Scan        *upstream.Scan
	Sink        *Sink
	lastUsed    time.Time
	rev         int
	changed     bool
	savedAt     time.Time
	// size is its footprint when last kept.
	size int
}

// NewScan is a scan not kept yet: id names it in cursors, fingerprint
// binds it to the query that made it.
func NewScan(id, fingerprint string, scan *upstream.Scan, sink *Sink) *Scan {
	return &Scan{ID: id, Fingerprint: fingerprint, Scan: scan, Sink: sink}
}

// NewSink keeps the items a scan of r matches, projected to fields, up to
// cap of them (past it, it only counts); red redacts each chunk of items
// before it is compressed (nil: chunks stay open, for the redacting store
// to redact).
func NewSink(r *upstream.Resource, fields []string, cap int, red *redact.Redactor) *Sink {
	return &Sink{r: r, fields: fields, cap: cap, missing: map[string]bool{}, items: itemArena{red: red}}
}

// Sink keeps projected items up to a cap; past the cap it only counts.
type Sink struct {
	mu      sync.Mutex
	r       *upstream.Resource
	fields  []string
	items   itemArena
	cap     int
	dropped int
	missing map[string]bool
	// enc encodes one item at a time into buf (Add runs one item at a
	// time: the scan serializes its sink calls).
	buf bytes.Buffer
	enc *json.Encoder
}

// Add keeps an item a scan matched (the scan serializes its calls).
func (f *Sink) Add(it *upstream.Item) error {
	proj, miss := f.r.Project(it.Doc, f.fields)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range miss {
		f.missing[m] = true
	}
	if f.items.len() >= f.cap {
		f.dropped++
		return nil
	}
	if f.enc == nil {
		f.enc = json.NewEncoder(&f.buf)
	}
	f.buf.Reset()
	if err := f.enc.Encode(proj); err != nil {
		return err
	}
	f.items.add(bytes.TrimSuffix(f.buf.Bytes(), []byte("\n")))
	if f.buf.Cap() > 64<<10 {
		f.buf = bytes.Buffer{} // one large item does not stay behind
		f.enc = nil
	}
	return nil
}

// WireCost is what an item costs in a tool result: once in the structured
// content and once, escaped, in the text copy, as it leaves airlock (a
// number beyond 2^53 as a string: envelope.IJSON).
func WireCost(item json.RawMessage) int {
	item = envelope.IJSON(item)
	text, err := json.Marshal(string(item))
	if err != nil {
		return 3 * len(item)
	}
	return len(item) + len(text) + 2
}

// Slice returns items from off, bounded by count and by the wire cost of
// both copies (at least one item when any remain, so that delivery always
// progresses), and how many items the sink holds.
func (f *Sink) Slice(off, count, budget int) ([]json.RawMessage, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.items.len()
	if off >= n || count <= 0 {
		return nil, n
	}
	var out []json.RawMessage
	used := 0
	// A sealed chunk that does not read back (it never happens: it is
	// in memory) stops delivery where it is: the answer says more remain.
	_ = f.items.each(off, func(_ int, it json.RawMessage) bool {
		c := WireCost(it)
		if len(out) > 0 && used+c > budget {
			return false
		}
		out = append(out, it)
		used += c
		return len(out) < count
	})
	return out, n
}

// Cut says what the sink left out: the matches past its cap (dropped) and
// the requested fields some item lacked (missing, sorted).
func (f *Sink) Cut() (dropped int, missing []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped, slices.Sorted(maps.Keys(f.missing))
}

// Cache holds frozen scans for a while, least recently used first out.
// Once shared with a store, every scan a cursor names is also in the store
// (under the same bounds: saved when it was scanned further, and before
// the store's copy could expire unused), and a scan this process does not
// hold is read from it: a cursor continues on any process sharing the
// store.
type Cache struct {
	mu      sync.Mutex
	scans   map[string]*Scan
	ttl     time.Duration
	max     int
	maxByte int
	clock   upstream.Clock

	store   selection.ScanStore
	runtime *upstream.Runtime
	logger  *slog.Logger
	// sealer seals the upstream's continuations in the scans the store
	// keeps (see upstream.StateSealer).
	sealer upstream.StateSealer
	// memory bounds what this process holds once the store keeps the
	// scans too (0: maxByte alone).
	memory int
}

// DefaultMemory is what a process holds of the frozen scans it shares
// with a store: the most recently used, up to 16 MiB (about three listings
// of 100,000 items); the others are read back from the store when their
// cursor comes.
const DefaultMemory = 16 << 20

// New returns a cache of up to max scans kept for ttl, holding at most
// maxBytes in all. Once shared with a store, the store keeps as many and
// this process holds at most DefaultMemory of them (see SetMemory).
func New(ttl time.Duration, max, maxBytes int, clock upstream.Clock) *Cache {
	if clock == nil {
		clock = upstream.WallClock
	}
	return &Cache{scans: map[string]*Scan{}, ttl: ttl, max: max, maxByte: maxBytes, clock: clock, memory: DefaultMemory}
}

// Release lets go of every scan the store holds as this process has it,
// and returns how many it let go: called when no call is running, it
// leaves nothing in memory that a cursor could not read back from the
// store. Without a store it does nothing.
func (c *Cache) Release() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == nil {
		return 0
	}
	n := 0
	for id, s := range c.scans {
		if s.rev > 0 && !s.changed {
			delete(c.scans, id)
			n++
		}
	}
	return n
}

// SetMemory bounds what this process holds of the scans it shares with a
// store, in bytes (at least one scan is held: the one in use).
func (c *Cache) SetMemory(bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.memory = bytes
	c.evictLocked()
}

// put keeps s (again), with what it now holds.
func (c *Cache) put(s *Scan) {
	size := s.footprint()
	c.mu.Lock()
	defer c.mu.Unlock()
	s.lastUsed, s.size = c.clock.Now(), size
	c.scans[s.ID] = s
	c.evictLocked()
}

// seenBytes is about what the scan's duplicate check holds per item read.
const seenBytes = 24

// footprint is about what s holds in memory: its items and its scan's
// duplicate check.
func (s *Scan) footprint() int {
	s.Sink.mu.Lock()
	n := s.Sink.items.size()
	s.Sink.mu.Unlock()
	return n + seenBytes*s.Scan.Outcome().ItemsScanned
}

// Get returns the frozen scan id at revision rev or later: this process's
// copy, else the store's.
func (c *Cache) Get(ctx context.Context, id string, rev int) (*Scan, bool) {
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
	size := s.footprint()
	c.mu.Lock()
	defer c.mu.Unlock()
	s.lastUsed, s.size = c.clock.Now(), size
	c.scans[id] = s
	c.evictLocked()
	return s, true
}

// Share keeps the cache's scans in st as well; rt resolves the resources
// of scans read back, and sealer seals and opens their continuations
// (every process sharing st must open what another sealed). Call it once,
// before the cache is used.
func (c *Cache) Share(st selection.ScanStore, rt *upstream.Runtime, logger *slog.Logger, sealer upstream.StateSealer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c.store, c.runtime, c.logger, c.sealer = st, rt, logger, sealer
}

// savedScan is a frozen scan as the store keeps it: what rebuilds the
// scan's spec and sink, and the scan's own state. The items kept are the
// sealed chunks (redacted and compressed, in order) and then, first in the
// document, the open chunk's items as "items" (see encodeSaved).
type savedScan struct {
	Fingerprint string          `json:"fingerprint"`
	Resource    string          `json:"resource"`
	Filter      map[string]any  `json:"filter"`
	GroupBy     []string        `json:"group_by,omitempty"`
	RequestID   string          `json:"request_id,omitempty"`
	Decision    []string        `json:"decision,omitempty"`
	Sink        bool            `json:"sink"`
	Fields      []string        `json:"fields,omitempty"`
	Cap         int             `json:"cap"`
	Sealed      []savedChunk    `json:"sealed,omitempty"`
	Dropped     int             `json:"dropped,omitempty"`
	Missing     []string        `json:"missing,omitempty"`
	State       json.RawMessage `json:"state"`
}

// savedChunk is a sealed chunk of items: n items, compressed.
type savedChunk struct {
	N int    `json:"n"`
	Z []byte `json:"z"`
}

// encodeSaved writes doc with, as its first members, the open chunk's
// items ("items") and the sealed chunks ("sealed", base64), straight into
// one buffer of the document's size.
func encodeSaved(doc savedScan, items *itemArena) ([]byte, error) {
	doc.Sealed = nil
	rest, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	size := len(`{"items":[],"sealed":[],`) + len(rest)
	for _, c := range items.chunks {
		if c.z != nil {
			size += len(`{"n":,"z":""},`) + 20 + base64.StdEncoding.EncodedLen(len(c.z))
		} else {
			size += len(c.raw)
		}
	}
	out := make([]byte, 0, size)
	out = append(out, `{"items":[`...)
	for _, c := range items.chunks {
		for open := c.raw; len(open) > 0; {
			end := bytes.IndexByte(open, '\n')
			if end < 0 {
				return nil, errors.New("a chunk of items is cut short")
			}
			if out[len(out)-1] != '[' {
				out = append(out, ',')
			}
			out, open = append(out, open[:end]...), open[end+1:]
		}
	}
	out = append(out, `],"sealed":[`...)
	for _, c := range items.chunks {
		if c.z == nil {
			continue
		}
		if out[len(out)-1] != '[' {
			out = append(out, ',')
		}
		out = append(out, `{"n":`...)
		out = strconv.AppendInt(out, int64(c.n), 10)
		out = append(out, `,"z":"`...)
		out = base64.StdEncoding.AppendEncode(out, c.z)
		out = append(out, `"}`...)
	}
	out = append(out, "],"...)
	return append(out, rest[1:]...), nil
}

// decodeSaved reads a document encodeSaved wrote: the sealed chunks as
// they are, the open items one at a time into the arena, the filter's
// numbers as json.Number.
func decodeSaved(b []byte, red *redact.Redactor) (savedScan, *itemArena, error) {
	var in struct {
		savedScan
		Filter json.RawMessage `json:"filter"`
		Items  json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return savedScan{}, nil, err
	}
	doc := in.savedScan
	if len(in.Filter) > 0 {
		dec := json.NewDecoder(bytes.NewReader(in.Filter))
		dec.UseNumber()
		if err := dec.Decode(&doc.Filter); err != nil {
			return savedScan{}, nil, err
		}
	}
	items := &itemArena{red: red}
	for _, c := range doc.Sealed {
		items.chunks = append(items.chunks, arenaChunk{first: items.n, n: c.N, z: c.Z})
		items.n += c.N
	}
	doc.Sealed = nil
	if len(in.Items) > 0 && string(in.Items) != "null" {
		dec := json.NewDecoder(bytes.NewReader(in.Items))
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return savedScan{}, nil, errors.New("items are not an array")
		}
		var raw json.RawMessage
		for dec.More() {
			if err := dec.Decode(&raw); err != nil {
				return savedScan{}, nil, err
			}
			items.add(raw)
		}
	}
	return doc, items, nil
}

// save stores fs at its next revision when it changed since the store last
// had it (or the store's copy is half way to expiring unused), and returns
// the revision the cursor about to name it carries.
func (c *Cache) save(ctx context.Context, fs *Scan) (int, error) {
	c.mu.Lock()
	now := c.clock.Now()
	if !fs.changed && fs.rev > 0 && now.Sub(fs.savedAt) < c.ttl/2 {
		rev := fs.rev
		c.mu.Unlock()
		return rev, nil
	}
	rev := fs.rev + 1
	bounds := selection.ScanBounds{TTL: c.ttl, MaxScans: c.max, MaxBytes: c.maxByte}
	sealer := c.sealer
	c.mu.Unlock()
	state, err := fs.Scan.State(sealer)
	if err != nil {
		return 0, err
	}
	spec := fs.Scan.Spec()
	doc := savedScan{Fingerprint: fs.Fingerprint, Resource: fs.Scan.Resource().Name, Filter: spec.Filter, GroupBy: spec.GroupBy,
		RequestID: spec.RequestID, Decision: spec.Decision, Sink: spec.Sink != nil, State: state}
	fs.Sink.mu.Lock()
	doc.Fields, doc.Cap, doc.Dropped, doc.Missing = fs.Sink.fields, fs.Sink.cap, fs.Sink.dropped, slices.Sorted(maps.Keys(fs.Sink.missing))
	b, err := encodeSaved(doc, &fs.Sink.items)
	fs.Sink.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if err := c.store.PutScan(ctx, selection.FrozenScan{ID: fs.ID, Revision: rev, Doc: b, UsedAt: now}, bounds); err != nil {
		return 0, err
	}
	c.mu.Lock()
	if rev > fs.rev {
		fs.rev, fs.changed, fs.savedAt = rev, false, now
	}
	c.mu.Unlock()
	return rev, nil
}

// Ran notes that fs read further: the store's copy is behind.
func (c *Cache) Ran(fs *Scan) {
	c.mu.Lock()
	fs.changed = true
	c.mu.Unlock()
}

// load reads a frozen scan from the store and rebuilds it.
func (c *Cache) load(ctx context.Context, id string) (*Scan, error) {
	c.mu.Lock()
	ttl, sealer := c.ttl, c.sealer
	c.mu.Unlock()
	now := c.clock.Now()
	sc, err := c.store.FrozenScan(ctx, id, now, ttl)
	if err != nil {
		return nil, err
	}
	var red *redact.Redactor
	if c.runtime != nil {
		red = c.runtime.Redactor
	}
	doc, items, err := decodeSaved(sc.Doc, red)
	if err != nil {
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
	sink := &Sink{r: r, fields: doc.Fields, cap: doc.Cap, items: *items, dropped: doc.Dropped, missing: missing}
	spec := upstream.ScanSpec{Filter: doc.Filter, GroupBy: doc.GroupBy, RequestID: doc.RequestID, Decision: doc.Decision}
	if doc.Sink {
		spec.Sink = sink
	}
	// A continuation sealed under another key does not open: the scan
	// reads as expired, and its caller restarts.
	scan, err := r.ResumeScan(spec, doc.State, sealer)
	if err != nil {
		return nil, err
	}
	return &Scan{ID: id, Fingerprint: doc.Fingerprint, Scan: scan, Sink: sink, rev: sc.Revision, savedAt: now}, nil
}

// Keep keeps fs for the cursor about to name it (a scan no cursor names is
// all there is to its answer, and is not kept) and returns the revision
// the cursor carries. With a shared store the scan is saved first when the
// store's copy is behind (see save); when that fails, the error says so,
// and the cursor still continues on this process (elsewhere it reads as
// expired, and the caller restarts).
func (c *Cache) Keep(fs *Scan) (int, error) {
	c.put(fs)
	c.mu.Lock()
	shared := c.store != nil
	c.mu.Unlock()
	if !shared {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.save(ctx, fs)
}

// Len is how many scans this process holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.scans)
}

// IDs are the scans this process holds, sorted.
func (c *Cache) IDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.scans))
}

func (c *Cache) evictLocked() {
	now := c.clock.Now()
	total := 0
	for id, s := range c.scans {
		if now.Sub(s.lastUsed) > c.ttl {
			delete(c.scans, id)
			continue
		}
		total += s.size
	}
	limit := c.maxByte
	if c.store != nil && c.memory > 0 {
		limit = min(limit, c.memory)
	}
	for len(c.scans) > c.max || (total > limit && len(c.scans) > 1) {
		var oldest *Scan
		for _, s := range c.scans {
			if oldest == nil || s.lastUsed.Before(oldest.lastUsed) {
				oldest = s
			}
		}
		total -= oldest.size
		delete(c.scans, oldest.ID)
	}
}
