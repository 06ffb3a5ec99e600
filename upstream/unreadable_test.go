package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream/contract"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// paged is a peer that answers each list request with the page its
// continuation parameter names ("" for the first page), as an upstream
// would: bodies and headers exactly as written, so that a test says what
// one page held. It fails the test on a continuation it does not serve.
type paged struct {
	t     *testing.T
	param string
	pages map[string]pagedPage
	mu    sync.Mutex
	asked []string
}

type pagedPage struct {
	body   string
	header http.Header
}

func (s *paged) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get(s.param)
	s.mu.Lock()
	s.asked = append(s.asked, key)
	s.mu.Unlock()
	pg, ok := s.pages[key]
	if !ok {
		// A probe asks for the first page at page size 1.
		s.t.Errorf("asked for a page not paged: %s", r.URL.RawQuery)
		http.Error(w, "not paged", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for k, vs := range pg.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	fmt.Fprint(w, pg.body)
}

// pagedResource is the resource items over a paged peer with the
// pagination given (a YAML flow mapping's body) and items at items.
func pagedResource(t *testing.T, s *paged, pagination, items string, extra string) *Resource {
	t.Helper()
	return pagedList(t, s, fmt.Sprintf("items: %q", items), pagination, extra)
}

// pagedList is pagedResource with more of the list declared (list's YAML
// flow mapping but its path).
func pagedList(t *testing.T, s *paged, list, pagination string, extra string) *Resource {
	t.Helper()
	s.t = t
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	rt := runtimeFor(t, itemsConfig(ts.URL, list, pagination, "    filters:\n      status: {}\n"+extra))
	return rt.Resources["items"]
}

// itemsConfig is a configuration of one resource, items, at base_url
// url, its list (a YAML flow mapping's body but its path) and pagination
// given, its fields id and status, and extra lines of the resource.
func itemsConfig(url, list, pagination, extra string) []byte {
	return fmt.Appendf(nil, `environment: test
upstreams:
  api: {base_url: %q, retries: 0, timeout: 5s}
resources:
  items:
    upstream: api
    list: {path: /items, %s}
    pagination: {%s}
    id_field: id
    fields:
      id: {type: string}
      status: {type: string}
%s`, url, list, pagination, extra)
}

func warningOf(out Outcome, code envelope.WarningCode) *envelope.Warning {
	for i := range out.Warnings {
		if out.Warnings[i].Code == code {
			return &out.Warnings[i]
		}
	}
	return nil
}

func records(ids ...string) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf(`{"id":%q,"status":"active"}`, id))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestUnreadableContinuation_IsNeverTheEnd: a continuation that is an
// object where the cursor dialect reads a string (DynamoDB's
// LastEvaluatedKey), on a filtered page that holds no item, is not an
// empty page that ends the list: the answer is not complete and names the
// member and the page.
func TestUnreadableContinuation_IsNeverTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name, pagination, items, first string
	}{
		{"an object where a cursor belongs, on an empty filtered page", "dialect: cursor, next_cursor: LastEvaluatedKey, cursor_param: start, page_size: 10", "Items",
			`{"Count":0,"ScannedCount":10,"Items":[],"LastEvaluatedKey":{"pk":{"S":"acct#01259"}}}`},
		{"the same beside items", "dialect: cursor, next_cursor: LastEvaluatedKey, cursor_param: start, page_size: 10", "Items",
			`{"Count":2,"Items":` + records("a", "b") + `,"LastEvaluatedKey":{"pk":{"S":"acct#01259"}}}`},
		{"a number where has_more belongs, no cursor", "dialect: cursor, has_more: has_more, page_size: 10", "data",
			`{"data":[],"has_more":1}`},
		{"an array where a continue token belongs", "dialect: continue, page_size: 10", "items",
			`{"metadata":{"continue":["x"],"resourceVersion":"7"},"items":[]}`},
		{"an object where a next URL belongs", "dialect: next_url, next: next, total: none, page_size: 10", "results",
			`{"results":[],"next":{"href":"/items?page=2"}}`},
		{"a string where a continuation object belongs", "dialect: continue_object, page_size: 10", "items",
			`{"continue":"gcontinue||","items":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &paged{param: "start", pages: map[string]pagedPage{"": {body: tc.first}}}
			r := pagedResource(t, s, tc.pagination, tc.items, "")
			_, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatalf("scan failed: %v", err)
			}
			if out.ScanComplete {
				t.Fatalf("complete over a page whose continuation could not be read (coverage %+v)", out.Sources)
			}
			rs := reasonOf(out, envelope.SignalUnreadable)
			if rs == nil || rs.Member == "" || rs.Page == nil || *rs.Page != 1 || rs.Source == "" {
				t.Fatalf("reasons %+v; want SIGNAL_UNREADABLE naming the member on page 1", out.Reasons)
			}
			if src := endOf(t, out); src.End == envelope.EndProven {
				t.Errorf("the end was proven by %s", src.EndSignal)
			}
		})
	}
}

// TestNullItemsBesideACursor_AreABadResponse: null where the items belong
// is not an empty page; read as one, it ended a list whose same page said
// it goes on.
func TestNullItemsBesideACursor_AreABadResponse(t *testing.T) {
	s := &paged{param: "cursor", pages: map[string]pagedPage{
		"":   {body: `{"data":` + records("a", "b") + `,"next":"p2"}`},
		"p2": {body: `{"data":null,"next":"p3"}`},
		"p3": {body: `{"data":` + records("c") + `,"next":null}`},
	}}
	r := pagedResource(t, s, "dialect: cursor, next_cursor: next, page_size: 2", "data", "")
	_, out, err := scanAll(t, r, nil, Budget{})
	if err == nil {
		t.Fatalf("scan read null items as a page: complete %v, %d items", out.ScanComplete, out.ItemsScanned)
	}
	var se *ScanError
	if !errors.As(err, &se) || se.Problem.Code != envelope.ProblemUpstreamBadResponse {
		t.Fatalf("err = %v; want UPSTREAM_BAD_RESPONSE", err)
	}
	if !strings.Contains(se.Problem.Detail, "null") {
		t.Errorf("detail %q does not say the items were null", se.Problem.Detail)
	}
}

// TestAMemberNamedTwice_IsNeverReadByOneOfItsValues: a record naming a
// member twice is withheld (CONTRACT_VIOLATION, rule duplicate_member),
// never counted as either value; one naming its id twice is no target;
// a page naming its own signal twice is a bad response.
func TestAMemberNamedTwice_IsNeverReadByOneOfItsValues(t *testing.T) {
	body := `{"data":[{"id":"d-0001","status":"archived"},{"id":"d-0003","status":"active","status":"archived"},` +
		`{"id":"d-0006","status":"archived","id":"d-0060"},{"id":"d-0007","status":"archived"}],"has_more":false}`
	s := &paged{param: "starting_after", pages: map[string]pagedPage{"": {body: body}}}
	r := pagedResource(t, s, "dialect: cursor, has_more: has_more, page_size: 10", "data", "")
	sink, out, err := scanAll(t, r, map[string]any{"status": "archived"}, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sink.ids, []string{"d-0001", "d-0007"}) {
		t.Errorf("items %v; want d-0001 and d-0007 only (d-0003 is neither, d-0060 does not exist)", sink.ids)
	}
	if out.ScanComplete || out.Matched != 2 {
		t.Errorf("complete %v, matched %d; want incomplete with 2 matched", out.ScanComplete, out.Matched)
	}
	var rules []string
	for _, rs := range out.Reasons {
		if rs.Code == envelope.ContractViolation {
			rules = append(rules, rs.Field+"/"+rs.Rule)
		}
	}
	slices.Sort(rules)
	if !slices.Equal(rules, []string{"id/duplicate_member", "status/duplicate_member"}) {
		t.Errorf("violations %v; want id and status named twice", rules)
	}

	// The page's own signal named twice: the page is not read.
	s = &paged{param: "starting_after", pages: map[string]pagedPage{"": {body: `{"has_more":true,"data":` + records("a") + `,"has_more":false}`}}}
	r = pagedResource(t, s, "dialect: cursor, has_more: has_more, page_size: 10", "data", "")
	_, _, err = scanAll(t, r, nil, Budget{})
	var se *ScanError
	if !errors.As(err, &se) || se.Problem.Code != envelope.ProblemUpstreamBadResponse || !strings.Contains(se.Problem.Detail, `"has_more" twice`) {
		t.Errorf("a page naming has_more twice: %v; want UPSTREAM_BAD_RESPONSE naming it", err)
	}
}

// TestDuplicateInAPreviewItem_IsAmbiguous: with violations kept (a
// preview), the record reaches the sink with a decision violation.
func TestDuplicateInAPreviewItem_IsAmbiguous(t *testing.T) {
	body := `{"data":[{"id":"d-3","status":"active","status":"archived"}],"has_more":false}`
	s := &paged{param: "starting_after", pages: map[string]pagedPage{"": {body: body}}}
	r := pagedResource(t, s, "dialect: cursor, has_more: has_more, page_size: 10", "data", "")
	var got []*Item
	scan := r.NewScan(ScanSpec{Filter: map[string]any{"status": "archived"}, KeepViolations: true, Sink: sinkFunc(func(it *Item) error { got = append(got, it); return nil })})
	if err := scan.Run(t.Context(), Budget{MaxPages: 10, Deadline: 5e9}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Violations) == 0 || got[0].Violations[0].Rule != contract.RuleDuplicateMember || !got[0].Violations[0].Decision {
		t.Fatalf("items %+v; want d-3 with a duplicate_member decision violation", got)
	}
	if _, has := got[0].Doc["status"]; has {
		t.Errorf("the record holds status %v: one of the two values was read", got[0].Doc["status"])
	}
}

// TestDeclaredSnapshot_IsNeverBorrowed: a snapshot the list declares,
// missing from the first page, leaves the scan without one (NO_SNAPSHOT
// naming the member and the page, consistency none), whatever a later
// page names; missing from a later page, the same.
func TestDeclaredSnapshot_IsNeverBorrowed(t *testing.T) {
	page := func(rv, cont string, ids ...string) string {
		meta := map[bool]string{true: fmt.Sprintf(`"resourceVersion":%q,`, rv), false: ""}[rv != ""]
		return fmt.Sprintf(`{"metadata":{%s"continue":%q},"items":%s}`, meta, cont, records(ids...))
	}
	for _, tc := range []struct {
		name  string
		pages map[string]pagedPage
		page  int
	}{
		{"missing on the first page, named on the second", map[string]pagedPage{
			"": {body: page("", "c2", "a", "b")}, "c2": {body: page("41", "", "c")}}, 1},
		{"named on the first, missing on the second", map[string]pagedPage{
			"": {body: page("40", "c2", "a", "b")}, "c2": {body: page("", "", "c")}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &paged{param: "continue", pages: tc.pages}
			r := pagedResource(t, s, "dialect: continue, page_size: 2", "items", "")
			sink, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if len(sink.ids) != 3 {
				t.Fatalf("items %v", sink.ids)
			}
			if out.Consistency != config.ConsistencyNone || out.Snapshot != nil {
				t.Errorf("consistency %q, snapshot %v; want none and no snapshot", out.Consistency, out.Snapshot)
			}
			w := warningOf(out, envelope.WarnNoSnapshot)
			if w == nil || w.Member != "metadata.resourceVersion" || w.Page == nil || *w.Page != tc.page {
				t.Errorf("warnings %+v; want NO_SNAPSHOT naming metadata.resourceVersion on page %d", out.Warnings, tc.page)
			}
		})
	}
	// Named on every page, the same: a snapshot.
	s := &paged{param: "continue", pages: map[string]pagedPage{"": {body: page("40", "c2", "a", "b")}, "c2": {body: page("40", "", "c")}}}
	r := pagedResource(t, s, "dialect: continue, page_size: 2", "items", "")
	_, out, err := scanAll(t, r, nil, Budget{})
	if err != nil || !out.ScanComplete || out.Consistency != config.ConsistencySnapshot || out.Snapshot == nil || *out.Snapshot != "40" {
		t.Errorf("honest snapshot list: %v, complete %v, consistency %q, snapshot %v", err, out.ScanComplete, out.Consistency, out.Snapshot)
	}
}

// TestRemainingCountBesideTheEnd_IsAContradiction: Kubernetes'
// remainingItemCount above zero on the chunk without a continue token.
func TestRemainingCountBesideTheEnd_IsAContradiction(t *testing.T) {
	s := &paged{param: "continue", pages: map[string]pagedPage{
		"":   {body: `{"metadata":{"resourceVersion":"9","continue":"c2","remainingItemCount":3},"items":` + records("a", "b") + `}`},
		"c2": {body: `{"metadata":{"resourceVersion":"9","remainingItemCount":1},"items":` + records("c", "d") + `}`},
	}}
	r := pagedResource(t, s, "dialect: continue, page_size: 2", "items", "")
	_, out, err := scanAll(t, r, nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	rs := reasonOf(out, envelope.ConflictingEvidence)
	if out.ScanComplete || rs == nil || rs.Signal != dialect.SignalRemainingVsEnd {
		t.Fatalf("complete %v, reasons %+v; want CONFLICTING_EVIDENCE remaining_vs_end", out.ScanComplete, out.Reasons)
	}
	// An unreadable remaining count is doubt too.
	s = &paged{param: "continue", pages: map[string]pagedPage{
		"": {body: `{"metadata":{"resourceVersion":"9","continue":"","remainingItemCount":"many"},"items":` + records("a") + `}`},
	}}
	r = pagedResource(t, s, "dialect: continue, page_size: 2", "items", "")
	if _, out, err = scanAll(t, r, nil, Budget{}); err != nil || out.ScanComplete || reasonOf(out, envelope.SignalUnreadable) == nil {
		t.Errorf("remaining count a string: %v, complete %v, reasons %+v", err, out.ScanComplete, out.Reasons)
	}
}

// TestBatchWithoutItsMarker_EndsUnproven: a continue_object list whose
// last answer carries neither continue nor the declared batch marker.
func TestBatchWithoutItsMarker_EndsUnproven(t *testing.T) {
	s := &paged{param: "gcontinue", pages: map[string]pagedPage{
		"":  {body: `{"batchcomplete":true,"continue":{"gcontinue":"b","continue":"gcontinue||"},"items":` + records("a", "b") + `}`},
		"b": {body: `{"items":` + records("c") + `}`},
	}}
	r := pagedResource(t, s, "dialect: continue_object, batch_complete: batchcomplete, page_size: 2", "items", "")
	_, out, err := scanAll(t, r, nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	rs := reasonOf(out, envelope.EndNotProven)
	if out.ScanComplete || rs == nil || rs.Signal != dialect.SignalBatchIncomplete {
		t.Fatalf("complete %v, reasons %+v; want END_NOT_PROVEN batch_incomplete", out.ScanComplete, out.Reasons)
	}
}

// TestTotalInTheCursorDialect_IsComparedWithWhatWasRead: Stripe's
// total_count beside has_more: a list that ends short of it is capped by
// the upstream, one that passes it contradicts it.
func TestTotalInTheCursorDialect_IsComparedWithWhatWasRead(t *testing.T) {
	for _, tc := range []struct {
		total int
		want  envelope.ReasonCode
	}{{3, ""}, {5, envelope.ResultLimitReached}, {2, envelope.ConflictingEvidence}} {
		s := &paged{param: "starting_after", pages: map[string]pagedPage{
			"":  {body: fmt.Sprintf(`{"data":%s,"has_more":true,"total_count":%d}`, records("a", "b"), tc.total)},
			"b": {body: fmt.Sprintf(`{"data":%s,"has_more":false,"total_count":%d}`, records("c"), tc.total)},
		}}
		r := pagedResource(t, s, "dialect: cursor, has_more: has_more, total: total_count, page_size: 2", "data", "")
		_, out, err := scanAll(t, r, nil, Budget{})
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == "" {
			if !out.ScanComplete {
				t.Errorf("total %d: reasons %+v; want complete", tc.total, out.Reasons)
			}
			continue
		}
		if out.ScanComplete || reasonOf(out, tc.want) == nil {
			t.Errorf("total %d: complete %v, reasons %+v; want %s", tc.total, out.ScanComplete, out.Reasons, tc.want)
		}
	}
}

// TestSignalDroppedFromAFullPage_IsNeverTheEnd: a whole page without the
// continue token the earlier pages carried is asked for again one item
// smaller; an upstream that then answers the same page (the signal was
// dropped, not the list ended) leaves the end unproven.
func TestSignalDroppedFromAFullPage_IsNeverTheEnd(t *testing.T) {
	s := &paged{param: "continue", pages: map[string]pagedPage{
		"":   {body: `{"metadata":{"resourceVersion":"9","continue":"c2"},"items":` + records("a", "b") + `}`},
		"c2": {body: `{"metadata":{"resourceVersion":"9"},"items":` + records("c", "d") + `}`},
		"c3": {body: `{"metadata":{"resourceVersion":"9"},"items":` + records("e") + `}`},
	}}
	r := pagedResource(t, s, "dialect: continue, page_size: 2", "items", "")
	_, out, err := scanAll(t, r, nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	src := endOf(t, out)
	if out.ScanComplete || src.EndSignal != dialect.SignalMissingOnFull {
		t.Fatalf("complete %v, end %s/%s; want END_NOT_PROVEN next_signal_missing", out.ScanComplete, src.End, src.EndSignal)
	}
	if n := len(s.asked); n != 3 {
		t.Errorf("%d requests (%q), want the two pages and one recheck", n, s.asked)
	}
}

// TestFullPageBehindANextLinkWithoutItsSize_IsNeverTheEnd: a whole page
// without a Link header, reached by a next link that does not name the
// page size, cannot be asked for again smaller: the end stays unproven.
func TestFullPageBehindANextLinkWithoutItsSize_IsNeverTheEnd(t *testing.T) {
	s := &paged{param: "page", pages: map[string]pagedPage{
		"":  {body: records("a", "b"), header: http.Header{"Link": {`</items?page=2>; rel="next"`}}},
		"2": {body: records("c", "d")},
	}}
	r := pagedResource(t, s, "dialect: link, page_size: 2", ".", "")
	_, out, err := scanAll(t, r, nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if src := endOf(t, out); out.ScanComplete || src.EndSignal != dialect.SignalMissingOnFull {
		t.Fatalf("complete %v, end %s/%s; want END_NOT_PROVEN next_signal_missing", out.ScanComplete, src.End, src.EndSignal)
	}
}

// TestGraphQLTotal_IsReadWhereDeclaredAndNamedInFull: a graphql list's
// total declared in a header is read from the header (a form that cannot
// be read is doubt naming it; one the items exceed contradicts them), and
// one in the connection is named by its place in the answer.
func TestGraphQLTotal_IsReadWhereDeclaredAndNamedInFull(t *testing.T) {
	const query = `graphql: "query($first: Int!, $after: String) { items(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id status } } }"`
	body := func(total string) string {
		return `{"data":{"items":{` + total + `"pageInfo":{"hasNextPage":false,"endCursor":"c2"},"nodes":` + records("a", "b") + `}}}`
	}
	for _, tc := range []struct {
		name, pagination, body string
		header                 http.Header
		code                   envelope.ReasonCode
		member                 string
	}{
		{"a header total that is no number", "total_header: X-Total-Count", body(""), http.Header{"X-Total-Count": {"many"}}, envelope.SignalUnreadable, "X-Total-Count"},
		{"a header total the items exceed", "total_header: X-Total-Count", body(""), http.Header{"X-Total-Count": {"1"}}, envelope.ConflictingEvidence, ""},
		{"a connection's total that is no number", "", body(`"totalCount":"many",`), nil, envelope.SignalUnreadable, "data.items.totalCount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &paged{param: "none", pages: map[string]pagedPage{"": {body: tc.body, header: tc.header}}}
			pagination := "dialect: graphql, connection: items, page_size: 10"
			if tc.pagination != "" {
				pagination += ", " + tc.pagination
			}
			r := pagedList(t, s, query, pagination, "")
			sink, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			rs := reasonOf(out, tc.code)
			if out.ScanComplete || rs == nil || rs.Member != tc.member {
				t.Fatalf("items %v, complete %v, reasons %+v; want %s naming %q", sink.ids, out.ScanComplete, out.Reasons, tc.code, tc.member)
			}
		})
	}
}

// TestSortValuesOfAnotherForm_AreDoubtNeverSentBack: the last hit's sort
// values are search_after's continuation; in a form other than an array
// they are doubt naming the member, on a page that continues (never sent
// back as the next request's search_after) and on one whose items reach
// the total alike.
func TestSortValuesOfAnotherForm_AreDoubtNeverSentBack(t *testing.T) {
	hit := func(id, sort string) string { return fmt.Sprintf(`{"id":%q,"status":"active","sort":%s}`, id, sort) }
	for _, tc := range []struct {
		name, size, sort string
	}{
		{"a string, on a whole page", "2", `"b"`},
		{"an object, on a whole page", "2", `{"v":2}`},
		{"null, on a whole page", "2", `null`},
		{"a number, on the page that reaches the total", "10", `2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := `{"hits":{"total":{"value":2,"relation":"eq"},"hits":[` + hit("a", "[1]") + "," + hit("b", tc.sort) + `]}}`
			s := &paged{param: "none", pages: map[string]pagedPage{"": {body: page}}}
			r := pagedList(t, s, "method: POST, items: hits.hits", "dialect: search_after, page_size: "+tc.size, "")
			_, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			rs := reasonOf(out, envelope.SignalUnreadable)
			if out.ScanComplete || rs == nil || rs.Member != "sort" || rs.Page == nil || *rs.Page != 1 {
				t.Fatalf("complete %v, reasons %+v; want SIGNAL_UNREADABLE naming sort on page 1", out.ScanComplete, out.Reasons)
			}
			if len(s.asked) != 1 {
				t.Errorf("%d requests; the sort values were sent back", len(s.asked))
			}
		})
	}
}

// TestDoubtOnAnAnswerInsideABatch_IsKept: a batch is read over several
// answers and accounted as one page; what an answer before the last held
// unreadable (its batch marker, its total) stays doubt on it.
func TestDoubtOnAnAnswerInsideABatch_IsKept(t *testing.T) {
	for _, tc := range []struct{ name, first, member string }{
		{"a null batch marker", `{"batchcomplete":null,"count":3,"continue":{"gcontinue":"b","continue":"gcontinue||"},"items":` + records("a", "b") + `}`, "batchcomplete"},
		{"a total that is no number", `{"count":"3","continue":{"gcontinue":"b","continue":"gcontinue||"},"items":` + records("a", "b") + `}`, "count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &paged{param: "gcontinue", pages: map[string]pagedPage{
				"":  {body: tc.first},
				"b": {body: `{"batchcomplete":true,"count":3,"items":` + records("c") + `}`},
			}}
			r := pagedResource(t, s, "dialect: continue_object, batch_complete: batchcomplete, total: count, page_size: 2", "items", "")
			sink, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			rs := reasonOf(out, envelope.SignalUnreadable)
			if out.ScanComplete || rs == nil || rs.Member != tc.member {
				t.Fatalf("items %v, complete %v, reasons %+v; want SIGNAL_UNREADABLE naming %s", sink.ids, out.ScanComplete, out.Reasons, tc.member)
			}
		})
	}
}
