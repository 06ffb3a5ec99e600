package draft

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestDraftFromSample_ReadsTheWholeListItDescribes: a draft made from one
// live page of each pagination dialect names that dialect, and, when it
// needs no decision, is a configuration that reads the whole list to a
// proven end: 120 of 120, complete. What the sample could not show (the
// parameter that takes a next cursor) is a TODO that stops the draft from
// running.
func TestDraftFromSample_ReadsTheWholeListItDescribes(t *testing.T) {
	const n = 120
	api := &fixtures.Server{}
	api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, nil))
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	getenv := func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultToken
		}
		return ""
	}
	for _, tc := range []struct{ dialect, pagination, todo string }{
		{fixtures.DialectCursor, "dialect: cursor, has_more: has_more, cursor_param: starting_after", ""},
		{fixtures.DialectLink, "dialect: link", ""},
		// The answer's offset member does not name the parameter (CouchDB
		// answers offset to skip): a TODO probe --fix settles.
		{fixtures.DialectOffset, "dialect: offset", "the query parameter that sets the answer's offset"},
		{fixtures.DialectPage, "dialect: page, page_param: page", ""},
		{fixtures.DialectContinue, "dialect: continue", ""},
		{fixtures.DialectCursorNext, "next_cursor: response_metadata.next_cursor", "the query parameter that takes response_metadata.next_cursor"},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			d, err := FromSample(t.Context(), srv.URL+"/x/"+tc.dialect+"/"+fixtures.DatasetSubscriptions,
				SampleOptions{Options: Options{Environment: "test", Resources: []string{"subscriptions"}}, CredentialEnv: fixtures.DemoTokenEnv, Getenv: getenv})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(d.YAML), tc.pagination) {
				t.Fatalf("the draft does not say %q:\n%s", tc.pagination, d.YAML)
			}
			if strings.Contains(string(d.YAML), fixtures.DefaultToken) {
				t.Fatal("the draft holds the credential's value")
			}
			cfg, err := config.Parse(d.YAML)
			var rt *upstream.Runtime
			if err == nil {
				rt, err = upstream.Initialize(t.Context(), cfg, upstream.Options{Getenv: getenv})
			}
			if tc.todo != "" {
				var errs config.Errors
				if len(d.TODOs) != 1 || !strings.Contains(d.TODOs[0], tc.todo) || !errors.As(err, &errs) || !strings.Contains(err.Error(), tc.todo) {
					t.Fatalf("TODOs %v, error %v; want the draft refused for %q", d.TODOs, err, tc.todo)
				}
				return
			}
			if err != nil || len(d.TODOs) > 0 {
				t.Fatalf("TODOs %v, error %v\n%s", d.TODOs, err, d.YAML)
			}
			s := rt.Resources["subscriptions"].NewScan(upstream.ScanSpec{RequestID: "t"})
			if err := s.Run(t.Context(), upstream.Budget{MaxPages: 100, Deadline: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if o := s.Outcome(); !o.ScanComplete || o.Matched != n {
				t.Fatalf("the drafted configuration read %d of %d, complete %v (%v)", o.Matched, n, o.ScanComplete, o.Reasons)
			}
		})
	}
}

// TestDraftFromSample_PicksTheRowsAndKeepsTheSamplesOwnParameters: a page
// holding an array of column names beside the array of row objects (as
// Datasette answers) is drafted from the rows, whose objects carry an id;
// the sample's own _shape=objects is kept in list.params, _size is read as
// the page size, and the next token is sent back as the parameter its own
// next URL uses.
func TestDraftFromSample_PicksTheRowsAndKeepsTheSamplesOwnParameters(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"database": "shop", "table": "orders",
			"columns": ["id", "status", "total"],
			"rows": [{"id": 1, "status": "paid", "total": 10.5}, {"id": 2, "status": "open", "total": 3}],
			"next": "2", "next_url": "http://` + r.Host + `/shop/orders.json?_shape=objects&_size=2&_next=2",
			"truncated": false}`))
	}))
	defer srv.Close()
	d, err := FromSample(t.Context(), srv.URL+"/shop/orders.json?_shape=objects&_size=2", SampleOptions{Options: Options{Environment: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  orders:\n",
		"items: rows",
		`params: {_shape: objects}`,
		`pagination: {dialect: cursor, next_cursor: next, cursor_param: _next, page_size_param: _size, page_size: 100}`,
		"id: {type: integer}",
	} {
		if !strings.Contains(string(d.YAML), want) {
			t.Errorf("the draft lacks %q:\n%s", want, d.YAML)
		}
	}
	if len(d.TODOs) != 0 {
		t.Errorf("TODOs %v", d.TODOs)
	}
	if _, err := config.Parse(d.YAML); err != nil {
		t.Errorf("the draft does not parse: %v", err)
	}
}

// TestDraftFromSample_RecognizesANextURLInTheBody: a page that names the
// next page's URL (Django REST Framework's next with count, Microsoft
// Graph's @odata.nextLink, Salesforce's nextRecordsUrl with done) drafts
// the next_url dialect with its total and end flag, and the draft parses.
func TestDraftFromSample_RecognizesANextURLInTheBody(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
		want             []string
	}{
		{"drf", "/api/accounts/?page_size=2", `{"count": 3, "next": "http://HOST/api/accounts/?page=2&page_size=2", "previous": null, "results": [{"id": 1}, {"id": 2}]}`,
			[]string{"items: results", "pagination: {dialect: next_url, next: next, page_size_param: page_size, page_size: 100, total: count}"}},
		{"graph", "/v1.0/users?$top=2", `{"@odata.count": 9, "@odata.nextLink": "http://HOST/v1.0/users?$top=2&$skiptoken=X1", "value": [{"id": "a"}, {"id": "b"}]}`,
			[]string{"items: value", `dialect: next_url, next: "@odata.nextLink"`, `total: "@odata.count"`}},
		{"salesforce", "/services/data/v60.0/query?q=SELECT+Id+FROM+Account", `{"totalSize": 3, "done": false, "nextRecordsUrl": "/services/data/v60.0/query/01g-2", "records": [{"Id": "001"}]}`,
			[]string{"items: records", "dialect: next_url, next: nextRecordsUrl", "total: totalSize", "is_last: done", `params: {q: "SELECT Id FROM Account"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(strings.ReplaceAll(tc.body, "HOST", r.Host)))
			}))
			defer srv.Close()
			d, err := FromSample(t.Context(), srv.URL+tc.path, SampleOptions{Options: Options{Environment: "test"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(d.YAML), want) {
					t.Errorf("the draft lacks %q:\n%s", want, d.YAML)
				}
			}
			if _, err := config.Parse(d.YAML); err != nil && len(config.FindTodos(d.YAML)) == 0 {
				t.Errorf("the draft does not parse: %v\n%s", err, d.YAML)
			}
		})
	}
}

// TestDraftFromSample_WritesAsFactOnlyWhatTheSampleShows: CouchDB's
// _all_docs (offset and total_rows in the answer) drafts the offset dialect
// with its total; the parameter is the sample's own, and a TODO when the
// sample sends none (the answer's offset does not name it: CouchDB reads
// skip). SAP CAP's relative @odata.nextLink beside @odata.count drafts
// next_url with the total. $top, which OData V4 reads as a cap on the
// whole result and Graph as a page size, is a TODO.
func TestDraftFromSample_WritesAsFactOnlyWhatTheSampleShows(t *testing.T) {
	allDocs := `{"total_rows": 3, "offset": 0, "rows": [{"id": "a", "key": "a", "value": {"rev": "1-x"}, "doc": {"_id": "a", "_rev": "1-x", "status": "active"}}]}`
	for _, tc := range []struct {
		name, path, body string
		want, never      []string
	}{
		{"couchdb_all_docs", "/db/_all_docs?include_docs=true&limit=1", allDocs,
			[]string{"items: rows", "dialect: offset", `offset_param: "TODO(the query parameter that sets the answer's offset`, "page_size_param: limit", "total: total_rows"},
			[]string{"offset_param: offset"}},
		{"couchdb_all_docs_with_skip", "/db/_all_docs?include_docs=true&limit=1&skip=0", allDocs,
			[]string{"dialect: offset, offset_param: skip, page_size_param: limit, page_size: 100, total: total_rows"}, nil},
		{"cap_relative_next_link", "/odata/v4/crm/Accounts?$count=true",
			`{"@odata.context": "$metadata#Accounts", "@odata.count": 3000, "value": [{"ID": 1}], "@odata.nextLink": "Accounts?%24count=true&%24skiptoken=100"}`,
			[]string{"items: value", `dialect: next_url, next: "@odata.nextLink"`, `total: "@odata.count"`}, []string{"TODO("}},
		{"graph_top_is_a_todo", "/v1.0/users?$top=2", `{"@odata.count": 9, "@odata.nextLink": "http://HOST/v1.0/users?$top=2&$skiptoken=X1", "value": [{"id": "a"}, {"id": "b"}]}`,
			[]string{`page_size_param: "TODO($top or none`}, []string{`page_size_param: "$top"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(strings.ReplaceAll(tc.body, "HOST", r.Host)))
			}))
			defer srv.Close()
			d, err := FromSample(t.Context(), srv.URL+tc.path, SampleOptions{Options: Options{Environment: "test"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(d.YAML), want) {
					t.Errorf("the draft lacks %q:\n%s", want, d.YAML)
				}
			}
			for _, never := range tc.never {
				if strings.Contains(string(d.YAML), never) {
					t.Errorf("the draft holds %q:\n%s", never, d.YAML)
				}
			}
		})
	}
}

// TestDraftFromSample_APostSampleDraftsAPostList: a sample posted with its
// body (CouchDB's _find) drafts a POST list whose body is the sample's
// less what pages it: a Mango answer's bookmark drafts the bookmark
// dialect, and PouchDB's answer, which has none, beside a body paged by
// skip drafts the offset dialect without a total. Both drafts parse.
func TestDraftFromSample_APostSampleDraftsAPostList(t *testing.T) {
	doc := `{"_id": "a", "_rev": "1-x", "status": "past_due", "owner": null}`
	for _, tc := range []struct {
		name, body, answer string
		want               []string
	}{
		{"couchdb_bookmark", `{"selector": {"status": "past_due"}, "limit": 2}`, `{"docs": [` + doc + `], "bookmark": "g1AAAAA", "warning": "no index"}`,
			[]string{"method: POST", `body: {"selector":{"status":"past_due"}}`, "items: docs", "pagination: {dialect: bookmark, page_size_param: limit, page_size: 100}"}},
		{"pouchdb_skip", `{"selector": {"status": "past_due"}, "limit": 2, "skip": 0}`, `{"docs": [` + doc + `]}`,
			[]string{"method: POST", `body: {"selector":{"status":"past_due"}}`, "pagination: {dialect: offset, offset_param: skip, page_size_param: limit, page_size: 100, total: none}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
					http.Error(w, `{"error":"method_not_allowed"}`, http.StatusMethodNotAllowed)
					return
				}
				got, _ = io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer srv.Close()
			d, err := FromSample(t.Context(), srv.URL+"/accounts/_find", SampleOptions{Options: Options{Environment: "test"}, Body: []byte(tc.body)})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.body {
				t.Errorf("the sample was posted with %s; want %s", got, tc.body)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(d.YAML), want) {
					t.Errorf("the draft lacks %q:\n%s", want, d.YAML)
				}
			}
			if _, err := config.Parse(d.YAML); err != nil {
				t.Errorf("the draft does not parse: %v\n%s", err, d.YAML)
			}
		})
	}
	if _, err := FromSample(t.Context(), "http://127.0.0.1:1/x", SampleOptions{Body: []byte(`[1]`)}); err == nil || !strings.Contains(err.Error(), "one JSON object") {
		t.Errorf("a body that is not an object: %v", err)
	}
}
