package upstream

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

var allDatasets = []string{fixtures.DatasetServiceAccounts, fixtures.DatasetSubscriptions, fixtures.DatasetProjects}

// adminRuntime initializes a configuration whose credential (read from
// AIRLOCK_DEMO_TOKEN) is the fixture's admin token, which sees every record.
func adminRuntime(t *testing.T, yaml []byte) *Runtime {
	t.Helper()
	return runtimeWith(t, yaml, func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultAdminToken
		}
		return ""
	})
}

// fixtureServer starts a fixture API that fails the test on any route it
// does not serve. prepare, when set, runs before it serves.
func fixtureServer(t *testing.T, prepare func(*fixtures.Server)) (*fixtures.Server, string) {
	t.Helper()
	srv := &fixtures.Server{OnUnknownRoute: func(m, p string) { t.Errorf("fixture: unexpected %s %s", m, p) }}
	if prepare != nil {
		prepare(srv)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

// checkSameSet reports the ids that are missing, unexpected or repeated.
func checkSameSet(t *testing.T, got, want []string) {
	t.Helper()
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	var dups, extra, missing []string
	wantSet := map[string]bool{}
	for _, id := range want {
		wantSet[id] = true
		if count[id] == 0 {
			missing = append(missing, id)
		}
	}
	for id, n := range count {
		if n > 1 {
			dups = append(dups, id)
		}
		if !wantSet[id] {
			extra = append(extra, id)
		}
	}
	for _, l := range []struct {
		what string
		ids  []string
	}{{"missing", missing}, {"unexpected", extra}, {"duplicated", dups}} {
		if len(l.ids) > 0 {
			slices.Sort(l.ids)
			t.Errorf("%d ids %s (of %d read, %d wanted), first: %v", len(l.ids), l.what, len(got), len(want), l.ids[:min(5, len(l.ids))])
		}
	}
}

// configAt is fixtures.Config for r, reading the data set the server holds
// under alias (a copy of part of r.Dataset added with SetCollection).
func configAt(t *testing.T, baseURL string, r fixtures.Resource, alias string) []byte {
	t.Helper()
	cfg := string(fixtures.Config(baseURL, r))
	from := fmt.Sprintf("/x/%s/%s,", r.Dialect, r.Dataset)
	if !strings.Contains(cfg, from) {
		t.Fatalf("generated configuration has no list path %s:\n%s", from, cfg)
	}
	return []byte(strings.Replace(cfg, from, fmt.Sprintf("/x/%s/%s,", r.Dialect, alias), 1))
}

// addPrefix stores the first n records of a data set under a new name.
func addPrefix(srv *fixtures.Server, dataset string, n int) string {
	alias := fmt.Sprintf("%s_first_%d", dataset, n)
	srv.SetCollection(alias, fixtures.NewCollection(srv.Collection(dataset).All()[:n]))
	return alias
}

// stringEnd are the fixture's dialects whose last page says it is the last
// by a continuation that is missing or empty, not by a flag or a total.
var stringEnd = map[string]bool{fixtures.DialectContinue: true, fixtures.DialectCursorNext: true, fixtures.DialectLink: true,
	fixtures.DialectContinueObject: true, fixtures.DialectNextURL: true}

func TestEveryDialect_ScansWholeCollection(t *testing.T) {
	type variant struct {
		pageSize, concurrency int
		records               int // the data set is cut to its first records (0: empty)
	}
	// The fixture copies its whole collection on every request, so each run
	// reads a prefix of the data set sized for its page size: a multiple of
	// the page size (the last page is full), a partial last page, a single
	// page, and an empty collection.
	base := []variant{
		{1, 1, 30},
		{7, 1, 28}, {7, 1, 31},
		{50, 1, 200}, {50, 1, 203}, {50, 1, 49},
		{100, 1, 400}, {100, 1, 401}, {100, 1, 100},
		{50, 1, 0},
	}
	for _, kind := range fixtures.AllDialects {
		variants := base
		if kind == fixtures.DialectOffset || kind == fixtures.DialectPage {
			for _, v := range base {
				v.concurrency = 4
				variants = append(variants, v)
			}
		}
		t.Run(kind, func(t *testing.T) {
			// One seeded server per dialect, shared by its runs: each run
			// reads its own copy of the data, so they do not interfere. (The
			// fixture keeps 64 continue snapshots; a dialect runs fewer scans.)
			srv, url := fixtureServer(t, nil)
			for _, ds := range allDatasets {
				for _, v := range variants {
					alias := addPrefix(srv, ds, v.records)
					want := srv.Collection(alias).IDs()
					name := fmt.Sprintf("%s/page_size=%d/concurrency=%d/records=%d", ds, v.pageSize, v.concurrency, v.records)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						if kind == fixtures.DialectOffset && v.pageSize == 1 {
							// The overlap item would be the whole page: the
							// configuration refuses it instead of spinning.
							if _, err := config.Parse(configAt(t, url, fixtures.Resource{Name: "r", Dataset: ds, Dialect: kind, PageSize: 1}, alias)); err == nil || !strings.Contains(err.Error(), "at least 2") {
								t.Fatalf("an offset page size of 1 must be refused, got %v", err)
							}
							return
						}
						rt := adminRuntime(t, configAt(t, url, fixtures.Resource{Name: "r", Dataset: ds, Dialect: kind, PageSize: v.pageSize, Concurrency: v.concurrency}, alias))

						// A dialect that stops advancing runs out of pages quickly.
						budget := Budget{MaxPages: 2*len(want)/v.pageSize + 10, PagesLimitSource: "airlock"}
						sink, out, err := scanAll(t, rt.Resources["r"], nil, budget)
						if err != nil {
							t.Fatalf("scan: %v", err)
						}
						checkSameSet(t, sink.ids, want)
						if stringEnd[kind] && kind != fixtures.DialectLink && v.pageSize == 1 && v.records > 0 {
							// A last page of one item is whole: a continuation
							// missing or emptied there (Kubernetes leaves the
							// token off its last chunk) looks the same as one
							// dropped from a page, and a page of one cannot be
							// asked for again one item smaller. (The demo's
							// Link header names its last page as last.)
							if src := endOf(t, out); out.ScanComplete || src.EndSignal != dialect.SignalMissingOnFull {
								t.Errorf("outcome: complete=%v end %s/%s, want END_NOT_PROVEN %s", out.ScanComplete, src.End, src.EndSignal, dialect.SignalMissingOnFull)
							}
							return
						}
						if !out.ScanComplete || len(out.Reasons) > 0 {
							t.Errorf("outcome: complete=%v reasons=%+v, want complete", out.ScanComplete, out.Reasons)
						}
						if out.ItemsScanned != len(want) || out.Matched != len(want) {
							t.Errorf("outcome: scanned %d matched %d, want %d", out.ItemsScanned, out.Matched, len(want))
						}
						if out.Continuation != envelope.ContinueNone {
							t.Errorf("continuation = %q, want %q", out.Continuation, envelope.ContinueNone)
						}
					})
				}
			}
		})
	}
}

// filterConfig reads a subscriptions data set through the offset dialect
// with filters whose upstream parameters are given.
func filterConfig(baseURL, dataset, statusParam, regionParam, tagsParam string) []byte {
	return configtest.Lines(
		"environment: test",
		"upstreams:",
		fmt.Sprintf("  api: {base_url: %q, credential: {env: %s}, retries: 0}", baseURL, fixtures.DemoTokenEnv),
		"resources:",
		"  subs:",
		"    upstream: api",
		"    list: {path: /x/offset/"+dataset+", items: items}",
		"    pagination: {dialect: offset, page_size: 100, total: total}",
		"    id_field: id",
		"    fields:",
		"      id: {type: string}",
		"      status: {type: string}",
		"      region: {type: string}",
		"      tags: {type: array}",
		"    filters:",
		"      status: {param: "+statusParam+", multi: comma}",
		"      region: {param: "+regionParam+"}",
		"      tags: {param: "+tagsParam+", op: contains}",
	)
}

// hasConflict reports a CONFLICTING_EVIDENCE on the filter named.
func hasConflict(out Outcome, filter string) bool {
	for _, rs := range out.Reasons {
		if rs.Code == envelope.ConflictingEvidence && rs.Signal == dialect.SignalFilterConflict && rs.Filter == filter && rs.Count != nil && *rs.Count > 0 && rs.SampleID != "" {
			return true
		}
	}
	return false
}

// TestFilters_AreAppliedLocallyEvenWhenTheUpstreamIgnoresThem: airlock
// re-checks every filter on every record, so an upstream that ignores a
// parameter never widens the answer; and since the records it returned for
// a filter contradict the filter, the answer is not complete either.
func TestFilters_AreAppliedLocallyEvenWhenTheUpstreamIgnoresThem(t *testing.T) {
	const records = 1000 // a prefix of the subscriptions keeps the fixture fast
	hasTag := func(r fixtures.Record, tag string) bool {
		tags, _ := r["tags"].([]any)
		return slices.Contains(tags, any(tag))
	}
	srv, url := fixtureServer(t, nil)
	all := srv.Collection(fixtures.DatasetSubscriptions).All()[:records]
	for i, tc := range []struct {
		name   string
		filter map[string]any
		want   func(fixtures.Record) bool
	}{
		{"equality", map[string]any{"status": "past_due"},
			func(r fixtures.Record) bool { return r["status"] == "past_due" }},
		{"any of", map[string]any{"status": []any{"paused", "canceled"}},
			func(r fixtures.Record) bool { return r["status"] == "paused" || r["status"] == "canceled" }},
		{"contains", map[string]any{"tags": "disputed"},
			func(r fixtures.Record) bool { return hasTag(r, "disputed") }},
		{"two filters", map[string]any{"status": "past_due", "region": "eu"},
			func(r fixtures.Record) bool { return r["status"] == "past_due" && r["region"] == "eu" }},
	} {
		var want []string
		for _, r := range all {
			if tc.want(r) {
				want = append(want, r.ID())
			}
		}
		if len(want) == 0 {
			t.Fatalf("%s: no record matches the filter; the case proves nothing", tc.name)
		}
		for _, honoured := range []bool{true, false} {
			name := tc.name + "/upstream honours the parameters"
			params := map[string]string{"status": "status", "region": "region", "tags": "tags"}
			if !honoured {
				name = tc.name + "/upstream ignores the parameters"
				params = map[string]string{"status": "nonexistent_param", "region": "nonexistent_region", "tags": "nonexistent_tags"}
			}
			// Each run reads its own copy, so the request log tells runs apart.
			alias := fmt.Sprintf("subscriptions_filter_%d_%v", i, honoured)
			srv.SetCollection(alias, fixtures.NewCollection(all))
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				rt := adminRuntime(t, filterConfig(url, alias, params["status"], params["region"], params["tags"]))
				sink, out, err := scanAll(t, rt.Resources["subs"], tc.filter, Budget{})
				if err != nil {
					t.Fatalf("scan: %v", err)
				}
				checkSameSet(t, sink.ids, want)
				if out.Matched != len(want) {
					t.Errorf("matched %d, want %d", out.Matched, len(want))
				}
				if honoured && !out.ScanComplete {
					t.Errorf("outcome: complete=%v reasons=%+v, want complete", out.ScanComplete, out.Reasons)
				}
				if !honoured {
					// The upstream returned records for filters it was sent
					// that airlock's check rejects: the two disagree on what
					// the filter means, and the answer says so.
					if out.ScanComplete {
						t.Errorf("complete although the upstream returned records its filter should have kept out")
					}
					for name := range tc.filter {
						if !hasConflict(out, name) {
							t.Errorf("reasons %+v: want %s (%s) on filter %s", out.Reasons, envelope.ConflictingEvidence, dialect.SignalFilterConflict, name)
						}
					}
				}
				if !honoured && out.ItemsScanned != records {
					t.Errorf("scanned %d items, want all %d (the upstream ignored the filter)", out.ItemsScanned, records)
				}
				// Every request carried the filter under its configured parameter.
				n := 0
				for _, r := range srv.Requests() {
					if !strings.HasSuffix(r.Path, "/"+alias) {
						continue
					}
					n++
					for k := range tc.filter {
						if r.Query.Get(params[k]) == "" {
							t.Errorf("request %s?%s does not carry filter %s as %s", r.Path, r.Query.Encode(), k, params[k])
						}
					}
				}
				if n == 0 {
					t.Error("the upstream saw no request for this run")
				}
			})
		}
	}
}

func TestLinkDialect_NeverReportsCompleteWhileANextLinkRemains(t *testing.T) {

	rec := &recorder{respond: func(_ int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/items" {
			w.Header().Set("Link", `</items;v=2?page=2>; rel="next"`)
			io.WriteString(w, `[{"id":"a"}]`)
			return
		}
		io.WriteString(w, `[{"id":"b"}]`)
	}}
	ts := startRecorder(t, rec)
	rt := runtimeFor(t, customConfig(ts.URL, "{dialect: link, page_size: 1}", ".", ""))

	sink, out, err := scanAll(t, rt.Resources["items"], nil, Budget{MaxPages: 10, PagesLimitSource: "airlock"})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if out.ScanComplete && len(sink.ids) != 2 {
		t.Errorf("the scan claims to be complete after reading %v; the upstream's next page was never read", sink.ids)
	}
	checkSameSet(t, sink.ids, []string{"a", "b"})
}

// customConfig reads /items from baseURL with the given pagination block
// and items path.
func customConfig(baseURL, pagination, items, upstreamExtra string) []byte {
	return configtest.Lines(
		"environment: test",
		"upstreams:",
		"  api:",
		fmt.Sprintf("    base_url: %q", baseURL),
		"    credential: {env: "+fixtures.DemoTokenEnv+"}",
		"    retries: 0",
		"    "+upstreamExtra,
		"resources:",
		"  items:",
		"    upstream: api",
		fmt.Sprintf("    list: {path: /items, items: %q}", items),
		"    pagination: "+pagination,
		"    id_field: id",
		"    fields:",
		"      id: {type: string}",
	)
}

// scanError runs a scan with a small page budget and returns its
// *ScanError (failing the test when the scan ends without one).
func scanError(t *testing.T, r *Resource) (*ScanError, Outcome) {
	t.Helper()
	_, out, err := scanAll(t, r, nil, Budget{MaxPages: 50, PagesLimitSource: "airlock"})
	var se *ScanError
	if !errors.As(err, &se) {
		t.Fatalf("scan ended with error %v (outcome %+v), want a *ScanError", err, out.Reasons)
	}
	return se, out
}

func TestLinkToAnotherHost_IsNotFollowed(t *testing.T) {
	other := &recorder{}
	otherTS := startRecorder(t, other)
	otherHost := strings.TrimPrefix(otherTS.URL, "http://")
	for _, tc := range []struct {
		name string
		next func(originHost string) string
	}{
		{"absolute URL on another host", func(string) string { return otherTS.URL + "/items?page=2" }},
		{"scheme-relative URL on another host", func(string) string { return "//" + otherHost + "/items?page=2" }},
		{"same host over another scheme", func(h string) string { return "https://" + h + "/items?page=2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := &recorder{respond: func(_ int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, tc.next(r.Host)))
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `[{"id":"a"},{"id":"b"}]`)
			}}
			ts := startRecorder(t, origin)
			rt := runtimeFor(t, customConfig(ts.URL, "{dialect: link, page_size: 2}", ".", ""))

			se, out := scanError(t, rt.Resources["items"])
			if se.Problem.Code != envelope.ProblemUpstreamBadResponse {
				t.Errorf("code = %s, want %s", se.Problem.Code, envelope.ProblemUpstreamBadResponse)
			}
			if !strings.Contains(se.Problem.Detail, "another host") {
				t.Errorf("detail = %q, want it to say the continuation points at another host", se.Problem.Detail)
			}
			if out.ScanComplete {
				t.Error("the scan claims to be complete")
			}
			if got := len(origin.requests()); got != 1 {
				t.Errorf("origin saw %d requests, want 1", got)
			}
		})
	}
	if got := other.requests(); len(got) != 0 {
		t.Errorf("the other host saw %d requests (first with Authorization %q), want none", len(got), got[0].Header.Get("Authorization"))
	}
}

func TestRedirectToAnotherHost_EndsScanWithBadResponse(t *testing.T) {

	other := &recorder{}
	otherTS := startRecorder(t, other)
	origin := &recorder{respond: func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherTS.URL+"/items", http.StatusFound)
	}}
	ts := startRecorder(t, origin)
	rt := runtimeFor(t, customConfig(ts.URL, "{dialect: link}", ".", ""))

	se, _ := scanError(t, rt.Resources["items"])
	if se.Problem.Code != envelope.ProblemUpstreamBadResponse {
		t.Errorf("code = %s, want %s", se.Problem.Code, envelope.ProblemUpstreamBadResponse)
	}
	if got := len(other.requests()); got != 0 {
		t.Errorf("the other host saw %d requests, want none", got)
	}
}

func TestRepeatedContinuation_EndsScanWithBadResponse(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pagination string
		items      string
		body       string
		link       string
	}{
		{"cursor next_cursor", "{dialect: cursor, next_cursor: next}", "data", `{"data":[{"id":"a"}],"next":"abc"}`, ""},
		{"cursor has_more", "{dialect: cursor, has_more: has_more}", "data", `{"data":[{"id":"a"}],"has_more":true}`, ""},
		{"continue", "{dialect: continue}", "items", `{"items":[{"id":"a"}],"metadata":{"continue":"tok","resourceVersion":"7"}}`, ""},
		{"link", "{dialect: link}", ".", `[{"id":"a"}]`, `</items?page=2>; rel="next"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{respond: func(_ int, w http.ResponseWriter, _ *http.Request) {
				if tc.link != "" {
					w.Header().Set("Link", tc.link)
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.body)
			}}
			ts := startRecorder(t, rec)
			rt := runtimeFor(t, customConfig(ts.URL, tc.pagination, tc.items, ""))

			se, out := scanError(t, rt.Resources["items"])
			if se.Problem.Code != envelope.ProblemUpstreamBadResponse || !strings.Contains(se.Problem.Detail, "same continuation twice") {
				t.Errorf("problem = %s %q, want %s about the same continuation", se.Problem.Code, se.Problem.Detail, envelope.ProblemUpstreamBadResponse)
			}
			if out.ScanComplete {
				t.Error("the scan claims to be complete")
			}
			if got := len(rec.requests()); got != 2 {
				t.Errorf("upstream saw %d requests, want 2 (the scan stops at the repeat)", got)
			}
		})
	}
}

func TestMalformedResponse_EndsScanWithBadResponse(t *testing.T) {
	const valid = `{"data":[{"id":"a"}],"has_more":false}`
	bad, ctype, large, errInOK := envelope.ProblemUpstreamBadResponse, envelope.ProblemUpstreamContentType, envelope.ProblemUpstreamTooLarge, envelope.ProblemUpstreamErrorInSuccess
	for _, tc := range []struct {
		name        string
		contentType string
		body        string
		ok          bool
		code        envelope.ProblemCode
	}{
		{"html content type", "text/html", valid, false, ctype},
		{"plain text content type", "text/plain; charset=utf-8", valid, false, ctype},
		{"unparsable content type", "application/json; charset", valid, false, ctype},
		{"not JSON", "application/json", `<html><body>Service temporarily unavailable</body></html>`, false, bad},
		{"truncated JSON", "application/json", `{"data":[{"id":"a"}`, false, bad},
		{"data after the document", "application/json", valid + ` {"data":[]}`, false, bad},
		{"items not an array", "application/json", `{"data":{"id":"a"},"has_more":false}`, false, bad},
		{"item not an object", "application/json", `{"data":["a"],"has_more":false}`, false, bad},
		{"body over max_body_bytes", "application/json", `{"data":[` + strings.Repeat(`{"id":"a"},`, 200) + `{"id":"b"}],"has_more":false}`, false, large},
		{"an error object behind 200", "application/json", `{"error":{"message":"index unavailable"}}`, false, errInOK},
		{"ok false behind 200", "application/json", `{"ok":false,"error":"ratelimited"}`, false, errInOK},
		{"errors true behind 200", "application/json", `{"errors":true,"data":[],"has_more":false}`, false, errInOK},
		{"json", "application/json", valid, true, ""},
		{"json with charset", "application/json; charset=utf-8", valid, true, ""},
		{"vendor json", "application/vnd.api+json", valid, true, ""},
		{"no content type", "", valid, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{respond: func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Header()["Content-Type"] = []string{tc.contentType}
				if tc.contentType == "" {
					w.Header()["Content-Type"] = nil // no sniffing either
				}
				io.WriteString(w, tc.body)
			}}
			ts := startRecorder(t, rec)
			rt := runtimeFor(t, customConfig(ts.URL, "{dialect: cursor, has_more: has_more}", "data", "max_body_bytes: 1000"))

			if tc.ok {
				sink, out, err := scanAll(t, rt.Resources["items"], nil, Budget{})
				if err != nil || !out.ScanComplete || len(sink.ids) != 1 {
					t.Errorf("scan = %v, complete %v, %d items; want a complete scan of one item", err, out.ScanComplete, len(sink.ids))
				}
				return
			}
			se, out := scanError(t, rt.Resources["items"])
			if se.Problem.Code != tc.code {
				t.Errorf("code = %s (%v), want %s", se.Problem.Code, se.Err, tc.code)
			}
			if out.ScanComplete {
				t.Error("the scan claims to be complete")
			}
			if got := len(rec.requests()); got != 1 {
				t.Errorf("upstream saw %d requests, want 1 (a bad response is not retried)", got)
			}
		})
	}
}
