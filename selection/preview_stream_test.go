package selection_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/upstream"
)

// previewStore wraps a store to see how a preview uses it: how often the
// digest was computed from the store (EachRecord), and to fail or cancel
// on a chosen PutRecords call.
type previewStore struct {
	selection.Store
	eachRecord atomic.Int32
	puts       atomic.Int32
	// onPut runs before the n-th PutRecords (from 1); an error fails it.
	onPut func(n int) error
}

func (p *previewStore) PutRecords(ctx context.Context, selectionID string, recs []selection.Record) error {
	n := int(p.puts.Add(1))
	if p.onPut != nil {
		if err := p.onPut(n); err != nil {
			return err
		}
	}
	return p.Store.PutRecords(ctx, selectionID, recs)
}

func (p *previewStore) EachRecord(ctx context.Context, selectionID string, fn func(selection.Record) error) error {
	p.eachRecord.Add(1)
	return p.Store.EachRecord(ctx, selectionID, fn)
}

func openTestStore(t *testing.T) *sqlitestore.SQLite {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// previewAPI serves n synthetic subscriptions and returns the runtime's
// subscriptions resource read through r, with pause_collection.
func previewAPI(t *testing.T, n int, r fixtures.Resource, faults fixtures.Faults) (*upstream.Resource, *upstream.Action, string) {
	t.Helper()
	api := &fixtures.Server{OnUnknownRoute: func(m, p string) { t.Errorf("fixture: unexpected %s %s", m, p) }}
	api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, benchMostlyPastDue))
	api.SetFaults(fixtures.DatasetSubscriptions, faults)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	r.Name, r.Dataset = "subscriptions", fixtures.DatasetSubscriptions
	r.Extra = benchResourceYAML + "\n" + r.Extra
	c, err := config.Parse(append(fixtures.Config(srv.URL, r), benchActionsYAML...))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	rt, err := upstream.Initialize(context.Background(), c, upstream.Options{Getenv: func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultAdminToken
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	return rt.Resources["subscriptions"], rt.Actions["pause_collection"], rt.Environment
}

func storedDigest(t *testing.T, s selection.Store, sel *selection.Selection) string {
	t.Helper()
	d, err := selection.NewDigester(sel)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EachRecord(context.Background(), sel.ID, d.Add); err != nil {
		t.Fatal(err)
	}
	sum, err := d.Sum()
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestPreview_StreamedDigestIsTheStoredRecordsDigest: a preview digests
// records as they arrive when they come in id order (one keyset source,
// offset pages processed in order, named ids) and from the store otherwise
// (several sources, interleaved); either way the digest is the one computed
// over the stored records.
func TestPreview_StreamedDigestIsTheStoredRecordsDigest(t *testing.T) {
	t.Parallel()
	const n = 2500 // three store batches
	regions := "sources:\n  - {name: eu, params: {region: eu}}\n  - {name: us, params: {region: us}}\n  - {name: apac, params: {region: apac}}"
	cases := []struct {
		name     string
		resource fixtures.Resource
		ids      []string
		streamed bool
	}{
		{name: "one keyset source", resource: fixtures.Resource{Dialect: fixtures.DialectCursor, PageSize: 100}, streamed: true},
		{name: "offset pages in parallel", resource: fixtures.Resource{Dialect: fixtures.DialectOffset, PageSize: 100, Concurrency: 4}, streamed: true},
		{name: "several sources", resource: fixtures.Resource{Dialect: fixtures.DialectCursor, PageSize: 100, Extra: regions}, streamed: false},
		{name: "named ids", resource: fixtures.Resource{Dialect: fixtures.DialectCursor, PageSize: 100},
			ids: []string{"sub_0000050", "sub_0000007", "sub_9999999", "sub_0000100", "sub_0000007", "sub_0000001"}, streamed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, a, env := previewAPI(t, n, tc.resource, fixtures.Faults{MaxPageSize: 100})
			store := &previewStore{Store: openTestStore(t)}
			p := &selection.Previewer{Store: store, Clock: upstream.WallClock}
			res, err := p.Preview(t.Context(), selection.PreviewRequest{Resource: r, Action: a, IDs: tc.ids,
				Params: map[string]any{"reason": benchReason}, Budget: benchBudget, RequestID: "test", Environment: env})
			if err != nil {
				t.Fatalf("preview: %v", err)
			}
			sel := res.Selection
			want := n
			if tc.ids != nil {
				want = 5
			}
			if sel.Summary.Scanned != want || sel.State != selection.StateReady {
				t.Fatalf("preview: %d records, state %s; want %d ready", sel.Summary.Scanned, sel.State, want)
			}
			if streamed := store.eachRecord.Load() == 0; streamed != tc.streamed {
				t.Fatalf("digest streamed %v, want %v", streamed, tc.streamed)
			}
			if got := storedDigest(t, store, sel); got != sel.Digest {
				t.Fatalf("the preview's digest %s is not the stored records' digest %s", sel.Digest, got)
			}
			stored, err := store.Selection(t.Context(), sel.ID)
			if err != nil || stored.Digest != sel.Digest {
				t.Fatalf("stored selection: %v, digest %s", err, stored.Digest)
			}
		})
	}
}

// writerGoroutines counts preview record writers still running. A writer
// has signalled that it ended (closed its done channel, which the preview
// waits for) a moment before its goroutine is gone from the stack dump, so
// a count above zero is looked at again for up to a second.
func writerGoroutines() int {
	count := func() int {
		buf := make([]byte, 1<<20)
		for {
			n := runtime.Stack(buf, true)
			if n < len(buf) {
				return strings.Count(string(buf[:n]), "selection.(*recordWriter).run") + strings.Count(string(buf[:n]), "selection.(*itemQueue).run")
			}
			buf = make([]byte, 2*len(buf))
		}
	}
	n := count()
	for i := 0; n > 0 && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
		n = count()
	}
	return n
}

// TestPreview_FailedOrCancelledLeavesNoWriter: a preview whose store
// write fails, whose caller goes away, or whose scan fails returns an error
// and leaves no record writer running; a write that fails while the scan
// runs ends the preview with an internal problem, as before writes moved
// off the scan's path.
func TestPreview_FailedOrCancelledLeavesNoWriter(t *testing.T) {
	t.Parallel()
	const n = 5000
	errDisk := errors.New("disk full")
	cases := []struct {
		name   string
		faults fixtures.Faults
		onPut  func(n int, cancel context.CancelFunc) error
		scan   bool // the error is a scan error with an internal problem
	}{
		{name: "first write fails", onPut: func(n int, _ context.CancelFunc) error {
			if n == 1 {
				return errDisk
			}
			return nil
		}, scan: true},
		{name: "last write fails", onPut: func(n int, _ context.CancelFunc) error {
			if n == 5 {
				return errDisk
			}
			return nil
		}},
		{name: "caller goes away", onPut: func(n int, cancel context.CancelFunc) error {
			if n == 2 {
				cancel()
			}
			return nil
		}},
		{name: "scan fails", faults: fixtures.Faults{MaxPageSize: 100, FailFrom: 25, FailStatus: 400}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.faults.MaxPageSize == 0 {
				tc.faults.MaxPageSize = 100
			}
			r, a, env := previewAPI(t, n, fixtures.Resource{Dialect: fixtures.DialectCursor, PageSize: 100}, tc.faults)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			store := &previewStore{Store: openTestStore(t)}
			if tc.onPut != nil {
				store.onPut = func(n int) error { return tc.onPut(n, cancel) }
			}
			p := &selection.Previewer{Store: store, Clock: upstream.WallClock}
			res, err := p.Preview(ctx, selection.PreviewRequest{Resource: r, Action: a,
				Params: map[string]any{"reason": benchReason}, Budget: benchBudget, RequestID: "test", Environment: env})
			if err == nil {
				t.Fatalf("preview succeeded: %+v", res.Selection.Summary)
			}
			if left := writerGoroutines(); left != 0 {
				t.Fatalf("%d record writers still running after the preview returned", left)
			}
			var se *upstream.ScanError
			if tc.scan && (!errors.As(err, &se) || se.Problem.Code != envelope.ProblemInternal || !errors.Is(se.Err, errDisk)) {
				t.Fatalf("a write failing during the scan: %v, want an internal scan problem", err)
			}
			// Nothing is written once the preview returned.
			puts := store.puts.Load()
			time.Sleep(20 * time.Millisecond)
			if store.puts.Load() != puts {
				t.Fatal("records were written after the preview returned")
			}
		})
	}
}
