package upstream

import (
	"encoding/json"
	"errors"
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

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// TestNewDialects_ReadHonestListsCompletely: each new list style, honest,
// is read to its proven end: every record once, complete, with the
// dialect's own end signal.
func TestNewDialects_ReadHonestListsCompletely(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fl         fixtures.FaultKnobs
		pagination string
		signals    []string
	}{
		{"drf next and count", fixtures.FaultKnobs{Dialect: fixtures.DialectNextURL}, "", []string{dialect.SignalTotalReached, dialect.SignalNextURLNone}},
		{"next without a count", fixtures.FaultKnobs{Dialect: fixtures.DialectNextURL, Total: "missing"}, "total: none", []string{dialect.SignalNextURLNone}},
		{"salesforce done", fixtures.FaultKnobs{Dialect: fixtures.DialectNextURL, EndFlag: true}, "is_last: done", []string{dialect.SignalIsLast}},
		{"graphql connection", fixtures.FaultKnobs{Dialect: fixtures.DialectGraphQL}, "", []string{dialect.SignalHasNextFalse}},
		{"notion post cursor", fixtures.FaultKnobs{Dialect: fixtures.DialectPostCursor}, "", []string{dialect.SignalHasMoreFalse}},
		{"jira isLast", fixtures.FaultKnobs{Dialect: fixtures.DialectPostCursor, EndFlag: true}, "is_last: isLast", []string{dialect.SignalIsLast}},
		{"search_after in a point in time", fixtures.FaultKnobs{Dialect: fixtures.DialectSearchAfter}, "", []string{dialect.SignalEmptyPage, dialect.SignalTotalReached}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := &fixtures.FaultList{FaultKnobs: tc.fl}
			fl.Records = faultRecords(47)
			r := faultRuntime(t, fl, 10, tc.pagination, "")
			sink, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, rec := range fl.Records {
				want = append(want, rec.ID())
			}
			checkSameSet(t, sink.ids, want)
			cov := endOf(t, out)
			if !out.ScanComplete || !slices.Contains(tc.signals, cov.EndSignal) {
				t.Errorf("complete %v with end %s/%s, reasons %+v; want complete on one of %v", out.ScanComplete, cov.End, cov.EndSignal, out.Reasons, tc.signals)
			}
		})
	}
}

// TestNewDialects_NeverCompleteWithoutProof: the same lists without their
// signals, or with an ignored page position, are never called complete.
func TestNewDialects_NeverCompleteWithoutProof(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fl         fixtures.FaultKnobs
		pagination string
	}{
		{"no next url ever", fixtures.FaultKnobs{Dialect: fixtures.DialectNextURL, NoNextSignal: true, Total: "missing"}, "total: none"},
		{"graphql without pageInfo", fixtures.FaultKnobs{Dialect: fixtures.DialectGraphQL, NoNextSignal: true, Total: "missing"}, ""},
		{"post cursor without has_more", fixtures.FaultKnobs{Dialect: fixtures.DialectPostCursor, NoNextSignal: true}, ""},
		{"graphql page ignored", fixtures.FaultKnobs{Dialect: fixtures.DialectGraphQL, IgnorePage: true, Total: "missing"}, ""},
		{"search_after ignored", fixtures.FaultKnobs{Dialect: fixtures.DialectSearchAfter, IgnorePage: true, Total: "missing"}, ""},
		{"count too high", fixtures.FaultKnobs{Dialect: fixtures.DialectNextURL, Total: "high", NoNextSignal: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := &fixtures.FaultList{FaultKnobs: tc.fl}
			fl.Records = faultRecords(35)
			r := faultRuntime(t, fl, 10, tc.pagination, "")
			_, out, err := scanAll(t, r, nil, Budget{})
			if err == nil && out.ScanComplete {
				t.Errorf("complete on %s: coverage %+v", tc.name, out.Sources)
			}
		})
	}
}

// scripted serves fn and records every request body and URL.
type scripted struct {
	mu     sync.Mutex
	bodies []map[string]any
	urls   []string
	fn     func(n int, r *http.Request, body map[string]any) (int, any)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	if len(b) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		_ = dec.Decode(&body)
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.urls = append(s.urls, r.URL.String())
	n := len(s.urls)
	s.mu.Unlock()
	status, out := s.fn(n, r, body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(out)
}

func serve(t *testing.T, s *scripted) string {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

func listConfig(base, resource string) []byte {
	return []byte(fmt.Sprintf(`environment: test
upstreams:
  api: {base_url: %q, retries: 0, timeout: 5s}
resources:
%s`, base, resource))
}

// TestNextURL_FollowsODataNextLinkAndTwilioRelativeURIs: a next URL read
// from a key holding dots (@odata.nextLink) or given relative to the host
// (Twilio's next_page_uri) is followed on the same host; its absence after
// a page that carried one proves the end.
func TestNextURL_FollowsODataNextLinkAndTwilioRelativeURIs(t *testing.T) {
	for _, tc := range []struct{ name, next, items, total string }{
		{"graph", "@odata.nextLink", "value", "@odata.count"},
		{"twilio", "next_page_uri", "messages", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{}
			base := serve(t, s)
			s.fn = func(n int, r *http.Request, _ map[string]any) (int, any) {
				skip, _ := strconv.Atoi(r.URL.Query().Get("skip"))
				var items []any
				for i := skip; i < min(skip+3, 7); i++ {
					items = append(items, map[string]any{"id": fmt.Sprintf("u%d", i)})
				}
				out := map[string]any{tc.items: items}
				if tc.total != "" {
					out[tc.total] = 7
				}
				if skip+3 < 7 {
					link := fmt.Sprintf("/v1/users?skip=%d", skip+3)
					if tc.name == "graph" {
						link = base + link
					}
					out[tc.next] = link
				}
				return 200, out
			}
			total := ""
			if tc.total != "" {
				total = ", total: \"" + tc.total + "\""
			}
			r := runtimeFor(t, listConfig(base, fmt.Sprintf(`  users:
    upstream: api
    list: {path: /v1/users, items: %s}
    pagination: {dialect: next_url, next: "%s", page_size_param: "$top", page_size: 3%s}
    id_field: id
    fields: {id: {type: string}}
`, tc.items, tc.next, total))).Resources["users"]
			sink, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			checkSameSet(t, sink.ids, []string{"u0", "u1", "u2", "u3", "u4", "u5", "u6"})
			if !out.ScanComplete {
				t.Errorf("not complete: %+v %+v", out.Reasons, out.Sources)
			}
			if !strings.Contains(s.urls[0], "$top=3") {
				t.Errorf("first request %s does not ask for the page size", s.urls[0])
			}
		})
	}
}

// TestNextURL_OnAnotherHostIsNeverFollowed: the credential never goes to
// a host the configuration does not name.
func TestNextURL_OnAnotherHostIsNeverFollowed(t *testing.T) {
	s := &scripted{fn: func(int, *http.Request, map[string]any) (int, any) {
		return 200, map[string]any{"results": []any{map[string]any{"id": "a"}}, "next": "https://evil.example/steal?page=2"}
	}}
	r := runtimeFor(t, listConfig(serve(t, s), `  things:
    upstream: api
    list: {path: /things}
    pagination: {dialect: next_url}
    id_field: id
    fields: {id: {type: string}}
`)).Resources["things"]
	_, _, err := scanAll(t, r, nil, Budget{})
	var se *ScanError
	if !errors.As(err, &se) || se.Problem.Code != envelope.ProblemUpstreamBadResponse {
		t.Fatalf("err = %v, want UPSTREAM_BAD_RESPONSE", err)
	}
	if len(s.urls) != 1 {
		t.Errorf("%d requests, want 1: the other host was called", len(s.urls))
	}
}

// TestGraphQL_SendsVariablesAndReadsEdges: a graphql list posts the user's
// query with first/after (and filter variables: one value as is, a list
// as a JSON array), and reads edges { node } when the query selects them.
func TestGraphQL_SendsVariablesAndReadsEdges(t *testing.T) {
	s := &scripted{}
	s.fn = func(n int, _ *http.Request, body map[string]any) (int, any) {
		vars, _ := body["variables"].(map[string]any)
		after, _ := vars["after"].(string)
		start := 0
		if after != "" {
			start, _ = strconv.Atoi(after)
		}
		var edges []any
		for i := start; i < min(start+2, 5); i++ {
			edges = append(edges, map[string]any{"cursor": strconv.Itoa(i + 1), "node": map[string]any{"number": i, "state": "OPEN"}})
		}
		end := min(start+2, 5)
		return 200, map[string]any{"data": map[string]any{"repository": map[string]any{"issues": map[string]any{
			"totalCount": 5, "edges": edges, "pageInfo": map[string]any{"hasNextPage": end < 5, "endCursor": strconv.Itoa(end)}}}}}
	}
	r := runtimeFor(t, listConfig(serve(t, s), `  issues:
    upstream: api
    list:
      path: /graphql
      graphql: "query($first: Int!, $after: String, $states: [IssueState!]) { repository(owner: \"o\", name: \"r\") { issues(first: $first, after: $after, states: $states) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { number state } } } } }"
    pagination: {dialect: graphql, connection: repository.issues, page_size: 2}
    id_field: number
    fields: {number: {type: integer}, state: {type: string}}
    filters:
      state: {param: state, multi: array, multi_param: states}
`)).Resources["issues"]
	sink, out, err := scanAll(t, r, map[string]any{"state": []any{"OPEN", "CLOSED"}}, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	checkSameSet(t, sink.ids, []string{"0", "1", "2", "3", "4"})
	if !out.ScanComplete || endOf(t, out).EndSignal != dialect.SignalHasNextFalse {
		t.Errorf("complete %v, coverage %+v", out.ScanComplete, out.Sources)
	}
	first, _ := s.bodies[0]["variables"].(map[string]any)
	if fmt.Sprint(first["first"]) != "2" || first["after"] != nil || fmt.Sprint(first["states"]) != "[OPEN CLOSED]" {
		t.Errorf("first page's variables = %v; want first 2, no after, states as a list", first)
	}
	if q, _ := s.bodies[0]["query"].(string); !strings.Contains(q, "repository(") {
		t.Errorf("the query sent is %q", q)
	}
	second, _ := s.bodies[1]["variables"].(map[string]any)
	if second["after"] != "2" {
		t.Errorf("second page's after = %v, want the endCursor 2", second["after"])
	}
}

// TestGraphQL_ErrorsBesideDataArePartialAndQuoted: a page whose answer
// carries errors beside its data is read, but the answer is partial
// (UPSTREAM_REPORTED_INCOMPLETE, graphql_errors) and quotes the errors.
func TestGraphQL_ErrorsBesideDataArePartialAndQuoted(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectGraphQL, GraphQLErrorPages: map[int]bool{2: true}}}
	fl.Records = faultRecords(25)
	r := faultRuntime(t, fl, 10, "", "")
	sink, out, err := scanAll(t, r, nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if out.ScanComplete || len(sink.ids) != 24 {
		t.Fatalf("complete %v with %d items; want partial with the 24 resolved", out.ScanComplete, len(sink.ids))
	}
	rs := reasonOf(out, envelope.UpstreamReportedIncomplete)
	if rs == nil || rs.Signal != "graphql_errors" || rs.UpstreamMessage != "could not resolve a node" {
		t.Errorf("reason %+v; want UPSTREAM_REPORTED_INCOMPLETE graphql_errors quoting the error", rs)
	}
}

// TestGraphQL_ErrorsWithoutDataAreAProblem: data null (a refused query) is
// a problem quoting the errors, never an empty list.
func TestGraphQL_ErrorsWithoutDataAreAProblem(t *testing.T) {
	s := &scripted{fn: func(int, *http.Request, map[string]any) (int, any) {
		return 200, map[string]any{"data": nil, "errors": []any{map[string]any{"message": `Cannot query field "nodez" on type "AccountsConnection".`}}}
	}}
	r := runtimeFor(t, listConfig(serve(t, s), `  accounts:
    upstream: api
    list: {path: /graphql, graphql: "query($first: Int, $after: Cursor) { allAccounts(first: $first, after: $after) { nodez { id } } }"}
    pagination: {dialect: graphql, connection: allAccounts}
    id_field: id
    fields: {id: {type: integer}}
`)).Resources["accounts"]
	_, _, err := scanAll(t, r, nil, Budget{})
	var se *ScanError
	if !errors.As(err, &se) || se.Problem.Code != envelope.ProblemUpstreamGraphQL || !strings.Contains(se.Problem.UpstreamMessage, "nodez") {
		t.Fatalf("err = %v; want UPSTREAM_GRAPHQL_ERRORS quoting the error", err)
	}
}

// TestPOSTList_PlacesPaginationAndFiltersInTheBody: a POST list (Notion's
// database query) sends its body template with page_size, start_cursor
// and the filters placed at their paths, and continues with next_cursor
// until has_more is false.
func TestPOSTList_PlacesPaginationAndFiltersInTheBody(t *testing.T) {
	s := &scripted{}
	s.fn = func(n int, r *http.Request, body map[string]any) (int, any) {
		if r.Method != http.MethodPost {
			return 405, map[string]any{"message": "POST only"}
		}
		cur, _ := body["start_cursor"].(string)
		if n == 1 {
			return 200, map[string]any{"object": "list", "results": []any{map[string]any{"id": "p1", "status": "done"}}, "has_more": true, "next_cursor": "c2"}
		}
		if cur != "c2" {
			return 400, map[string]any{"message": "bad cursor"}
		}
		return 200, map[string]any{"object": "list", "results": []any{map[string]any{"id": "p2", "status": "done"}}, "has_more": false, "next_cursor": nil}
	}
	r := runtimeFor(t, listConfig(serve(t, s), `  pages:
    upstream: api
    list:
      path: /v1/databases/db1/query
      method: POST
      items: results
      body: {sorts: [{property: created, direction: ascending}]}
    pagination: {dialect: cursor, next_cursor: next_cursor, has_more: has_more, cursor_param: start_cursor, page_size_param: page_size, page_size: 50}
    id_field: id
    fields: {id: {type: string}, status: {type: string}}
    filters:
      status: {param: filter.status.equals}
`)).Resources["pages"]
	sink, out, err := scanAll(t, r, map[string]any{"status": "done"}, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	checkSameSet(t, sink.ids, []string{"p1", "p2"})
	if !out.ScanComplete || endOf(t, out).EndSignal != dialect.SignalHasMoreFalse {
		t.Errorf("complete %v, coverage %+v", out.ScanComplete, out.Sources)
	}
	b, _ := json.Marshal(s.bodies[0])
	if string(b) != `{"filter":{"status":{"equals":"done"}},"page_size":50,"sorts":[{"direction":"ascending","property":"created"}]}` {
		t.Errorf("first body = %s", b)
	}
	if s.bodies[1]["start_cursor"] != "c2" {
		t.Errorf("second body = %v; want start_cursor c2", s.bodies[1])
	}
}

// TestSearchAfter_OnePointInTimeForTheWholeScan: the point in time is
// opened once, its id (renewed by each answer) goes in every page, the
// last hit's sort values continue the scan, and the answer claims a
// snapshot.
func TestSearchAfter_OnePointInTimeForTheWholeScan(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectSearchAfter}}
	fl.Records = faultRecords(33)
	r := faultRuntime(t, fl, 10, "", "")
	if r.Consistency() != config.ConsistencySnapshot {
		t.Errorf("consistency %s; a point in time is a snapshot", r.Consistency())
	}
	sink, out, err := scanAll(t, r, map[string]any{"status": "active"}, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, rec := range fl.Records {
		if rec["status"] == "active" {
			want = append(want, rec.ID())
		}
	}
	checkSameSet(t, sink.ids, want)
	if !out.ScanComplete || out.Snapshot == nil || *out.Snapshot != "pit-1" {
		t.Errorf("complete %v, snapshot %v; want complete in pit-1", out.ScanComplete, out.Snapshot)
	}
}

// TestCursorExpiry_EveryDialectSaysCursorExpiredAndRestarts: a
// continuation the upstream refuses as expired (410 by default, or a
// declared status and body) ends the scan partial with CURSOR_EXPIRED and
// a restart continuation, whatever the dialect.
func TestCursorExpiry_EveryDialectSaysCursorExpiredAndRestarts(t *testing.T) {
	for _, d := range []string{fixtures.DialectCursor, fixtures.DialectCursorNext, fixtures.DialectLink, fixtures.DialectOffset,
		fixtures.DialectPage, fixtures.DialectContinue, fixtures.DialectNextURL, fixtures.DialectGraphQL, fixtures.DialectPostCursor, fixtures.DialectSearchAfter} {
		for _, form := range []string{"410", "declared 400"} {
			t.Run(d+"/"+form, func(t *testing.T) {
				fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: d, ExpireAfter: 1}}
				fl.Records = faultRecords(30)
				pagination := ""
				if form == "declared 400" {
					fl.ExpireStatus, fl.ExpireBody = 400, `{"error": {"message": "The cursor has expired, start over"}}`
					pagination = `expiry: {status: [400], match: "(?i)cursor.*expired"}`
				}
				if d == fixtures.DialectGraphQL {
					pagination = `expiry: {match: "expired"}`
				}
				r := faultRuntime(t, fl, 10, pagination, "")
				sink, out, err := scanAll(t, r, nil, Budget{})
				if err != nil {
					t.Fatalf("err %v; want a partial answer", err)
				}
				if out.ScanComplete || reasonOf(out, envelope.CursorExpired) == nil || out.Continuation != envelope.ContinueRestart {
					t.Errorf("complete %v, reasons %+v, continuation %s; want CURSOR_EXPIRED and restart", out.ScanComplete, out.Reasons, out.Continuation)
				}
				if len(sink.ids) != 10 {
					t.Errorf("%d items delivered; want the first page's 10", len(sink.ids))
				}
			})
		}
	}
}

// TestCursorExpiry_OnlyAContinuationCanExpire: a 410 on a first page, or a
// 400 that does not match the declared pattern, is not an expired cursor.
func TestCursorExpiry_OnlyAContinuationCanExpire(t *testing.T) {
	s := &scripted{fn: func(int, *http.Request, map[string]any) (int, any) {
		return 410, map[string]any{"message": "gone"}
	}}
	r := runtimeFor(t, listConfig(serve(t, s), `  things:
    upstream: api
    list: {path: /things}
    pagination: {dialect: next_url}
    id_field: id
    fields: {id: {type: string}}
`)).Resources["things"]
	if _, out, err := scanAll(t, r, nil, Budget{}); err == nil || reasonOf(out, envelope.CursorExpired) != nil {
		t.Errorf("a first page answered 410: err %v, reasons %+v; want a problem, not CURSOR_EXPIRED", err, out.Reasons)
	}
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectCursorNext, ExpireAfter: 1, ExpireStatus: 400, ExpireBody: `{"error": "invalid_limit"}`}}
	fl.Records = faultRecords(30)
	r = faultRuntime(t, fl, 10, `expiry: {status: [400], match: "expired"}`, "")
	_, out, err := scanAll(t, r, nil, Budget{})
	var se *ScanError
	if !errors.As(err, &se) || se.Problem.Code != envelope.ProblemUpstreamRejected || reasonOf(out, envelope.CursorExpired) != nil {
		t.Errorf("a 400 that is not the declared expiry: err %v; want UPSTREAM_REJECTED_REQUEST", err)
	}
}

func reasonOf(out Outcome, code envelope.ReasonCode) *envelope.Reason {
	for i := range out.Reasons {
		if out.Reasons[i].Code == code {
			return &out.Reasons[i]
		}
	}
	return nil
}

// filterCase is one filter and the query (or body) airlock must send.
type filterCase struct {
	name   string
	filter map[string]any
	want   string // the encoded query, "" when nothing is sent
	exact  bool   // CountFromTotal may answer from the total
}

// TestFilterForms_SendAValueOnlyInAFormThatCarriesItIntact: a list goes
// under its own parameter, null under its own, and a value that holds the
// separator (or that a comma list would trim) is applied by airlock alone,
// whether it is one value or in a list, and then never counted from the
// upstream's total.
func TestFilterForms_SendAValueOnlyInAFormThatCarriesItIntact(t *testing.T) {
	r := runtimeFor(t, listConfig("http://api.test", `  accounts:
    upstream: api
    list: {path: /accounts}
    pagination: {dialect: next_url, total: count, total_exact: true}
    id_field: id
    fields: {id: {type: string}, team: {type: string}, owner: {type: string, nullable: true}, status: {type: string}}
    filters:
      team: {param: team, multi: comma, multi_param: team__in}
      owner: {param: owner, is_null: {param: owner__isnull, value: "true"}}
      status: {param: status__in, multi: comma}
`)).Resources["accounts"]
	for _, c := range []filterCase{
		{"one team", map[string]any{"team": "payments"}, "team=payments", true},
		{"one team holding the separator", map[string]any{"team": "R&D, Labs"}, "team=R%26D%2C+Labs", true},
		{"teams as a comma list", map[string]any{"team": []any{"payments", "platform"}}, "team__in=payments%2Cplatform", true},
		{"teams with the separator", map[string]any{"team": []any{"payments", "R&D, Labs"}}, "", false},
		{"a team with white space at an end", map[string]any{"team": []any{"payments", " ops"}}, "", false},
		{"null as its own parameter", map[string]any{"owner": nil}, "owner__isnull=true", true},
		{"null among values", map[string]any{"owner": []any{nil, "ann"}}, "", false},
		{"one status where the API splits", map[string]any{"status": "on hold, billing"}, "", false},
		{"one status", map[string]any{"status": "active"}, "status__in=active", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &dialect.Params{Kind: config.ListQuery, Query: url.Values{}}
			r.SendFilters(p, c.filter)
			if got := p.Query.Encode(); got != c.want {
				t.Errorf("sent %q, want %q", got, c.want)
			}
			if got := r.CountFromTotal(c.filter, nil); got != c.exact {
				t.Errorf("CountFromTotal = %v, want %v", got, c.exact)
			}
		})
	}
}

// TestNullFilter_WarnsOfNullLikeValues: a null filter over a field that
// writes "no value" as "" or "none" (undeclared) matches only real nulls,
// and the answer says which stand-ins it saw on how many records.
func TestNullFilter_WarnsOfNullLikeValues(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectNextURL}}
	for i := range 30 {
		owner := any("team-a")
		switch i % 5 {
		case 0:
			owner = nil
		case 1:
			owner = ""
		case 2:
			owner = "None"
		}
		fl.Records = append(fl.Records, fixtures.Record{"id": fmt.Sprintf("r%02d", i), "status": "active", "owner": owner})
	}
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	cfg := strings.Replace(string(fixtures.FaultListConfig(ts.URL, fl.Dialect, 10, "", "")), `null_values: [""]`, "", 1)
	r := runtimeFor(t, []byte(cfg)).Resources["items"]
	sink, out, err := scanAll(t, r, map[string]any{"owner": nil}, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.ids) != 6 || !out.ScanComplete {
		t.Fatalf("%d items, complete %v; want the 6 real nulls, complete", len(sink.ids), out.ScanComplete)
	}
	var w *envelope.Warning
	for i := range out.Warnings {
		if out.Warnings[i].Code == envelope.WarnNullLikeValues {
			w = &out.Warnings[i]
		}
	}
	if w == nil || fmt.Sprint(w.Values) != `["" none]` || w.Count == nil || *w.Count != 12 || fmt.Sprint(w.Fields) != "[owner]" {
		t.Fatalf("warning %+v; want NULL_LIKE_VALUES naming owner, \"\" and none, on 12 records", w)
	}
	// Declared, the stand-ins are null: no warning, every one matches.
	r = faultRuntime(t, fl, 10, "", "")
	sink, out, _ = scanAll(t, r, map[string]any{"owner": nil}, Budget{})
	for _, w := range out.Warnings {
		if w.Code == envelope.WarnNullLikeValues && slices.Contains(w.Values, `""`) {
			t.Errorf("\"\" is declared a null value, yet warned of: %+v", w)
		}
	}
	if len(sink.ids) != 12 {
		t.Errorf("with \"\" declared null, %d items; want 12", len(sink.ids))
	}
}

// TestSearchAfter_AnExpiredPointInTimeRestarts: Elasticsearch answers a
// point in time that expired 404 search_context_missing_exception; with
// that declared, the scan says CURSOR_EXPIRED and restarts, and a 404
// without the pattern stays a problem.
func TestSearchAfter_AnExpiredPointInTimeRestarts(t *testing.T) {
	body := `{"error": {"root_cause": [{"type": "search_context_missing_exception", "reason": "No search context found for id [91]"}], "type": "search_phase_execution_exception"}, "status": 404}`
	for _, declared := range []bool{true, false} {
		fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectSearchAfter, ExpireAfter: 2, ExpireStatus: 404, ExpireBody: body}}
		fl.Records = faultRecords(40)
		pagination := ""
		if declared {
			pagination = "expiry: {status: [404], match: search_context_missing_exception}"
		}
		r := faultRuntime(t, fl, 10, pagination, "")
		sink, out, err := scanAll(t, r, nil, Budget{})
		switch {
		case declared && (err != nil || reasonOf(out, envelope.CursorExpired) == nil || out.Continuation != envelope.ContinueRestart || len(sink.ids) != 20):
			t.Errorf("declared: err %v, reasons %+v, %d items; want CURSOR_EXPIRED after the 20 read", err, out.Reasons, len(sink.ids))
		case !declared && (err == nil || reasonOf(out, envelope.CursorExpired) != nil):
			t.Errorf("undeclared: err %v, reasons %+v; want a problem (404 proves no expiry by itself)", err, out.Reasons)
		}
	}
}
