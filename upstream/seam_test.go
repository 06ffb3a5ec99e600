package upstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// The seam: where a configuration and the API it describes disagree, the
// answer is doubt, never a claim made from the configuration.

// posts serves WordPress-shaped posts: categories is a list of integers,
// ?categories=4,9 selects posts in any of them, and pages are numbered
// with X-WP-Total and X-WP-TotalPages.
func posts(t *testing.T, n int) (*httptest.Server, func(cat int) []string) {
	t.Helper()
	type post struct {
		ID         int    `json:"id"`
		Status     string `json:"status"`
		Categories []int  `json:"categories"`
	}
	all := make([]post, n)
	for i := range all {
		cats := []int{1 + i%5}
		if i%3 == 0 {
			cats = append(cats, 4)
		}
		all[i] = post{ID: i + 1, Status: "publish", Categories: cats}
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var list []post
		for _, p := range all {
			keep := q.Get("categories") == ""
			for _, c := range strings.Split(q.Get("categories"), ",") {
				keep = keep || slices.Contains(p.Categories, atoi(c))
			}
			if keep {
				list = append(list, p)
			}
		}
		size, page := max(atoi(q.Get("per_page")), 1), max(atoi(q.Get("page")), 1)
		pages := (len(list) + size - 1) / size
		if page > max(pages, 1) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"code":"rest_post_invalid_page_number","message":"The page number requested is larger than the number of pages available."}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-WP-Total", strconv.Itoa(len(list)))
		w.Header().Set("X-WP-TotalPages", strconv.Itoa(pages))
		start := min((page-1)*size, len(list))
		_ = json.NewEncoder(w).Encode(list[start:min(start+size, len(list))])
	}))
	t.Cleanup(ts.Close)
	truth := func(cat int) []string {
		var ids []string
		for _, p := range all {
			if slices.Contains(p.Categories, cat) {
				ids = append(ids, strconv.Itoa(p.ID))
			}
		}
		return ids
	}
	return ts, truth
}

func atoi(s string) int { n, _ := strconv.Atoi(strings.TrimSpace(s)); return n }

func postsConfig(url, elements, pagination string) []byte {
	return []byte(fmt.Sprintf(`environment: test
upstreams:
  wp: {base_url: %q, retries: 0, timeout: 5s}
resources:
  posts:
    upstream: wp
    list: {path: /wp/v2/posts, items: .}
    pagination: {dialect: page, page_param: page, page_size_param: per_page, page_size: 100, total_header: X-WP-Total%s}
    id_field: id
    fields:
      id: {type: integer}
      status: {type: string}
      categories: {type: array%s}
    filters:
      categories: {param: categories, op: contains, multi: comma}
`, url, pagination, elements))
}

// TestFilterValues_AreComparedInTheFieldsType: 4 and "4" ask for the same
// category, whether the element type is declared or learned from the
// data, and the answer is the upstream's exact count, complete. A value
// that is no integer is refused before anything is sent.
func TestFilterValues_AreComparedInTheFieldsType(t *testing.T) {
	ts, truth := posts(t, 743)
	want := truth(4)
	for _, elements := range []string{", elements: integer", ""} {
		r := runtimeFor(t, postsConfig(ts.URL, elements, "")).Resources["posts"]
		for _, v := range []any{json.Number("4"), "4", " 4", []any{"4"}} {
			t.Run(fmt.Sprintf("elements %q, value %#v", elements, v), func(t *testing.T) {
				filter, errs := r.TypedFilter(map[string]any{"categories": v})
				if len(errs) > 0 {
					t.Fatalf("refused: %+v", errs)
				}
				sink, out, err := scanAll(t, r, filter, Budget{})
				if err != nil {
					t.Fatal(err)
				}
				if !out.ScanComplete || out.Matched != len(want) {
					t.Fatalf("complete %v, matched %d, reasons %+v; want complete with the upstream's %d", out.ScanComplete, out.Matched, out.Reasons, len(want))
				}
				checkSameSet(t, sink.ids, want)
			})
		}
	}
	r := runtimeFor(t, postsConfig(ts.URL, ", elements: integer", "")).Resources["posts"]
	_, errs := r.TypedFilter(map[string]any{"categories": []any{"4", "four", json.Number("4.5")}})
	if len(errs) != 2 || errs[0].Field != "filter.categories[1]" || errs[1].Field != "filter.categories[2]" || errs[0].Code != envelope.FieldType {
		t.Fatalf("want both bad elements refused as type errors, got %+v", errs)
	}
}

// TestFilterDisagreement_IsNeverComplete: an upstream whose filter means
// something else than airlock's check (it widens status=active to
// disabled records too) returned records the check rejects. The answer
// keeps only what the check accepts and is not complete: a stable code
// names the filter, the value sent and a value seen.
func TestFilterDisagreement_IsNeverComplete(t *testing.T) {
	for _, empty := range []bool{false, true} {
		t.Run(fmt.Sprintf("empty %v", empty), func(t *testing.T) {
			fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectCursor, Filter: "ignore"}}
			fl.Records = faultRecords(40)
			want := "active"
			if empty {
				for i := range fl.Records {
					if fl.Records[i]["status"] == "active" {
						fl.Records[i]["status"] = "archived"
					}
				}
			}
			r := faultRuntime(t, fl, 10, "", "")
			_, out, err := scanAll(t, r, map[string]any{"status": want}, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if out.ScanComplete {
				t.Fatalf("complete with %d matched although the upstream returned records its filter should have kept out", out.Matched)
			}
			var rs envelope.Reason
			for _, x := range out.Reasons {
				if x.Code == envelope.ConflictingEvidence {
					rs = x
				}
			}
			if rs.Signal != dialect.SignalFilterConflict || rs.Filter != "status" || rs.Sent != "active" || rs.Seen == nil || rs.Seen == "active" || rs.SampleID == "" || rs.Count == nil || *rs.Count == 0 {
				t.Fatalf("want CONFLICTING_EVIDENCE naming both sides, got %+v", out.Reasons)
			}
		})
	}
}

// TestEndFlag_BesideAContinuationIsNotAnEnd: an end flag that says "last"
// on every page (configured at the wrong path) beside a continuation on
// the same page proves nothing: the answer is partial, never 10 of 40
// called complete.
func TestEndFlag_BesideAContinuationIsNotAnEnd(t *testing.T) {
	for _, tc := range []struct{ dialect, pagination string }{
		{fixtures.DialectPostCursor, "is_last: isLast"},
		{fixtures.DialectNextURL, "next: next, is_last: done"},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: tc.dialect, EndFlag: true, LyingEndFlag: true}}
			fl.Records = faultRecords(40)
			r := faultRuntime(t, fl, 10, tc.pagination, "")
			_, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if out.ScanComplete || !hasReason(out, envelope.ConflictingEvidence) {
				t.Fatalf("complete %v with %d of 40, reasons %+v: want CONFLICTING_EVIDENCE", out.ScanComplete, out.ItemsScanned, out.Reasons)
			}
			if cov := endOf(t, out); cov.End != envelope.EndUnproven || cov.EndSignal != dialect.SignalFlagVsContinuation {
				t.Fatalf("coverage %+v: want an unproven end, %s", cov, dialect.SignalFlagVsContinuation)
			}
		})
	}
}

// TestPageDialect_StopsAtTheLastPageItCounts: a declared count of pages
// ends the list on the page it names last; no page past it is asked for
// (WordPress answers 400 for one). A page count that contradicts the total
// or the records is CONFLICTING_EVIDENCE.
func TestPageDialect_StopsAtTheLastPageItCounts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		knobs      fixtures.FaultKnobs
		n          int
		pagination string
		requests   int
		complete   bool
		signal     string
	}{
		{"one page, pages in a header", fixtures.FaultKnobs{TotalPages: "header", PastEndStatus: 400}, 49, "total_pages_header: X-Total-Pages", 1, true, dialect.SignalTotalPages},
		{"one page, pages in the body", fixtures.FaultKnobs{TotalPages: "body", PastEndStatus: 400}, 49, "total_pages: total_pages", 1, true, dialect.SignalTotalPages},
		{"three pages, the total reached on the last", fixtures.FaultKnobs{TotalPages: "header", PastEndStatus: 400}, 250, "total_pages_header: X-Total-Pages", 3, true, dialect.SignalTotalReached},
		{"three full pages", fixtures.FaultKnobs{TotalPages: "header", PastEndStatus: 400}, 300, "total_pages_header: X-Total-Pages", 3, true, dialect.SignalTotalPages},
		{"a page count one too low", fixtures.FaultKnobs{TotalPages: "low", PastEndStatus: 400}, 250, "total_pages_header: X-Total-Pages", 2, false, dialect.SignalTotalVsPages},
		{"an exact total on one short page", fixtures.FaultKnobs{PastEndStatus: 400}, 49, "total_exact: true", 1, true, dialect.SignalTotalReached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.knobs.Dialect = fixtures.DialectPage
			fl := &fixtures.FaultList{FaultKnobs: tc.knobs}
			fl.Records = faultRecords(tc.n)
			r := faultRuntime(t, fl, 100, tc.pagination, "")
			sink, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatalf("scan failed: %v", err)
			}
			if fl.Requests() != tc.requests {
				t.Errorf("%d requests, want %d", fl.Requests(), tc.requests)
			}
			if out.ScanComplete != tc.complete || endOf(t, out).EndSignal != tc.signal {
				t.Fatalf("complete %v, coverage %+v, reasons %+v; want complete %v by %s", out.ScanComplete, out.Sources, out.Reasons, tc.complete, tc.signal)
			}
			if tc.complete && len(sink.ids) != tc.n {
				t.Fatalf("complete with %d of %d", len(sink.ids), tc.n)
			}
			if !tc.complete && !hasReason(out, envelope.ConflictingEvidence) {
				t.Fatalf("reasons %+v: want CONFLICTING_EVIDENCE", out.Reasons)
			}
		})
	}
}

// TestPageDialect_ATotalThatShrinksIsInconsistent: records deleted between
// pages change the total; a page the shrunk list no longer has is refused
// (400). The answer is INCONSISTENT_SNAPSHOT with a restart, in sequence
// and in parallel, never UPSTREAM_REJECTED_REQUEST.
func TestPageDialect_ATotalThatShrinksIsInconsistent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pagination string
		deleted    int
	}{
		{"one deleted, total only", "", 1},
		{"one deleted, with a page count", "total_pages_header: X-Total-Pages", 1},
		{"a page's worth deleted, in parallel", "total_pages_header: X-Total-Pages, concurrency: 3", 100},
		{"a page's worth deleted", "", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectPage, TotalPages: "header", PastEndStatus: 400,
				Mutate: func(n int, recs []fixtures.Record) []fixtures.Record {
					if n == 2 {
						return recs[tc.deleted:]
					}
					return recs
				}}}
			fl.Records = faultRecords(298)
			r := faultRuntime(t, fl, 100, tc.pagination, "")
			_, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatalf("the shrunk list failed the scan: %v", err)
			}
			if out.ScanComplete || !hasReason(out, envelope.InconsistentSnapshot) || out.Continuation != envelope.ContinueRestart {
				t.Fatalf("complete %v, reasons %+v, continuation %q: want INCONSISTENT_SNAPSHOT with restart", out.ScanComplete, out.Reasons, out.Continuation)
			}
		})
	}
}

// TestPageDialect_ARefusedLaterPageIsNoArgumentError: an upstream that
// refuses to page deeper than it will (the total unchanged) ends the
// source unproven, with the records read; the call is not failed as if its
// arguments were wrong.
func TestPageDialect_ARefusedLaterPageIsNoArgumentError(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectPage, Total: "high", PastEndStatus: 400}}
	fl.Records = faultRecords(200)
	r := faultRuntime(t, fl, 100, "", "")
	sink, out, err := scanAll(t, r, nil, Budget{})
	if err != nil {
		t.Fatalf("scan failed: %v", err)
	}
	if out.ScanComplete || len(sink.ids) != 200 || endOf(t, out).EndSignal != dialect.SignalPageRefused || !hasReason(out, envelope.EndNotProven) {
		t.Fatalf("complete %v with %d, coverage %+v, reasons %+v", out.ScanComplete, len(sink.ids), out.Sources, out.Reasons)
	}
}

// TestDeclaredRestrictedView: a credential declared to see only published
// posts answers a filter within that view completely; any other scope is
// partial with VISIBILITY_RESTRICTED, also when it finds nothing.
func TestDeclaredRestrictedView(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectCursor}}
	fl.Records = faultRecords(30)
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	yaml := string(fixtures.FaultListConfig(ts.URL, fixtures.DialectCursor, 10, "", "")) +
		"    visibility: {restricted: anonymous reads never show archived records, only: {status: [active, disabled]}}\n"
	r := runtimeFor(t, []byte(yaml)).Resources["items"]
	for _, tc := range []struct {
		filter   map[string]any
		complete bool
	}{
		{map[string]any{"status": "active"}, true},
		{map[string]any{"status": []any{"active", "disabled"}}, true},
		{map[string]any{"status": "archived"}, false},
		{map[string]any{"status": []any{"active", "archived"}}, false},
		{nil, false},
		{map[string]any{"owner": "team-1"}, false},
	} {
		_, out, err := scanAll(t, r, tc.filter, Budget{})
		if err != nil {
			t.Fatal(err)
		}
		if out.ScanComplete != tc.complete || hasReason(out, envelope.VisibilityRestricted) == tc.complete {
			t.Errorf("filter %v: complete %v, reasons %+v; want complete %v", tc.filter, out.ScanComplete, out.Reasons, tc.complete)
		}
	}
}
