package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// wikiServer answers like MediaWiki's api.php: every request is one path,
// and what it asks is in its query (or, for a POST, its form).
type wikiServer struct {
	mu     sync.Mutex
	seen   []*http.Request
	bodies []string
	answer func(n int, q url.Values, w http.ResponseWriter)
}

func (ws *wikiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	ws.mu.Lock()
	ws.seen = append(ws.seen, r.Clone(context.Background()))
	ws.bodies = append(ws.bodies, string(b))
	n := len(ws.seen)
	ws.mu.Unlock()
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		form, _ := url.ParseQuery(string(b))
		for k, vs := range form {
			q[k] = append(q[k], vs...)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	ws.answer(n, q, w)
}

func (ws *wikiServer) requests() []*http.Request {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return append([]*http.Request(nil), ws.seen...)
}

func startWiki(t *testing.T, answer func(n int, q url.Values, w http.ResponseWriter)) (*wikiServer, string) {
	t.Helper()
	ws := &wikiServer{answer: answer}
	ts := httptest.NewServer(ws)
	t.Cleanup(ts.Close)
	return ws, ts.URL
}

// wikiConfig is a MediaWiki configuration: upstream, then the resource's
// lines (indented under it) and anything after.
func wikiConfig(baseURL string, lines ...string) []byte {
	return configtest.Lines(append([]string{
		"environment: test",
		"upstreams:",
		"  wiki:",
		fmt.Sprintf("    base_url: %q", baseURL),
		"    credential: {env: " + fixtures.DemoTokenEnv + "}",
		"    retries: 0",
	}, lines...)...)
}

func TestMediaWikiErrorBehind200_QuotesItsWordsAsUpstreamMessage(t *testing.T) {
	_, base := startWiki(t, func(_ int, _ url.Values, w http.ResponseWriter) {
		io.WriteString(w, `{"error":{"code":"badvalue","info":"Unrecognized value for parameter \"apnamespace\": abc.","docref":"See /api.php for API usage."}}`)
	})
	rt := runtimeFor(t, wikiConfig(base,
		"resources:",
		"  pages:",
		"    upstream: wiki",
		"    list: {path: /api.php, params: {action: query, list: allpages, format: json}, items: query.allpages}",
		"    pagination: {dialect: cursor, next_cursor: continue.apcontinue, cursor_param: apcontinue, page_size_param: aplimit}",
		"    id_field: pageid",
		"    fields: {pageid: {type: integer}}",
	))
	se, out := scanError(t, rt.Resources["pages"])
	if se.Problem.Code != envelope.ProblemUpstreamErrorInSuccess {
		t.Fatalf("code = %s, want %s", se.Problem.Code, envelope.ProblemUpstreamErrorInSuccess)
	}
	if want := `Unrecognized value for parameter "apnamespace": abc.`; se.Problem.UpstreamMessage != want {
		t.Errorf("upstream_message = %q, want %q", se.Problem.UpstreamMessage, want)
	}
	if out.ScanComplete {
		t.Error("a scan that ended on an error claims to be complete")
	}
}

// allPages answers list=allpages over titles like MediaWiki: aplimit
// titles from apcontinue on, and while more remain a continue object of
// two members, both of which the next request must carry.
func allPages(titles []string, dropMember string) func(int, url.Values, http.ResponseWriter) {
	return func(_ int, q url.Values, w http.ResponseWriter) {
		limit, _ := strconv.Atoi(q.Get("aplimit"))
		from := 0
		if c := q.Get("apcontinue"); c != "" {
			if q.Get("continue") != "-||" {
				io.WriteString(w, `{"error":{"code":"badcontinue","info":"Invalid continue param. You should pass the original value returned by the previous query."}}`)
				return
			}
			from = slices.Index(titles, c)
		}
		to := min(from+limit, len(titles))
		var items []string
		for i, tt := range titles[from:to] {
			items = append(items, fmt.Sprintf(`{"pageid":%d,"ns":0,"title":%q}`, from+i+1, tt))
		}
		body := `{"query":{"allpages":[` + strings.Join(items, ",") + `]}`
		if to < len(titles) {
			cont := map[string]any{"apcontinue": titles[to], "continue": "-||"}
			delete(cont, dropMember)
			b, _ := json.Marshal(cont)
			body = `{"batchcomplete":true,"continue":` + string(b) + `,` + body[1:]
		} else {
			body = `{"batchcomplete":true,` + body[1:]
		}
		io.WriteString(w, body+"}")
	}
}

func pagesConfig(base, pagination string, extra ...string) []byte {
	return wikiConfig(base, append([]string{
		"resources:",
		"  pages:",
		"    upstream: wiki",
		"    list: {path: /api.php, params: {action: query, list: allpages, format: json, formatversion: \"2\"}, items: query.allpages}",
		"    pagination: " + pagination,
		"    id_field: pageid",
		"    fields: {pageid: {type: integer}, ns: {type: integer}, title: {type: string}}",
	}, extra...)...)
}

func TestContinuationObject_EveryMemberGoesBackAndTheEndIsProven(t *testing.T) {
	titles := []string{"A", "B, comma", `C "quoted"`, "Ünïcode", "E&F=G"}
	ws, base := startWiki(t, allPages(titles, ""))
	rt := runtimeFor(t, pagesConfig(base, "{dialect: continue_object, page_size_param: aplimit, page_size: 2}"))
	sink, out, err := scanAll(t, rt.Resources["pages"], nil, Budget{})
	if err != nil || !out.ScanComplete {
		t.Fatalf("scan = %v, complete %v (%+v)", err, out.ScanComplete, out.Reasons)
	}
	if len(sink.ids) != len(titles) {
		t.Errorf("read %d pages, want %d", len(sink.ids), len(titles))
	}
	reqs := ws.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	q := reqs[2].URL.Query()
	if q.Get("apcontinue") != "E&F=G" || q.Get("continue") != "-||" || q.Get("action") != "query" || q.Get("aplimit") != "2" {
		t.Errorf("the third request asked %v, want both members of the continuation beside the list's own parameters", q)
	}
	if got := out.Sources[0].EndSignal; got != dialect.SignalContinuationNone {
		t.Errorf("end signal = %q, want %q (the object was seen, then absent)", got, dialect.SignalContinuationNone)
	}
}

func TestContinuationObject_AbsentOnTheOnlyPageIsProvenByAProbe(t *testing.T) {
	ws, base := startWiki(t, allPages([]string{"A", "B", "C"}, ""))
	rt := runtimeFor(t, pagesConfig(base, "{dialect: continue_object, page_size_param: aplimit, page_size: 10}"))
	_, out, err := scanAll(t, rt.Resources["pages"], nil, Budget{})
	if err != nil || !out.ScanComplete {
		t.Fatalf("scan = %v, complete %v (%+v)", err, out.ScanComplete, out.Reasons)
	}
	if got := out.Sources[0].EndSignal; got != dialect.SignalContinuationNone+dialect.SignalVerified {
		t.Errorf("end signal = %q, want the absence verified by a probe", got)
	}
	if reqs := ws.requests(); len(reqs) != 2 || reqs[1].URL.Query().Get("aplimit") != "1" {
		t.Errorf("requests = %d, want the page and one probe at aplimit=1", len(reqs))
	}
}

func TestContinuationObject_ThatWouldRewriteTheRequest_IsNotFollowed(t *testing.T) {
	_, base := startWiki(t, func(n int, q url.Values, w http.ResponseWriter) {
		if n == 1 {
			io.WriteString(w, `{"continue":{"apcontinue":"B","action":"delete","continue":"-||"},"query":{"allpages":[{"pageid":1,"title":"A"}]}}`)
			return
		}
		t.Errorf("a continuation that renames the action was followed: %v", q)
		io.WriteString(w, `{"query":{"allpages":[]}}`)
	})
	rt := runtimeFor(t, pagesConfig(base, "{dialect: continue_object, page_size_param: aplimit}"))
	se, out := scanError(t, rt.Resources["pages"])
	if se.Problem.Code != envelope.ProblemUpstreamBadResponse || !strings.Contains(se.Problem.Detail, `"action"`) {
		t.Errorf("problem = %s %q, want a bad response naming the member", se.Problem.Code, se.Problem.Detail)
	}
	if out.ScanComplete {
		t.Error("complete")
	}
}

func TestContinuationObject_RepeatedIsTheSameContinuationTwice(t *testing.T) {
	_, base := startWiki(t, func(n int, _ url.Values, w http.ResponseWriter) {
		fmt.Fprintf(w, `{"continue":{"sroffset":10,"continue":"-||"},"query":{"allpages":[{"pageid":%d,"title":"T"}]}}`, n)
	})
	rt := runtimeFor(t, pagesConfig(base, "{dialect: continue_object, page_size_param: aplimit}"))
	se, _ := scanError(t, rt.Resources["pages"])
	if !strings.Contains(se.Problem.Detail, "same continuation twice") {
		t.Errorf("problem = %q, want the same continuation twice", se.Problem.Detail)
	}
}

// TestContinuationObject_GeneratorBatchesAreMergedByID replays what
// MediaWiki 1.39 answered for generator=categorymembers&prop=categories
// with gcmlimit=3&cllimit=2: the pages of a batch come back in every
// answer of the batch, each with the next part of its categories, until
// batchcomplete; gcmcontinue advances only then.
func TestContinuationObject_GeneratorBatchesAreMergedByID(t *testing.T) {
	answers := []string{
		`{"continue":{"clcontinue":"2|B","continue":"||"},"query":{"pages":[{"pageid":1,"title":"P1","categories":[{"title":"Category:A"},{"title":"Category:B"}]},{"pageid":2,"title":"P2"},{"pageid":3,"title":"P3"}]}}`,
		`{"continue":{"clcontinue":"3|A","continue":"||"},"query":{"pages":[{"pageid":1,"title":"P1"},{"pageid":2,"title":"P2","categories":[{"title":"Category:B"},{"title":"Category:C"}]},{"pageid":3,"title":"P3"}]}}`,
		`{"batchcomplete":true,"continue":{"gcmcontinue":"page|4","continue":"gcmcontinue||"},"query":{"pages":[{"pageid":1,"title":"P1"},{"pageid":2,"title":"P2"},{"pageid":3,"title":"P3","categories":[{"title":"Category:A"}]}]}}`,
		`{"batchcomplete":true,"query":{"pages":[{"pageid":4,"title":"P4","categories":[{"title":"Category:A"}]}]}}`,
	}
	ws, base := startWiki(t, func(n int, _ url.Values, w http.ResponseWriter) {
		io.WriteString(w, answers[min(n, len(answers))-1])
	})
	rt := runtimeFor(t, wikiConfig(base,
		"resources:",
		"  members:",
		"    upstream: wiki",
		"    list: {path: /api.php, params: {action: query, generator: categorymembers, gcmtitle: \"Category:A\", prop: categories, cllimit: \"2\", format: json, formatversion: \"2\"}, items: query.pages}",
		"    pagination: {dialect: continue_object, page_size_param: gcmlimit, page_size: 3, batch_complete: batchcomplete, empty_without_items: true}",
		"    id_field: pageid",
		"    fields: {pageid: {type: integer}, title: {type: string}, categories: {type: array}}",
	))
	r := rt.Resources["members"]
	docs := map[string]map[string]any{}
	s := r.NewScan(ScanSpec{Sink: sinkFunc(func(it *Item) error { docs[it.ID] = it.Doc; return nil }), RequestID: "t"})
	if err := s.Run(context.Background(), Budget{MaxPages: 100, PagesLimitSource: "airlock", Deadline: time.Minute}); err != nil {
		t.Fatal(err)
	}
	out := s.Outcome()
	if !out.ScanComplete {
		t.Fatalf("not complete: %+v", out.Reasons)
	}
	want := map[string][]string{"1": {"Category:A", "Category:B"}, "2": {"Category:B", "Category:C"}, "3": {"Category:A"}, "4": {"Category:A"}}
	for id, cats := range want {
		var got []string
		list, _ := docs[id]["categories"].([]any)
		for _, c := range list {
			got = append(got, c.(map[string]any)["title"].(string))
		}
		if !slices.Equal(got, cats) {
			t.Errorf("page %s has categories %v, want %v (merged over its batch)", id, got, cats)
		}
	}
	if len(docs) != 4 {
		t.Errorf("%d pages delivered, want 4", len(docs))
	}
	reqs := ws.requests()
	if len(reqs) != 4 || out.Pages != 4 {
		t.Errorf("%d requests, %d pages counted; want 4 of each", len(reqs), out.Pages)
	}
	if q := reqs[1].URL.Query(); q.Get("clcontinue") != "2|B" || q.Get("continue") != "||" {
		t.Errorf("the second request asked %v", q)
	}
	if q := reqs[3].URL.Query(); q.Get("gcmcontinue") != "page|4" || q.Has("clcontinue") {
		t.Errorf("the fourth request asked %v, want the generator's member alone", q)
	}
}

func TestContinuationObject_EmptyGeneratorAnswerIsAnEmptyPage(t *testing.T) {
	_, base := startWiki(t, func(_ int, _ url.Values, w http.ResponseWriter) { io.WriteString(w, `{"batchcomplete":true}`) })
	rt := runtimeFor(t, wikiConfig(base,
		"resources:",
		"  members:",
		"    upstream: wiki",
		"    list: {path: /api.php, params: {action: query, generator: categorymembers}, items: query.pages}",
		"    pagination: {dialect: continue_object, page_size_param: gcmlimit, batch_complete: batchcomplete, empty_without_items: true}",
		"    id_field: pageid",
		"    fields: {pageid: {type: integer}}",
	))
	sink, out, err := scanAll(t, rt.Resources["members"], nil, Budget{})
	if err != nil || !out.ScanComplete || len(sink.ids) != 0 || out.Sources[0].EndSignal != dialect.SignalEmptyPage {
		t.Errorf("scan = %v, complete %v, %d items, end %q; want complete and empty by an empty page", err, out.ScanComplete, len(sink.ids), out.Sources[0].EndSignal)
	}
}

func TestSearchFilter_IsSentAsWrittenAndNeverRecheckedNorComplete(t *testing.T) {
	ws, base := startWiki(t, func(_ int, q url.Values, w http.ResponseWriter) {
		// The upstream's judgment: every page whatever the words (and, at
		// srlimit=1, the first with a continue object).
		if q.Get("srsearch") == "" {
			io.WriteString(w, `{"error":{"code":"nosrsearch","info":"The \"srsearch\" parameter must be set."}}`)
			return
		}
		if q.Get("srlimit") == "1" {
			io.WriteString(w, `{"batchcomplete":true,"continue":{"sroffset":1,"continue":"-||"},"query":{"search":[{"pageid":1,"ns":0,"title":"A"}]}}`)
			return
		}
		io.WriteString(w, `{"batchcomplete":true,"query":{"searchinfo":{"totalhits":3},"search":[{"pageid":1,"ns":0,"title":"A"},{"pageid":2,"ns":4,"title":"B"},{"pageid":3,"ns":0,"title":"C"}]}}`)
	})
	rt := runtimeFor(t, wikiConfig(base,
		"resources:",
		"  pages:",
		"    upstream: wiki",
		"    list: {path: /api.php, params: {action: query, list: search, srwhat: text, format: json, formatversion: \"2\"}, items: query.search}",
		"    pagination: {dialect: continue_object, page_size_param: srlimit}",
		"    id_field: pageid",
		"    fields: {pageid: {type: integer}, ns: {type: integer}, title: {type: string}}",
		"    filters:",
		"      text: {param: srsearch, search: true}",
		"      ns: {}",
	))
	r := rt.Resources["pages"]
	hostile := `"quoted" OR 1=1 (x) & srnamespace=4 Ünïcode`
	if errs := r.CheckFilter(map[string]any{"text": []any{"a", "b"}}); len(errs) != 1 {
		t.Errorf("a list as search text: %v, want refused", errs)
	}
	sink, out, err := scanAll(t, r, map[string]any{"text": hostile, "ns": json.Number("0")}, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if q := ws.requests()[0].URL.Query(); q.Get("srsearch") != hostile || q.Has("srnamespace") || q.Get("list") != "search" {
		t.Errorf("query = %v, want the search text as one value", q)
	}
	if !slices.Equal(sink.ids, []string{"1", "3"}) {
		t.Errorf("items = %v, want the search's matches in namespace 0 (airlock checks ns, not the search)", sink.ids)
	}
	if out.ScanComplete || len(out.Reasons) != 1 || out.Reasons[0].Code != envelope.SearchMatchesUnverified {
		t.Errorf("complete %v, reasons %+v; want SEARCH_MATCHES_UNVERIFIED alone", out.ScanComplete, out.Reasons)
	}
	if s := r.SearchScope(map[string]any{"text": "x", "ns": 0}); s == nil || !slices.Equal(s.Filters, []string{"text"}) || !slices.Equal(s.Params, []string{"srsearch"}) {
		t.Errorf("scope.search = %+v", s)
	}
}
