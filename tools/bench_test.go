package tools

// Benchmarks of search_all through the real MCP client. The machine they run
// on is shared, so they report ratios against a physical limit (pages times
// the upstream's latency) and sizes, never timings to assert. Run them with
// scripts/bench; docs/benchmarks.md explains every metric.

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
)

const (
	// benchLatency is the fixture's added latency per list request: the
	// unit of the physical limit.
	benchLatency = 20 * time.Millisecond
	// benchPageSize is the page size of the latency benchmarks.
	benchPageSize = 50
)

// benchRecords returns n subscription-shaped records: the seeded data set's
// records repeated with fresh ids, so that field shapes and sizes stay those
// of the demo data at any n.
func benchRecords(n int) *fixtures.Collection {
	base := fixtures.Subscriptions()
	recs := make([]fixtures.Record, n)
	for i := range recs {
		r := maps.Clone(base[i%len(base)])
		r["id"] = fmt.Sprintf("sub_%07d", i+1)
		recs[i] = r
	}
	return fixtures.NewCollection(recs)
}

// benchRecordsFor returns how many records make a full scan read exactly
// pages pages of size items. The offset dialect re-reads one item on every
// page after the first (its overlap check), so its stride is size-1.
func benchRecordsFor(dialect string, pages, size int) int {
	if dialect == fixtures.DialectOffset {
		return size + (pages-1)*(size-1)
	}
	return pages * size
}

// benchHarness serves coll as the resource's data set, every list request
// delayed by latency.
func benchHarness(b *testing.B, r fixtures.Resource, coll *fixtures.Collection, latency time.Duration) *harness {
	b.Helper()
	h := newHarness(b, withResources(r))
	h.api.SetCollection(r.Dataset, coll)
	h.api.SetFaults(r.Dataset, fixtures.Faults{Latency: latency})
	return h
}

// benchScan runs one search_all call and returns it with its wall time as
// the client saw it. The time includes the harness's contract checks on the
// result (schema validation, text mirror), which only makes ratios worse.
func benchScan(b *testing.B, h *harness, args map[string]any) (result, time.Duration) {
	b.Helper()
	start := time.Now()
	r := h.call("search_all", args)
	wall := time.Since(start)
	if r.env.Coverage == nil {
		b.Fatalf("search_all returned no coverage: %s", r.raw)
	}
	return r, wall
}

func benchRequireComplete(b *testing.B, r result) {
	b.Helper()
	if !r.env.Complete {
		b.Fatalf("scan is incomplete %v: the ratio would not describe a full scan\n%s", r.reasonCodes(), r.raw)
	}
}

// ceilDiv is ⌈a/b⌉ for positive b.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// BenchmarkSearchAllCursor scans a cursor-paginated scope of 20 pages, each
// page delayed by benchLatency. Cursor pages can only be fetched one after
// another, so the physical limit is pages × latency; ratio-to-limit is the
// mean of wall / limit per scan (target ≤ 1.05). It asks for counts only
// (max_items 0) so that delivery size plays no part.
func BenchmarkSearchAllCursor(b *testing.B) {
	const pages = 20
	r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectCursor, PageSize: benchPageSize}
	h := benchHarness(b, r, benchRecords(benchRecordsFor(r.Dialect, pages, r.PageSize)), benchLatency)
	args := map[string]any{"resource": r.Name, "max_items": 0}
	b.ResetTimer()
	var ratios float64
	for range b.N {
		res, wall := benchScan(b, h, args)
		benchRequireComplete(b, res)
		if got := res.env.Coverage.Pages; got != pages {
			b.Fatalf("scan read %d pages, want %d", got, pages)
		}
		ratios += float64(wall) / float64(pages*benchLatency)
	}
	b.ReportMetric(ratios/float64(b.N), "ratio-to-limit")
	b.ReportMetric(pages, "pages")
}

// BenchmarkSearchAllParallel scans a 40-page scope in the offset and page
// dialects with pagination.concurrency 4. Once the first page gives the
// total, the remaining pages can be fetched 4 at a time, so the physical
// limit is ⌈N/C⌉ × latency; ratio-to-limit is the mean of wall / limit per
// scan (target ≤ 1.25). The first page is always fetched alone, so the
// best airlock can do is floor = (1+⌈(N-1)/C⌉) / ⌈N/C⌉, reported beside it.
// N is the page count the scan reports in its coverage.
func BenchmarkSearchAllParallel(b *testing.B) {
	const pages, conc = 40, 4
	for _, dialect := range []string{fixtures.DialectOffset, fixtures.DialectPage} {
		b.Run(dialect, func(b *testing.B) {
			r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: dialect, PageSize: benchPageSize, Concurrency: conc}
			h := benchHarness(b, r, benchRecords(benchRecordsFor(dialect, pages, r.PageSize)), benchLatency)
			args := map[string]any{"resource": r.Name, "max_items": 0}
			b.ResetTimer()
			var ratios, floors float64
			n := 0
			for range b.N {
				res, wall := benchScan(b, h, args)
				benchRequireComplete(b, res)
				n = res.env.Coverage.Pages
				if n != pages {
					b.Fatalf("scan read %d pages, want %d", n, pages)
				}
				limit := ceilDiv(n, conc)
				ratios += float64(wall) / float64(time.Duration(limit)*benchLatency)
				floors += float64(1+ceilDiv(n-1, conc)) / float64(limit)
			}
			b.ReportMetric(ratios/float64(b.N), "ratio-to-limit")
			b.ReportMetric(floors/float64(b.N), "floor")
			b.ReportMetric(float64(n), "pages")
		})
	}
}

// BenchmarkEnvelopeSize calls search_all with default budgets (no
// max_items, max_pages or deadline_ms) over scopes of 1,000 to 100,000
// matching subscription records. result-bytes is the largest CallToolResult
// the client received, as JSON (structured content and its text mirror):
// it must stay ≤ 32 KB whatever the scope's size. pages and items say how
// much was scanned and delivered; complete is 1 when the scan finished.
func BenchmarkEnvelopeSize(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			// The demo configuration's subscriptions pagination: offset,
			// 100 per page, 4 at a time.
			r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectOffset, PageSize: 100, Concurrency: 4}
			h := benchHarness(b, r, benchRecords(n), 0)
			args := map[string]any{"resource": r.Name}
			b.ResetTimer()
			var size, pages, items, complete float64
			for range b.N {
				res, _ := benchScan(b, h, args)
				if res.res.IsError {
					b.Fatalf("search_all failed: %s", res.raw)
				}
				raw, err := json.Marshal(res.res)
				if err != nil {
					b.Fatal(err)
				}
				size = max(size, float64(len(raw)))
				pages += float64(res.env.Coverage.Pages)
				items += float64(len(res.items()))
				if res.env.Complete {
					complete++
				}
			}
			b.ReportMetric(size, "result-bytes")
			b.ReportMetric(pages/float64(b.N), "pages")
			b.ReportMetric(items/float64(b.N), "items")
			b.ReportMetric(complete/float64(b.N), "complete")
		})
	}
}

func BenchmarkZZDiag(b *testing.B) {
	for _, tc := range []struct {
		d    string
		c    int
		pages int
	}{{fixtures.DialectCursor, 1, 20}, {fixtures.DialectOffset, 4, 40}, {fixtures.DialectPage, 4, 40}} {
		for _, lat := range []time.Duration{0, benchLatency} {
			b.Run(fmt.Sprintf("%s/%v", tc.d, lat), func(b *testing.B) {
				r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: tc.d, PageSize: benchPageSize, Concurrency: tc.c}
				h := benchHarness(b, r, benchRecords(benchRecordsFor(tc.d, tc.pages, r.PageSize)), lat)
				args := map[string]any{"resource": r.Name, "max_items": 0}
				b.ResetTimer()
				for i := range b.N {
					h.api.ResetLog()
					start := time.Now()
					res, wall := benchScan(b, h, args)
					if i == b.N-1 {
						reqs := h.api.Requests()
						var s string
						prev := start
						for _, q := range reqs {
							s += fmt.Sprintf(" %.1f", float64(q.At.Sub(prev))/1e6)
							prev = q.At
						}
						b.Logf("wall %v elapsed_ms %d pages %d gaps(ms):%s tail %.1f", wall, res.env.Coverage.ElapsedMS, res.env.Coverage.Pages, s, float64(start.Add(wall).Sub(prev))/1e6)
					}
				}
			})
		}
	}
}
