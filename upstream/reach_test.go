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
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// odataConfig is a next_url list at a nested path, as SAP CAP serves
// one: /odata/v4/crm/Accounts, its next link relative to the page.
func odataConfig(baseURL, extra string) []byte {
	return configtest.Lines(
		"environment: test",
		"upstreams:",
		"  api:",
		fmt.Sprintf("    base_url: %q", baseURL),
		"    credential: {env: "+fixtures.DemoTokenEnv+"}",
		"    retries: 0",
		"resources:",
		"  items:",
		"    upstream: api",
		"    list: {path: /odata/v4/crm/Accounts, items: value}",
		`    pagination: {dialect: next_url, next: "@odata.nextLink", page_size_param: $top, page_size: 2}`,
		"    id_field: id",
		"    fields:",
		"      id: {type: string}",
		"      status: {type: string}",
		extra,
	)
}

func TestRelativeNextLink_ResolvesAgainstThePageThatCarriedIt(t *testing.T) {
	for _, tc := range []struct{ name, base string }{
		{"base_url without a path", ""},
		{"base_url with a path", "/odata/v4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{respond: func(_ int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path != "/odata/v4/crm/Accounts" {
					http.NotFound(w, r)
					return
				}
				switch r.URL.Query().Get("$skiptoken") {
				case "":
					io.WriteString(w, `{"value":[{"id":"a"},{"id":"b"}],"@odata.nextLink":"Accounts?$skiptoken=2"}`)
				case "2":
					io.WriteString(w, `{"value":[{"id":"c"}]}`)
				}
			}}
			ts := startRecorder(t, rec)
			base := ts.URL + tc.base
			cfg := odataConfig(base, "")
			if tc.base != "" {
				cfg = []byte(strings.Replace(string(cfg), "path: /odata/v4/crm/Accounts", "path: /crm/Accounts", 1))
			}
			rt := runtimeFor(t, cfg)
			got, out, err := scanAll(t, rt.Resources["items"], nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.ids, ",") != "a,b,c" || !out.ScanComplete {
				t.Errorf("ids %v complete %v reasons %+v, want a,b,c complete", got.ids, out.ScanComplete, out.Reasons)
			}
			for _, r := range rec.requests() {
				if r.Path != "/odata/v4/crm/Accounts" {
					t.Errorf("requested %s, want every page at /odata/v4/crm/Accounts", r.Path)
				}
			}
		})
	}
}

func TestNotFoundOnAFollowedNextLink_IsAPartialSourceNotAMissingEndpoint(t *testing.T) {
	rec := &recorder{respond: func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if n > 1 {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"404","message":"Not Found"}}`)
			return
		}
		io.WriteString(w, `{"value":[{"id":"a"},{"id":"b"}],"@odata.nextLink":"Accounts?$skiptoken=2"}`)
	}}
	ts := startRecorder(t, rec)
	rt := runtimeFor(t, odataConfig(ts.URL, ""))
	got, out, err := scanAll(t, rt.Resources["items"], nil, Budget{})
	if err != nil {
		t.Fatalf("the scan failed (%v): a 404 to a next link is not a missing list endpoint", err)
	}
	if out.ScanComplete || len(got.ids) != 2 {
		t.Fatalf("complete %v with %v, want partial with a, b", out.ScanComplete, got.ids)
	}
	if len(out.Reasons) != 1 || out.Reasons[0].Code != envelope.EndNotProven || out.Reasons[0].Signal != dialect.SignalContinuationRefused {
		t.Errorf("reasons %+v, want END_NOT_PROVEN %s", out.Reasons, dialect.SignalContinuationRefused)
	}
}

func TestQuery_SpacesGoOutAsPercent20UnlessTheAPIReadsForms(t *testing.T) {
	for _, tc := range []struct{ name, upstream, list, want string }{
		{"rfc3986 by default", "", "", "$filter=status%20ne%20'archived'"},
		{"form on the upstream", "query_encoding: form", "", "$filter=status+ne+'archived'"},
		{"the list overrides its upstream", "query_encoding: form", ", query_encoding: rfc3986", "$filter=status%20ne%20'archived'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raw string
			rec := &recorder{respond: func(_ int, w http.ResponseWriter, r *http.Request) {
				raw = r.URL.RawQuery
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"value":[]}`)
			}}
			ts := startRecorder(t, rec)
			cfg := strings.Replace(string(odataConfig(ts.URL, "")), "    list: {path: /odata/v4/crm/Accounts, items: value}",
				`    list: {path: /odata/v4/crm/Accounts, items: value, params: {$filter: "status ne 'archived'"}`+tc.list+`}`, 1)
			cfg = strings.Replace(cfg, "    retries: 0", "    retries: 0\n    "+tc.upstream, 1)
			rt := runtimeFor(t, []byte(cfg))
			if _, _, err := scanAll(t, rt.Resources["items"], nil, Budget{}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(raw, tc.want) {
				t.Errorf("query %s, want it to hold %s", raw, tc.want)
			}
		})
	}
}

func TestQueryCredential_LeavesTheNextLinksOwnEncodingAlone(t *testing.T) {
	var raws []string
	rec := &recorder{respond: func(n int, w http.ResponseWriter, r *http.Request) {
		raws = append(raws, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			// The link is built from the request's URL, key included.
			io.WriteString(w, `{"value":[{"id":"a"},{"id":"b"}],"@odata.nextLink":"Accounts?api_key=k3y&$filter=name%20eq%20'a+b'&$skiptoken=2"}`)
			return
		}
		io.WriteString(w, `{"value":[]}`)
	}}
	ts := startRecorder(t, rec)
	cfg := strings.Replace(string(odataConfig(ts.URL, "")), "credential: {env: "+fixtures.DemoTokenEnv+"}", "credential: {env: "+fixtures.DemoTokenEnv+", query: api_key}", 1)
	rt := runtimeWith(t, []byte(cfg), func(string) string { return "k3y" })
	if _, _, err := scanAll(t, rt.Resources["items"], nil, Budget{}); err != nil {
		t.Fatal(err)
	}
	if len(raws) != 2 || raws[1] != "$filter=name%20eq%20'a+b'&$skiptoken=2&api_key=k3y" {
		t.Errorf("queries %q, want the link's own bytes and the key once", raws)
	}
}

// TestKeyRange_ReadsEveryKeyOnceAtOneRevision: etcd's range (the fault
// list's key_range) continues after the last key made exclusive, at the
// first page's revision, and proves its end by more omitted (proto3) after
// a page that carried it.
func TestKeyRange_ReadsEveryKeyOnceAtOneRevision(t *testing.T) {
	for _, n := range []int{0, 2, 7, 30} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectKeyRange, Records: faultRecords(n)}}
			r := faultRuntime(t, fl, 7, "", "")
			sink, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if len(sink.ids) != n || !out.ScanComplete {
				t.Fatalf("%d ids (%v), complete %v %+v, want %d complete", len(sink.ids), sink.ids, out.ScanComplete, out.Reasons, n)
			}
			if n > 0 && sink.ids[0] != "r0000" {
				t.Errorf("first id %q, want the key decoded (r0000)", sink.ids[0])
			}
			if r.Consistency() != "snapshot" || (n > 0 && (out.Snapshot == nil || *out.Snapshot != "101")) {
				t.Errorf("consistency %s snapshot %v, want snapshot at the first page's revision 101", r.Consistency(), out.Snapshot)
			}
		})
	}
}

func TestKeyRange_NeverCompleteWithoutItsSignal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		knobs fixtures.FaultKnobs
	}{
		// One key: more is never sent, not even to a probe, so its
		// absence proves nothing.
		{"one key", fixtures.FaultKnobs{}},
		{"more never sent", fixtures.FaultKnobs{NoNextSignal: true}},
		{"the key is ignored", fixtures.FaultKnobs{IgnorePage: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.knobs.Dialect, tc.knobs.Records = fixtures.DialectKeyRange, faultRecords(30)
			if tc.name == "one key" {
				tc.knobs.Records = faultRecords(1)
			}
			fl := &fixtures.FaultList{FaultKnobs: tc.knobs}
			r := faultRuntime(t, fl, 7, "", "")
			_, out, err := scanAll(t, r, nil, Budget{})
			if err == nil && out.ScanComplete {
				t.Fatalf("complete: %+v", out.Sources)
			}
		})
	}
}

// TestKeyRange_ACompactedRevisionRestarts: etcd answers a range at a
// compacted revision 400 "required revision has been compacted": declared
// as the list's expiry, it is CURSOR_EXPIRED with a restart.
func TestKeyRange_ACompactedRevisionRestarts(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectKeyRange, Records: faultRecords(30), ExpireAfter: 2}}
	r := faultRuntime(t, fl, 7, "", "")
	sink, out, err := scanAll(t, r, nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if reasonOf(out, envelope.CursorExpired) == nil || out.Continuation != envelope.ContinueRestart || len(sink.ids) != 14 {
		t.Errorf("reasons %+v continuation %s, %d items; want CURSOR_EXPIRED restart after 14", out.Reasons, out.Continuation, len(sink.ids))
	}
}

// TestPageSizeNone_SendsNoPageSize: OData's $top limits the whole result
// (SAP CAP stops after it), so a list whose server alone sizes its pages
// declares page_size_param: none and sends none, probes included.
func TestPageSizeNone_SendsNoPageSize(t *testing.T) {
	var queries []string
	rec := &recorder{respond: func(n int, w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("$skiptoken") == "" {
			io.WriteString(w, `{"value":[{"id":"a"},{"id":"b"}],"@odata.nextLink":"Accounts?$skiptoken=2"}`)
			return
		}
		io.WriteString(w, `{"value":[{"id":"c"}]}`)
	}}
	ts := startRecorder(t, rec)
	cfg := strings.Replace(string(odataConfig(ts.URL, "")), "page_size_param: $top, page_size: 2", "page_size_param: none, page_size: 2", 1)
	rt := runtimeFor(t, []byte(cfg))
	got, out, err := scanAll(t, rt.Resources["items"], nil, Budget{})
	if err != nil || strings.Join(got.ids, ",") != "a,b,c" || !out.ScanComplete {
		t.Fatalf("ids %v complete %v err %v", got.ids, out.ScanComplete, err)
	}
	for _, q := range queries {
		if strings.Contains(q, "top") || strings.Contains(q, "none") {
			t.Errorf("query %q sends a page size", q)
		}
	}
}

// TestAbsentMeansZero_AnAnswerOfNothingIsNoEmptyList: with the flag and
// the items declared omitted when zero (proto3), an answer that omits
// everything ({}) shows nothing of a list: the list is not proven empty.
// An answer that carries its header and omits both is (etcd's empty range,
// TestKeyRange_ReadsEveryKeyOnceAtOneRevision).
func TestAbsentMeansZero_AnAnswerOfNothingIsNoEmptyList(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	rt := runtimeFor(t, []byte(`environment: test
upstreams:
  kv: {base_url: "`+srv.URL+`"}
resources:
  keys:
    upstream: kv
    list: {path: /v3/kv/range, method: POST, items: kvs, body: {key: YQ==}}
    pagination: {dialect: cursor, has_more: more, cursor_param: key, absent_means_zero: [more, kvs]}
    id_field: key
    fields: {key: {type: string}}
`))
	sink, out, err := scanAll(t, rt.Resources["keys"], nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if out.ScanComplete || len(sink.ids) != 0 {
		t.Fatalf("an answer of {} read as a complete list of %d: %+v", len(sink.ids), out.Reasons)
	}
}
