package upstream

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// faultRecords are n records with ids r0000…, a status cycling through
// active/disabled/archived and an owner that is "" for every fifth.
func faultRecords(n int) []fixtures.Record {
	statuses := []string{"active", "disabled", "archived"}
	out := make([]fixtures.Record, n)
	for i := range out {
		owner := any(fmt.Sprintf("team-%d", i%7))
		if i%5 == 0 {
			owner = ""
		}
		out[i] = fixtures.Record{"id": fmt.Sprintf("r%04d", i), "status": statuses[i%3], "owner": owner}
	}
	return out
}

func faultRuntime(t *testing.T, fl *fixtures.FaultList, pageSize int, pagination, multi string) *Resource {
	t.Helper()
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	rt := runtimeFor(t, fixtures.FaultListConfig(ts.URL, fl.Dialect, pageSize, pagination, multi))
	return rt.Resources["items"]
}

// endOf is the single source's coverage.
func endOf(t *testing.T, out Outcome) envelope.SourceCoverage {
	t.Helper()
	if len(out.Sources) != 1 {
		t.Fatalf("sources = %+v, want one", out.Sources)
	}
	return out.Sources[0]
}

// TestEndOfList_IsProvenNeverInferred runs every dialect against honest and
// faulty lists. A scan is complete only when its last page proved the end;
// an unproven end is END_NOT_PROVEN, never complete.
func TestEndOfList_IsProvenNeverInferred(t *testing.T) {
	type want struct {
		complete bool
		signal   string              // the end signal in coverage
		reason   envelope.ReasonCode // the reason when incomplete
	}
	for _, tc := range []struct {
		name       string
		fl         fixtures.FaultKnobs
		n, size    int
		pagination string
		want       want
	}{
		// Honest lists: each dialect proves its end its own way.
		{"cursor has_more false", fixtures.FaultKnobs{Dialect: fixtures.DialectCursor}, 25, 10, "", want{true, dialect.SignalHasMoreFalse, ""}},
		{"cursor without has_more reads to an empty page", fixtures.FaultKnobs{Dialect: fixtures.DialectCursor, NoHasMore: true}, 25, 10, "", want{true, dialect.SignalEmptyPage, ""}},
		{"next cursor omitted on the last page after it was seen", fixtures.FaultKnobs{Dialect: fixtures.DialectCursorNext}, 25, 10, "", want{true, dialect.SignalNextCursorNone, ""}},
		{"next cursor on a single short page, verified by a probe", fixtures.FaultKnobs{Dialect: fixtures.DialectCursorNext}, 5, 10, "", want{true, dialect.SignalNextCursorNone + dialect.SignalVerified, ""}},
		{"link without next after links", fixtures.FaultKnobs{Dialect: fixtures.DialectLink}, 25, 10, "", want{true, dialect.SignalNoNextLink, ""}},
		{"link on a full last page after links, naming itself last", fixtures.FaultKnobs{Dialect: fixtures.DialectLink}, 30, 10, "", want{true, dialect.SignalLastLink, ""}},
		// A whole last page without a Link header behind next links that
		// number pages by their size: asked for again one item smaller,
		// the page starts at another item, which proves nothing of its
		// own place.
		{"link on a full last page after links, without a Link header, page-numbered", fixtures.FaultKnobs{Dialect: fixtures.DialectLink, NoLastLinks: true}, 30, 10, "", want{false, dialect.SignalMissingOnFull, envelope.EndNotProven}},
		{"link with X-Total-Count reached on a single page, verified", fixtures.FaultKnobs{Dialect: fixtures.DialectLink, Total: "header"}, 5, 10, "total_header: X-Total-Count", want{true, dialect.SignalNoNextLink + dialect.SignalVerified, ""}},
		{"link with X-Total-Count reached after links", fixtures.FaultKnobs{Dialect: fixtures.DialectLink, Total: "header"}, 25, 10, "total_header: X-Total-Count", want{true, dialect.SignalTotalReached, ""}},
		{"page whose first short page reaches a lagging total, the upstream capping pages", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, MaxPageSize: 1, Total: "low"}, 2, 2, "", want{false, dialect.SignalEmptyPage, envelope.ConflictingEvidence}},
		{"offset total reached", fixtures.FaultKnobs{Dialect: fixtures.DialectOffset}, 25, 10, "", want{true, dialect.SignalTotalReached, ""}},
		{"page total reached", fixtures.FaultKnobs{Dialect: fixtures.DialectPage}, 25, 10, "", want{true, dialect.SignalTotalReached, ""}},
		{"page total in a header", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, Total: "header"}, 25, 10, "total_header: X-Total-Count", want{true, dialect.SignalTotalReached, ""}},
		{"continue omitted after it was seen", fixtures.FaultKnobs{Dialect: fixtures.DialectContinue}, 25, 10, "", want{true, dialect.SignalContinueNone, ""}},
		{"continue on one exactly full page, rechecked one item smaller", fixtures.FaultKnobs{Dialect: fixtures.DialectContinue}, 10, 10, "", want{true, dialect.SignalContinueNone + dialect.SignalRechecked, ""}},
		{"continue on an exactly full last page, rechecked one item smaller", fixtures.FaultKnobs{Dialect: fixtures.DialectContinue}, 30, 10, "", want{true, dialect.SignalContinueNone + dialect.SignalRechecked, ""}},
		{"empty list", fixtures.FaultKnobs{Dialect: fixtures.DialectLink}, 0, 10, "", want{true, dialect.SignalEmptyPage, ""}},

		// Totals that are not totals: page on to the dialect's own end.
		{"page with a negative total (skipTotal)", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, Total: "negative"}, 25, 10, "", want{true, dialect.SignalEmptyPage, ""}},
		{"offset without a total", fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, Total: "missing"}, 25, 10, "", want{true, dialect.SignalEmptyPage, ""}},
		// A total the items read exceed: the total and the list disagree,
		// and neither is believed; every item is still read.
		{"page whose total is one too low", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, Total: "low"}, 25, 10, "", want{false, dialect.SignalEmptyPage, envelope.ConflictingEvidence}},
		{"page whose lagging total is reached on a full page", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, Total: "low"}, 21, 10, "", want{false, dialect.SignalEmptyPage, envelope.ConflictingEvidence}},
		{"page whose total is one too high", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, Total: "high"}, 25, 10, "", want{false, dialect.SignalEmptyPage, envelope.ResultLimitReached}},

		// The upstream caps the page size below the one asked for.
		{"page size capped, page with total", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, MaxPageSize: 4}, 25, 10, "", want{true, dialect.SignalTotalReached, ""}},
		{"page size capped, offset with total on a full last page", fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, MaxPageSize: 4}, 25, 10, "", want{true, dialect.SignalEmptyPage, ""}},
		{"page size capped, offset with total on a short last page", fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, MaxPageSize: 4}, 24, 10, "", want{true, dialect.SignalTotalReached, ""}},
		{"page size capped, offset without total", fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, MaxPageSize: 4, Total: "missing"}, 25, 10, "", want{true, dialect.SignalEmptyPage, ""}},
		{"page size capped, next cursor", fixtures.FaultKnobs{Dialect: fixtures.DialectCursorNext, MaxPageSize: 4}, 25, 10, "", want{true, dialect.SignalNextCursorNone, ""}},

		// No "more follows" signal at all: a full page is not an end.
		{"link without any Link header (json-server without _page)", fixtures.FaultKnobs{Dialect: fixtures.DialectLink, NoNextSignal: true, IgnorePage: true}, 25, 10, "", want{false, dialect.SignalMissingOnFull, envelope.EndNotProven}},
		{"link without Link on a short single page, unverifiable", fixtures.FaultKnobs{Dialect: fixtures.DialectLink, NoNextSignal: true}, 5, 10, "", want{false, dialect.SignalNotSeen, envelope.EndNotProven}},
		{"next cursor never sent", fixtures.FaultKnobs{Dialect: fixtures.DialectCursorNext, NoNextSignal: true}, 25, 10, "", want{false, dialect.SignalMissingOnFull, envelope.EndNotProven}},
		{"continue never sent", fixtures.FaultKnobs{Dialect: fixtures.DialectContinue, NoNextSignal: true}, 25, 10, "", want{false, dialect.SignalMissingOnFull, envelope.EndNotProven}},

		// The page position is ignored: every page repeats the first.
		{"page parameter ignored, total unknown", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, IgnorePage: true, Total: "negative"}, 25, 10, "", want{false, dialect.SignalRepeatedPage, envelope.EndNotProven}},
		{"offset parameter ignored", fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, IgnorePage: true}, 25, 10, "", want{false, "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fl := &fixtures.FaultList{FaultKnobs: tc.fl}
			fl.Records = faultRecords(tc.n)
			r := faultRuntime(t, fl, tc.size, tc.pagination, "")
			sink, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				if tc.want.complete {
					t.Fatalf("scan failed: %v", err)
				}
				return // a refusal is not a claim either
			}
			if out.ScanComplete != tc.want.complete {
				t.Fatalf("complete = %v (read %d of %d, reasons %+v, coverage %+v), want %v", out.ScanComplete, len(sink.ids), tc.n, out.Reasons, out.Sources, tc.want.complete)
			}
			if out.ScanComplete && len(sink.ids) != tc.n {
				t.Fatalf("complete with %d items, the list holds %d", len(sink.ids), tc.n)
			}
			cov := endOf(t, out)
			if tc.want.signal != "" && cov.EndSignal != tc.want.signal {
				t.Errorf("end signal = %q (%s), want %q", cov.EndSignal, cov.End, tc.want.signal)
			}
			if tc.want.complete && cov.End != envelope.EndProven {
				t.Errorf("end = %q, want proven", cov.End)
			}
			if tc.want.reason != "" && !hasReason(out, tc.want.reason) {
				t.Errorf("reasons = %+v, want %s", out.Reasons, tc.want.reason)
			}
			if tc.want.reason == envelope.ConflictingEvidence && len(sink.ids) != tc.n {
				t.Errorf("read %d items of %d: a contradicted total stops nothing", len(sink.ids), tc.n)
			}
		})
	}
}

func hasReason(out Outcome, code envelope.ReasonCode) bool {
	for _, r := range out.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// TestEndProbe_IsOneRequestRememberedPerSource checks the cost of proof: a
// single page without a next signal costs one probe, once per source.
func TestEndProbe_IsOneRequestRememberedPerSource(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectCursorNext, Records: faultRecords(5)}}
	r := faultRuntime(t, fl, 10, "", "")
	for i, want := range []int{2, 3} {
		_, out, err := scanAll(t, r, nil, Budget{})
		if err != nil || !out.ScanComplete {
			t.Fatalf("scan %d: err %v, complete %v, reasons %+v", i, err, out.ScanComplete, out.Reasons)
		}
		if got := fl.Requests(); got != want {
			t.Errorf("after scan %d the upstream saw %d requests, want %d (a probe only the first time)", i+1, got, want)
		}
	}
}

// TestEndProbe_RefusedIsUnproven: an upstream that refuses the probe proves
// nothing.
func TestEndProbe_RefusedIsUnproven(t *testing.T) {
	rec := &recorder{respond: func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("limit") == "1" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"limit must be at least 10"}`)
			return
		}
		io.WriteString(w, `{"items":[{"id":"a"},{"id":"b"}]}`)
	}}
	ts := startRecorder(t, rec)
	rt := runtimeFor(t, customConfig(ts.URL, "{dialect: cursor, next_cursor: next, page_size: 10}", "items", ""))
	_, out, err := scanAll(t, rt.Resources["items"], nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if out.ScanComplete || !hasReason(out, envelope.EndNotProven) || endOf(t, out).EndSignal != dialect.SignalProbeFailed {
		t.Errorf("complete %v, reasons %+v, coverage %+v; want END_NOT_PROVEN with %s", out.ScanComplete, out.Reasons, out.Sources, dialect.SignalProbeFailed)
	}
}

// TestHasMoreOnAnEmptyPage_IsUnproven: more is promised with no id to
// continue from.
func TestHasMoreOnAnEmptyPage_IsUnproven(t *testing.T) {
	rec := &recorder{respond: func(int, http.ResponseWriter, *http.Request) {}}
	rec.respond = func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":[],"has_more":true}`)
	}
	ts := startRecorder(t, rec)
	rt := runtimeFor(t, customConfig(ts.URL, "{dialect: cursor, has_more: has_more}", "data", ""))
	_, out, err := scanAll(t, rt.Resources["items"], nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if out.ScanComplete || endOf(t, out).EndSignal != dialect.SignalMoreOnEmpty {
		t.Errorf("complete %v, coverage %+v; want unproven with %s", out.ScanComplete, out.Sources, dialect.SignalMoreOnEmpty)
	}
}

// TestResultCapExceeded_WarnsAndKeepsTheProvenEnd: a declared cap the
// upstream exceeds is a wrong declaration, not a reason to stay partial.
func TestResultCapExceeded_WarnsAndKeepsTheProvenEnd(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, Records: faultRecords(25)}}
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	cfg := string(fixtures.FaultListConfig(ts.URL, fl.Dialect, 10, "", "")) + "    result_cap: 20\n"
	r := runtimeFor(t, []byte(cfg)).Resources["items"]
	sink, out, err := scanAll(t, r, nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if !out.ScanComplete || len(sink.ids) != 25 {
		t.Fatalf("complete %v with %d items, reasons %+v; want complete with 25", out.ScanComplete, len(sink.ids), out.Reasons)
	}
	found := false
	for _, w := range out.Warnings {
		found = found || (w.Code == envelope.WarnDeclarationContradicted && len(w.Fields) == 1 && w.Fields[0] == "result_cap")
	}
	if !found {
		t.Errorf("warnings = %+v, want %s on result_cap", out.Warnings, envelope.WarnDeclarationContradicted)
	}
}

// TestContinueWithAChangedResourceVersion_IsInconsistent: a continue token
// promises the first page's snapshot; a later page at another
// resourceVersion is a list read at two points in time.
func TestContinueWithAChangedResourceVersion_IsInconsistent(t *testing.T) {
	rec := &recorder{respond: func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("continue") == "" {
			io.WriteString(w, `{"metadata":{"resourceVersion":"100","continue":"tok"},"items":[{"id":"a"},{"id":"b"}]}`)
			return
		}
		io.WriteString(w, `{"metadata":{"resourceVersion":"117"},"items":[{"id":"c"}]}`)
	}}
	ts := startRecorder(t, rec)
	rt := runtimeFor(t, customConfig(ts.URL, "{dialect: continue, page_size: 2}", "items", ""))
	_, out, err := scanAll(t, rt.Resources["items"], nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if out.ScanComplete || !hasReason(out, envelope.InconsistentSnapshot) {
		t.Fatalf("complete %v, reasons %+v; want INCONSISTENT_SNAPSHOT", out.ScanComplete, out.Reasons)
	}
	for _, r := range out.Reasons {
		if r.Code == envelope.InconsistentSnapshot && r.Signal != "snapshot_changed" {
			t.Errorf("signal %q, want snapshot_changed", r.Signal)
		}
	}
}

// linkList serves n records (r1…) under Link headers, its pages asked for
// by number (?page=N&per_page=M, as GitHub's) or after an id
// (?after=rK&per_page=M), each honoring the size it is asked for. drop
// leaves the Link header off the page that starts at that record (0:
// none), dropNext only its next link; last names each page's last page
// as rel="last", and lastOnEvery does so beside a next link too; prev
// names the page before as rel="prev" (GitHub's).
type linkList struct {
	n, drop, dropNext int
	byAfter           bool
	last, lastOnEvery bool
	prev              bool
}

func (l linkList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size := atoi(q.Get("per_page"))
	start := 0
	switch {
	case l.byAfter && q.Get("after") != "":
		start = atoi(strings.TrimPrefix(q.Get("after"), "r"))
	case !l.byAfter && q.Get("page") != "":
		start = (atoi(q.Get("page")) - 1) * size
	}
	end := min(start+size, l.n)
	var ids []string
	for i := start + 1; i <= end; i++ {
		ids = append(ids, fmt.Sprintf("r%d", i))
	}
	at := func(from int) string {
		if l.byAfter {
			return fmt.Sprintf("/items?after=r%d&per_page=%d", from, size)
		}
		return fmt.Sprintf("/items?page=%d&per_page=%d", from/size+1, size)
	}
	var links []string
	if end < l.n && start+1 != l.dropNext {
		links = append(links, fmt.Sprintf(`<%s>; rel="next"`, at(end)))
	}
	if l.prev && start > 0 {
		links = append(links, fmt.Sprintf(`<%s>; rel="prev"`, at(start-size)))
	}
	links = append(links, fmt.Sprintf(`<%s>; rel="first"`, at(0)))
	if l.last && (end >= l.n || l.lastOnEvery) {
		links = append(links, fmt.Sprintf(`<%s>; rel="last"`, at(start)))
	}
	if start+1 != l.drop {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, records(ids...))
}

// TestWholePageRecheck_ReadsThePageItself: a whole page without a next
// link is asked for again one item smaller; behind next links that
// number pages by their size, that request starts at another item, and
// proves nothing of the page: a Link header dropped from a middle page
// is never the end, and an honest list's whole last page is proven only
// by its own word (rel="last" naming it) or, where its links name the
// page before by number (GitHub's prev), by the page after it, asked for
// by number, answering empty. Behind next links that keep their place
// (after an id), the recheck proves the end.
func TestWholePageRecheck_ReadsThePageItself(t *testing.T) {
	for _, tc := range []struct {
		name     string
		l        linkList
		complete bool
		signal   string
	}{
		{"numbered pages, the Link header dropped from a middle page", linkList{n: 5, drop: 3}, false, dialect.SignalMissingOnFull},
		{"numbered pages, a whole last page naming first only", linkList{n: 4}, false, dialect.SignalMissingOnFull},
		{"numbered pages, a whole last page naming itself last", linkList{n: 4, last: true}, true, dialect.SignalLastLink},
		{"numbered pages, last naming the page beside a next link", linkList{n: 5, last: true, lastOnEvery: true}, false, dialect.SignalFlagVsContinuation},
		{"numbered pages, a whole last page naming prev and first (GitHub's)", linkList{n: 4, prev: true}, true, dialect.SignalNoNextLink + dialect.SignalRechecked},
		{"numbered pages naming prev, the next link dropped from a middle page", linkList{n: 6, prev: true, dropNext: 3}, false, dialect.SignalMissingOnFull},
		{"numbered pages naming prev, the Link header dropped from a middle page", linkList{n: 6, prev: true, drop: 3}, false, dialect.SignalMissingOnFull},
		{"pages after an id, a whole last page naming first only", linkList{n: 4, byAfter: true}, true, dialect.SignalNoNextLink + dialect.SignalRechecked},
		{"pages after an id, the Link header dropped from a middle page", linkList{n: 5, drop: 3, byAfter: true}, false, dialect.SignalMissingOnFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(tc.l)
			t.Cleanup(ts.Close)
			r := runtimeFor(t, []byte(fmt.Sprintf(`environment: test
upstreams:
  api: {base_url: %q, retries: 0, timeout: 5s}
resources:
  items:
    upstream: api
    list: {path: /items, items: .}
    pagination: {dialect: link, page_size: 2}
    id_field: id
    fields: {id: {type: string}, status: {type: string}}
`, ts.URL))).Resources["items"]
			sink, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			src := endOf(t, out)
			if out.ScanComplete != tc.complete || src.EndSignal != tc.signal {
				t.Fatalf("items %v, complete %v, end %s/%s; want complete %v, %s", sink.ids, out.ScanComplete, src.End, src.EndSignal, tc.complete, tc.signal)
			}
			if out.ScanComplete && len(sink.ids) != tc.l.n {
				t.Errorf("complete with %d of %d records", len(sink.ids), tc.l.n)
			}
		})
	}
}
