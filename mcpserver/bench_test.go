package mcpserver

// Benchmarks of search_all through the real MCP client. The machine they run
// on is shared, so they report ratios against a physical limit (pages times
// the upstream's latency) and sizes, never timings to assert. Run them with
// scripts/bench; docs/benchmarks.md explains every metric.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
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
	// One record short of full pages: the last page is short, and the
	// total reached on it proves the end (a total reached on a full page
	// is no proof, and would cost one more, empty page).
	if dialect == fixtures.DialectOffset {
		return size + (pages-1)*(size-1) - 1
	}
	return pages*size - 1
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

// benchScanAndReplay runs one complete scan, then, with the timer stopped,
// replays the list requests the scan made straight against the fixture
// (see benchReplay). The replay is the physical limit as this machine
// delivers it at this moment: same latency, same fixture, same noise, no
// airlock and no MCP. gap and replayGap are benchGap of the scan's and
// the replay's requests.
func benchScanAndReplay(b *testing.B, h *harness, client *http.Client, args map[string]any, conc int) (res result, wall, replay, gap, replayGap time.Duration) {
	b.Helper()
	h.api.ResetLog()
	res, wall = benchScan(b, h, args)
	benchRequireComplete(b, res)
	reqs := h.api.Requests()
	b.StopTimer()
	h.api.ResetLog()
	replay = benchReplay(b, client, h.apiURL, reqs, conc)
	gap, replayGap = benchGap(reqs, conc), benchGap(h.api.Requests(), conc)
	b.StartTimer()
	return res, wall, replay, gap, replayGap
}

// benchGap is the mean time, by the fixture's clock, from an answer to the
// request that took its slot: for each request past the first conc+1 (in
// order of arrival), from the last answer written before it arrived to its
// arrival. It is the client's own share of every round, whatever the
// latency.
func benchGap(reqs []fixtures.RecordedRequest, conc int) time.Duration {
	rs := slices.Clone(reqs)
	slices.SortFunc(rs, func(a, b fixtures.RecordedRequest) int { return a.Arrived.Compare(b.Arrived) })
	var sum time.Duration
	n := 0
	for i := conc + 1; i < len(rs); i++ {
		var freed time.Time
		for _, q := range rs[:i] {
			if !q.At.After(rs[i].Arrived) && q.At.After(freed) {
				freed = q.At
			}
		}
		if !freed.IsZero() {
			sum += rs[i].Arrived.Sub(freed)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// benchReplay sends the recorded GET requests again: the first alone (it
// tells a scan the total), the rest with up to conc in flight, and returns
// the wall time.
func benchReplay(b *testing.B, client *http.Client, baseURL string, reqs []fixtures.RecordedRequest, conc int) time.Duration {
	b.Helper()
	var gets []fixtures.RecordedRequest
	for _, q := range reqs {
		if q.Method == http.MethodGet {
			gets = append(gets, q)
		}
	}
	if len(gets) == 0 {
		b.Fatal("the scan made no list request to replay")
	}
	get := func(q fixtures.RecordedRequest) {
		req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, baseURL+q.Path+"?"+q.Query.Encode(), nil)
		if err != nil {
			b.Error(err)
			return
		}
		req.Header.Set("Authorization", "Bearer "+canaryToken)
		resp, err := client.Do(req)
		if err != nil {
			b.Errorf("replay %q: %v", q.Path, err)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 16<<20))
		if resp.StatusCode != http.StatusOK {
			b.Errorf("replay %q: status %d", q.Path, resp.StatusCode)
		}
	}
	start := time.Now()
	get(gets[0])
	slots := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for _, q := range gets[1:] {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			get(q)
		})
	}
	wg.Wait()
	return time.Since(start)
}

// benchClient is the replay's HTTP client, with enough idle connections
// kept for conc requests in flight.
func benchClient(b *testing.B, conc int) *http.Client {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	b.Cleanup(c.CloseIdleConnections)
	return c
}

// benchMS is d in milliseconds.
func benchMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchCeilDiv is ⌈a/b⌉ for positive b.
func benchCeilDiv(a, b int) int { return (a + b - 1) / b }

// BenchmarkSearchAllCursor scans a cursor-paginated scope of 20 pages, each
// page delayed by benchLatency. Cursor pages can only be fetched one after
// another, so the physical limit is pages × latency; ratio-to-limit is the
// mean of wall / limit per scan (target ≤ 1.05); replay-ratio is the same
// ratio for a replay of the scan's requests without airlock; gap-ms and
// replay-gap-ms are benchGap for both, the client's share of each round. It
// asks for counts only (max_items 0) so that delivery size plays no part.
func BenchmarkSearchAllCursor(b *testing.B) {
	const pages = 20
	r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectCursor, PageSize: benchPageSize}
	h := benchHarness(b, r, benchRecords(benchRecordsFor(r.Dialect, pages, r.PageSize)), benchLatency)
	client := benchClient(b, 1)
	args := map[string]any{"resource": r.Name, "max_items": 0}
	limit := float64(pages * benchLatency)
	b.ResetTimer()
	var ratios, replays float64
	var gaps, replayGaps time.Duration
	for range b.N {
		res, wall, replay, gap, replayGap := benchScanAndReplay(b, h, client, args, 1)
		if got := res.env.Coverage.Pages; got != pages {
			b.Fatalf("scan read %d pages, want %d", got, pages)
		}
		ratios += float64(wall) / limit
		replays += float64(replay) / limit
		gaps, replayGaps = gaps+gap, replayGaps+replayGap
	}
	b.ReportMetric(ratios/float64(b.N), "ratio-to-limit")
	b.ReportMetric(replays/float64(b.N), "replay-ratio")
	b.ReportMetric(benchMS(gaps)/float64(b.N), "gap-ms")
	b.ReportMetric(benchMS(replayGaps)/float64(b.N), "replay-gap-ms")
	b.ReportMetric(pages, "pages")
}

// BenchmarkSearchAllParallel scans a 40-page scope in the offset and page
// dialects with pagination.concurrency 4. Once the first page gives the
// total, the remaining pages can be fetched 4 at a time, so the physical
// limit is ⌈N/C⌉ × latency; ratio-to-limit is the mean of wall / limit per
// scan (target ≤ 1.25). The first page is always fetched alone, so the
// best airlock can do is floor = (1+⌈(N-1)/C⌉) / ⌈N/C⌉, reported beside it,
// with replay-ratio for a replay of the scan's requests without airlock
// (C in flight), and gap-ms, replay-gap-ms as in BenchmarkSearchAllCursor.
// N is the page count the scan reports in its coverage.
func BenchmarkSearchAllParallel(b *testing.B) {
	const pages, conc = 40, 4
	for _, dialect := range []string{fixtures.DialectOffset, fixtures.DialectPage} {
		b.Run(dialect, func(b *testing.B) {
			r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: dialect, PageSize: benchPageSize, Concurrency: conc}
			h := benchHarness(b, r, benchRecords(benchRecordsFor(dialect, pages, r.PageSize)), benchLatency)
			client := benchClient(b, conc)
			args := map[string]any{"resource": r.Name, "max_items": 0}
			b.ResetTimer()
			var ratios, floors, replays float64
			var gaps, replayGaps time.Duration
			n := 0
			for range b.N {
				res, wall, replay, gap, replayGap := benchScanAndReplay(b, h, client, args, conc)
				gaps, replayGaps = gaps+gap, replayGaps+replayGap
				n = res.env.Coverage.Pages
				if n != pages {
					b.Fatalf("scan read %d pages, want %d", n, pages)
				}
				rounds := benchCeilDiv(n, conc)
				limit := float64(time.Duration(rounds) * benchLatency)
				ratios += float64(wall) / limit
				replays += float64(replay) / limit
				floors += float64(1+benchCeilDiv(n-1, conc)) / float64(rounds)
			}
			b.ReportMetric(ratios/float64(b.N), "ratio-to-limit")
			b.ReportMetric(floors/float64(b.N), "floor")
			b.ReportMetric(replays/float64(b.N), "replay-ratio")
			b.ReportMetric(benchMS(gaps)/float64(b.N), "gap-ms")
			b.ReportMetric(benchMS(replayGaps)/float64(b.N), "replay-gap-ms")
			b.ReportMetric(float64(n), "pages")
		})
	}
}

// BenchmarkEnvelopeSize calls search_all with default budgets (no
// max_items, max_pages or deadline_ms) over scopes of 1,000 to 100,000
// matching subscription records. result-bytes is the largest CallToolResult
// the client received, as JSON (structured content and its text mirror):
// it must stay ≤ 32 KB whatever the scope's size. pages and items say how
// much was scanned and delivered; scan-complete is 1 when the scan read the
// whole scope (total_relation "eq"). The answer itself is never complete at
// these sizes: default max_items is below the match count.
func BenchmarkEnvelopeSize(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
		args map[string]any
	}{
		{"records=1000", 1_000, nil},
		{"records=10000", 10_000, nil},
		{"records=100000", 100_000, nil},
		// Group counts over every id, and four group fields beside items:
		// the parts that grow with the data are bounded too.
		{"records=100000/group_by=id", 100_000, map[string]any{"group_by": []any{"id"}, "max_items": 0}},
		{"records=100000/group_by=4+items", 100_000, map[string]any{"group_by": []any{"id", "customer_id", "region", "status"}, "max_items": 1000}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			// The demo configuration's subscriptions pagination: offset,
			// 100 per page, 4 at a time.
			r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectOffset, PageSize: 100, Concurrency: 4}
			h := benchHarness(b, r, benchRecords(tc.n), 0)
			args := map[string]any{"resource": r.Name, "max_pages": 5000, "deadline_ms": 120000}
			for k, v := range tc.args {
				args[k] = v
			}
			b.ResetTimer()
			var size, pages, items, scanned float64
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
				if res.data["total_relation"] == "eq" {
					scanned++
				}
			}
			b.ReportMetric(size, "result-bytes")
			b.ReportMetric(pages/float64(b.N), "pages")
			b.ReportMetric(items/float64(b.N), "items")
			b.ReportMetric(scanned/float64(b.N), "scan-complete")
		})
	}
}
