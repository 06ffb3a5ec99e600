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
	"github.com/airlock-mcp/airlock/selection"
)

// largeListing serves n synthetic subscriptions as resource "subs" (cursor
// dialect, pages of 100): a listing of a few thousand keeps several
// hundred kilobytes of items, several sealed chunks. edit changes record i.
func largeListing(t *testing.T, n int, edit func(i int, r fixtures.Record), opts ...harnessOpt) *harness {
	t.Helper()
	r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectCursor, PageSize: 100}
	h := newHarness(t, append([]harnessOpt{withResources(r)}, opts...)...)
	h.api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, edit))
	return h
}

// otherProcess connects h to another airlock on the same store, as
// another process sharing the store is: its scan cache holds no scan, and
// reads the ones a cursor names from the store.
func otherProcess(h *harness) {
	h.otherProcess(nil)
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
	selection.Store
	puts atomic.Int64
}

func (c *countingScans) PutScan(ctx context.Context, s selection.FrozenScan, b selection.ScanBounds) error {
	c.puts.Add(1)
	return c.Store.PutScan(ctx, s, b)
}

// TestLargeListing_DeliveryAloneWritesNothingToTheStore: following a
// listing's cursor over a finished scan writes the scan to the store once,
// when it was scanned, not once per answer.
func TestLargeListing_DeliveryAloneWritesNothingToTheStore(t *testing.T) {
	counted := &countingScans{}
	h := largeListing(t, 3000, nil, withStore(func(s selection.Store) selection.Store { counted.Store = s; return counted }))
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
	fs := h.deps.Scans.IDs()
	if len(fs) != 1 {
		t.Fatalf("%d scans kept, want 1", len(fs))
	}
	id := fs[0]
	sc, err := h.deps.Store.FrozenScan(context.Background(), id, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sealed []struct {
			Z []byte `json:"z"`
		} `json:"sealed"`
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

// TestScanMemory_AScanLetGoContinuesFromTheStore: a process bound to hold
// one scan at a time lets the older listing go when a newer one comes,
// and the older one's cursor still continues, item for item, from the
// store.
func TestScanMemory_AScanLetGoContinuesFromTheStore(t *testing.T) {
	h := largeListing(t, 600, nil, withScanMemory(1))
	a := map[string]any{"resource": "subs", "max_items": 100}
	firstA := h.call("search_all", a)
	b := map[string]any{"resource": "subs", "max_items": 50, "filter": map[string]any{"region": "eu"}}
	firstB := h.call("search_all", b)
	if firstA.env.Continuation.Cursor == "" || firstB.env.Continuation.Cursor == "" {
		t.Fatal("want two listings with cursors")
	}
	held := h.deps.Scans.Len()
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

// failingScans refuses every frozen scan once failing.
type failingScans struct {
	selection.Store
	failing atomic.Bool
}

func (f *failingScans) PutScan(ctx context.Context, s selection.FrozenScan, b selection.ScanBounds) error {
	if f.failing.Load() {
		return fmt.Errorf("disk full")
	}
	return f.Store.PutScan(ctx, s, b)
}

// TestScanCache_ReleaseKeepsOnlyWhatTheStoreCannotGiveBack: a process
// letting go of its frozen scans when quiet keeps none the store holds,
// whose cursors continue from the store, and keeps one the store refused,
// whose cursor continues here.
func TestScanCache_ReleaseKeepsOnlyWhatTheStoreCannotGiveBack(t *testing.T) {
	failing := &failingScans{}
	h := largeListing(t, 300, nil, withStore(func(s selection.Store) selection.Store { failing.Store = s; return failing }))
	args := map[string]any{"resource": "subs", "max_items": 100}
	first := h.call("search_all", args)
	if n := h.deps.Scans.Release(); n != 1 {
		t.Fatalf("let go of %d scans, want 1", n)
	}
	args["cursor"] = first.env.Continuation.Cursor
	if next := h.call("search_all", args); len(next.ids()) == 0 || next.ids()[0] != fixtures.SubscriptionID(len(first.ids())+1) {
		t.Fatalf("the listing let go did not continue from the store: %v %v", next.reasonCodes(), next.ids())
	}

	failing.failing.Store(true)
	other := map[string]any{"resource": "subs", "max_items": 100, "filter": map[string]any{"region": "us"}}
	firstOther := h.call("search_all", other)
	h.deps.Scans.Release()
	other["cursor"] = firstOther.env.Continuation.Cursor
	if next := h.call("search_all", other); next.env.HasReason(envelope.CursorExpired) || len(next.ids()) == 0 {
		t.Fatalf("a scan the store refused was let go: %v", next.reasonCodes())
	}
}
