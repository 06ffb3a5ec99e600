package tools

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/selection"
)

// largeListing serves n synthetic subscriptions as resource "subs" (cursor
// dialect, pages of 100): a listing of a few thousand keeps several
// hundred kilobytes of items, several sealed chunks. edit changes record i.
func largeListing(t *testing.T, n int, edit func(i int, r fixtures.Record)) *harness {
	t.Helper()
	r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectCursor, PageSize: 100}
	h := newHarness(t, withResources(r))
	h.api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, edit))
	return h
}

// otherProcess gives h a scan cache of its own on the same store, as
// another process sharing the store has: it holds no scan, and reads the
// ones a cursor names from the store.
func otherProcess(h *harness) {
	sealer := h.deps.Scans.sealer
	h.deps.Scans = NewScanCache(time.Minute, 8, 1<<30, nil)
	h.deps.Scans.share(selection.Redacting(h.deps.Store, h.deps.Redactor), h.deps.Runtime, h.deps.Logger, sealer)
}

// TestLargeListing_ContinuesOnAnotherProcessItemForItem: a listing of
// several thousand items, delivered as many as an answer holds, continues
// through its cursor on a process that holds none of it and delivers
// every item once, in scan order, exactly as the first process would have.
func TestLargeListing_ContinuesOnAnotherProcessItemForItem(t *testing.T) {
	const n = 4000
	h := largeListing(t, n, nil)
	args := map[string]any{"resource": "subs", "max_items": 1000}
	var ids []string
	first := h.call("search_all", args)
	ids = append(ids, first.ids()...)
	var items []map[string]any
	items = append(items, first.items()...)
	cur := first.env.Continuation.Cursor
	for call := 1; cur != ""; call++ {
		if call == 2 {
			otherProcess(h)
		}
		args["cursor"] = cur
		r := h.call("search_all", args)
		if r.totalMatched() != n {
			t.Fatalf("call %d: total %d, want %d", call, r.totalMatched(), n)
		}
		ids = append(ids, r.ids()...)
		items = append(items, r.items()...)
		cur = r.env.Continuation.Cursor
	}
	if len(ids) != n {
		t.Fatalf("delivered %d items, want %d", len(ids), n)
	}
	for i, id := range ids {
		if want := fixtures.SubscriptionID(i + 1); id != want {
			t.Fatalf("item %d is %s, want %s", i, id, want)
		}
		if want := fixtures.SubscriptionAt(i + 1)["customer_name"]; items[i]["customer_name"] != want {
			t.Fatalf("item %d: customer_name %v, want %v", i, items[i]["customer_name"], want)
		}
	}
}

// countingScans counts the frozen scans written to a store.
type countingScans struct {
	selection.ScanStore
	puts atomic.Int64
}

func (c *countingScans) PutScan(ctx context.Context, s selection.FrozenScan, b selection.ScanBounds) error {
	c.puts.Add(1)
	return c.ScanStore.PutScan(ctx, s, b)
}

// TestLargeListing_DeliveryAloneWritesNothingToTheStore: following a
// listing's cursor over a finished scan writes the scan to the store once,
// when it was scanned, not once per answer.
func TestLargeListing_DeliveryAloneWritesNothingToTheStore(t *testing.T) {
	h := largeListing(t, 3000, nil)
	counted := &countingScans{ScanStore: selection.Redacting(h.deps.Store, h.deps.Redactor)}
	h.deps.Scans.share(counted, h.deps.Runtime, h.deps.Logger, h.deps.Scans.sealer)
	args := map[string]any{"resource": "subs", "max_items": 500}
	r := h.call("search_all", args)
	calls := 1
	for r.env.Continuation.Cursor != "" {
		args["cursor"] = r.env.Continuation.Cursor
		r = h.call("search_all", args)
		calls++
	}
	if calls < 10 || counted.puts.Load() != 1 {
		t.Fatalf("%d calls wrote the scan %d times, want 1", calls, counted.puts.Load())
	}
}

// TestLargeListing_TheStoreHoldsNoCredentialInsideCompressedItems: items
// kept in compressed chunks are redacted before they are compressed, so
// the stored scan holds no credential an upstream echoed into its records
// (a search of the store's bytes could not see one there).
func TestLargeListing_TheStoreHoldsNoCredentialInsideCompressedItems(t *testing.T) {
	h := largeListing(t, 4000, func(i int, r fixtures.Record) {
		if i%7 == 0 {
			r["customer_name"] = "Echo " + canaryToken
		}
	})
	r := h.call("search_all", map[string]any{"resource": "subs", "max_items": 1000})
	if r.env.Continuation.Cursor == "" {
		t.Fatal("the listing fits one answer")
	}
	fs := h.deps.Scans.scans
	if len(fs) != 1 {
		t.Fatalf("%d scans kept, want 1", len(fs))
	}
	var id string
	for id = range fs {
	}
	sc, err := h.deps.Store.FrozenScan(context.Background(), id, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sealed []savedChunk `json:"sealed"`
	}
	if err := json.Unmarshal(sc.Doc, &doc); err != nil || len(doc.Sealed) < 2 {
		t.Fatalf("want sealed chunks in the stored scan: %v, %d", err, len(doc.Sealed))
	}
	redacted := 0
	for _, c := range doc.Sealed {
		raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(c.Z)))
		if err != nil {
			t.Fatal(err)
		}
		leaks(t, "a sealed chunk of the stored scan", raw)
		redacted += strings.Count(string(raw), "Echo [redacted]")
	}
	if redacted == 0 {
		t.Fatal("no echoed credential was found redacted in the sealed chunks: the test checks nothing")
	}
}

// TestItemArena_KeepsItemsInOrderAcrossSealedChunksAndTheStore: items of
// every size, one larger than a chunk and some holding escaped newlines,
// read back in order from the arena and from its stored document.
func TestItemArena_KeepsItemsInOrderAcrossSealedChunksAndTheStore(t *testing.T) {
	var want []string
	a := &itemArena{red: redact.New()}
	for i := range 3000 {
		item := fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", i%700))
		switch {
		case i == 1500:
			item = fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("y", arenaChunkSize+10))
		case i%11 == 0:
			item = fmt.Sprintf(`{"i":%d,"text":"two\nlines"}`, i)
		case i%13 == 0:
			item = fmt.Sprintf("{\n  \"i\": %d\n}", i) // indented: kept compact
		}
		a.add([]byte(item))
		var c bytes.Buffer
		if err := json.Compact(&c, []byte(item)); err != nil {
			t.Fatal(err)
		}
		want = append(want, c.String())
	}
	sealed := 0
	for _, c := range a.chunks {
		if c.z != nil {
			sealed++
		}
	}
	if sealed < 3 {
		t.Fatalf("%d sealed chunks: the test would not read compressed items", sealed)
	}
	check := func(what string, a *itemArena) {
		t.Helper()
		if a.len() != len(want) {
			t.Fatalf("%s: %d items, want %d", what, a.len(), len(want))
		}
		for _, from := range []int{0, 1, 1499, 1500, 1501, 2999} {
			got := 0
			err := a.each(from, func(i int, item json.RawMessage) bool {
				if string(item) != want[i] {
					t.Fatalf("%s: item %d from %d is %.80s, want %.80s", what, i, from, item, want[i])
				}
				got++
				return got < 5
			})
			if err != nil || got != min(5, len(want)-from) {
				t.Fatalf("%s: from %d read %d items: %v", what, from, got, err)
			}
		}
	}
	check("the arena", a)
	b, err := encodeSaved(savedScan{Fingerprint: "f", Resource: "r", State: json.RawMessage(`{}`)}, a)
	if err != nil || !json.Valid(b) {
		t.Fatalf("encode: %v, valid JSON: %v", err, json.Valid(b))
	}
	doc, back, err := decodeSaved(b, nil)
	if err != nil || doc.Fingerprint != "f" {
		t.Fatalf("decode: %v %+v", err, doc)
	}
	check("the stored document", back)
}

// TestItemArena_WithoutARedactorSealsNothing: an arena no redactor reads
// never compresses its items, so that what it saves stays readable JSON
// for the redacting store, instead of bytes no one redacted.
func TestItemArena_WithoutARedactorSealsNothing(t *testing.T) {
	a := &itemArena{}
	item := []byte(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 1000)))
	for range 3 * arenaChunkSize / len(item) {
		a.add(item)
	}
	for i, c := range a.chunks {
		if c.z != nil {
			t.Fatalf("chunk %d of %d was sealed without a redactor", i, len(a.chunks))
		}
	}
	b, err := encodeSaved(savedScan{Fingerprint: "f", Resource: "r", State: json.RawMessage(`{}`)}, a)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Items  []json.RawMessage `json:"items"`
		Sealed []any             `json:"sealed"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Items) != a.len() || len(doc.Sealed) != 0 {
		t.Fatalf("saved %d readable items and %d sealed chunks of %d: %v", len(doc.Items), len(doc.Sealed), a.len(), err)
	}
}

// TestScanMemory_AScanLetGoContinuesFromTheStore: a process bound to hold
// one scan at a time lets the older listing go when a newer one comes,
// and the older one's cursor still continues, item for item, from the
// store.
func TestScanMemory_AScanLetGoContinuesFromTheStore(t *testing.T) {
	h := largeListing(t, 600, nil)
	h.deps.Scans.SetMemory(1)
	a := map[string]any{"resource": "subs", "max_items": 100}
	firstA := h.call("search_all", a)
	b := map[string]any{"resource": "subs", "max_items": 50, "filter": map[string]any{"region": "eu"}}
	firstB := h.call("search_all", b)
	if firstA.env.Continuation.Cursor == "" || firstB.env.Continuation.Cursor == "" {
		t.Fatal("want two listings with cursors")
	}
	h.deps.Scans.mu.Lock()
	held := len(h.deps.Scans.scans)
	h.deps.Scans.mu.Unlock()
	if held != 1 {
		t.Fatalf("the process holds %d scans, want 1", held)
	}
	a["cursor"] = firstA.env.Continuation.Cursor
	next := h.call("search_all", a)
	if next.env.HasReason(envelope.CursorExpired) || len(next.ids()) == 0 {
		t.Fatalf("the let-go listing did not continue: %v", next.reasonCodes())
	}
	if got, want := next.ids()[0], fixtures.SubscriptionID(len(firstA.ids())+1); got != want {
		t.Fatalf("the listing continued at %s, want %s", got, want)
	}
}

// failingScans refuses every frozen scan.
type failingScans struct{ selection.ScanStore }

func (failingScans) PutScan(context.Context, selection.FrozenScan, selection.ScanBounds) error {
	return fmt.Errorf("disk full")
}

// TestScanCache_ReleaseKeepsOnlyWhatTheStoreCannotGiveBack: a process
// letting go of its frozen scans when quiet keeps none the store holds,
// whose cursors continue from the store, and keeps one the store refused,
// whose cursor continues here.
func TestScanCache_ReleaseKeepsOnlyWhatTheStoreCannotGiveBack(t *testing.T) {
	h := largeListing(t, 300, nil)
	args := map[string]any{"resource": "subs", "max_items": 100}
	first := h.call("search_all", args)
	if n := h.deps.Scans.Release(); n != 1 {
		t.Fatalf("let go of %d scans, want 1", n)
	}
	args["cursor"] = first.env.Continuation.Cursor
	if next := h.call("search_all", args); len(next.ids()) == 0 || next.ids()[0] != fixtures.SubscriptionID(len(first.ids())+1) {
		t.Fatalf("the listing let go did not continue from the store: %v %v", next.reasonCodes(), next.ids())
	}

	h.deps.Scans.share(failingScans{h.deps.Store}, h.deps.Runtime, h.deps.Logger, h.deps.Scans.sealer)
	other := map[string]any{"resource": "subs", "max_items": 100, "filter": map[string]any{"region": "us"}}
	firstOther := h.call("search_all", other)
	h.deps.Scans.Release()
	other["cursor"] = firstOther.env.Continuation.Cursor
	if next := h.call("search_all", other); next.env.HasReason(envelope.CursorExpired) || len(next.ids()) == 0 {
		t.Fatalf("a scan the store refused was let go: %v", next.reasonCodes())
	}
}
