package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/configtest"
)

// TestScalarItems_AreReadAsObjects reads a docker-registry-like catalog:
// {"repositories": ["a", "b"]} pages linked by Link.
func TestScalarItems_AreReadAsObjects(t *testing.T) {
	names := make([]string, 23)
	for i := range names {
		names[i] = fmt.Sprintf("team/repo-%02d", i)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 10
		last := r.URL.Query().Get("last")
		start := 0
		if last != "" {
			start = slices.Index(names, last) + 1
		}
		end := min(start+n, len(names))
		if end < len(names) {
			w.Header().Set("Link", fmt.Sprintf(`</v2/_catalog?last=%s&n=%d>; rel="next"`, url.QueryEscape(names[end-1]), n))
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, `{"repositories":[%s]}`, quoteAll(names[start:end]))
	}))
	t.Cleanup(ts.Close)
	cfg := configtest.Lines(
		"environment: test",
		"upstreams:",
		fmt.Sprintf("  registry: {base_url: %q}", ts.URL),
		"resources:",
		"  repositories:",
		"    upstream: registry",
		"    list: {path: /v2/_catalog, items: repositories, scalar_item_field: name}",
		"    pagination: {dialect: link, page_size_param: n, page_size: 10}",
		"    id_field: name",
		"    fields:",
		"      name: {type: string}",
	)
	sink, out, err := scanAll(t, runtimeFor(t, cfg).Resources["repositories"], nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if !out.ScanComplete || !slices.Equal(sink.ids, names) {
		t.Fatalf("complete %v with %v, reasons %+v; want all %d names", out.ScanComplete, sink.ids, out.Reasons, len(names))
	}
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ",")
}

// TestTimestampLayout_NormalizesPocketBaseTimes: a timestamp decision field
// written "2026-12-02 16:17:14.757Z" is read as RFC 3339 instead of
// withholding every record.
func TestTimestampLayout_NormalizesPocketBaseTimes(t *testing.T) {
	body := `{"page":1,"perPage":30,"totalItems":2,"items":[
		{"id":"a","updated":"2026-12-02 16:17:14.757Z"},
		{"id":"b","updated":"2026-12-01 08:00:00.000Z"}]}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("page") != "1" {
			io.WriteString(w, `{"page":2,"perPage":30,"totalItems":2,"items":[]}`)
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	for _, tc := range []struct {
		name, layout string
		complete     bool
	}{
		{"declared layout", `"2006-01-02 15:04:05.999Z07:00"`, true},
		{"RFC 3339 assumed", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			field := "      updated: {type: timestamp, decision: true, required: true}"
			if tc.layout != "" {
				field = "      updated: {type: timestamp, decision: true, required: true, layout: " + tc.layout + "}"
			}
			cfg := configtest.Lines(
				"environment: test",
				"upstreams:",
				fmt.Sprintf("  pb: {base_url: %q}", ts.URL),
				"resources:",
				"  accounts:",
				"    upstream: pb",
				"    list: {path: /api/collections/accounts/records, items: items}",
				"    pagination: {dialect: page, page_size_param: perPage, total: totalItems, page_size: 30}",
				"    id_field: id",
				"    fields:",
				"      id: {type: string}",
				field,
			)
			r := runtimeFor(t, cfg).Resources["accounts"]
			var got []map[string]any
			s := r.NewScan(ScanSpec{Sink: sinkFunc(func(it *Item) error { got = append(got, it.Doc); return nil })})
			if err := s.Run(context.Background(), Budget{MaxPages: 10, Deadline: 5e9}); err != nil {
				t.Fatal(err)
			}
			out := s.Outcome()
			if out.ScanComplete != tc.complete {
				t.Fatalf("complete %v, reasons %+v", out.ScanComplete, out.Reasons)
			}
			if !tc.complete {
				if !hasReason(out, envelope.ContractViolation) {
					t.Fatalf("reasons %+v, want CONTRACT_VIOLATION", out.Reasons)
				}
				return
			}
			if len(got) != 2 || got[0]["updated"] != "2026-12-02T16:17:14.757Z" {
				t.Fatalf("items %v, want RFC 3339 times", got)
			}
			normalized := false
			for _, w := range out.Warnings {
				normalized = normalized || (w.Code == envelope.WarnValueNormalized && slices.Contains(w.Fields, "updated"))
			}
			if !normalized {
				t.Errorf("warnings %+v, want VALUE_NORMALIZED naming updated", out.Warnings)
			}
		})
	}
}

type sinkFunc func(*Item) error

func (f sinkFunc) Add(it *Item) error { return f(it) }

// TestNullValues_MatchTheNullFilter: an upstream that stores "no owner" as
// "" answers a null filter with every such record.
func TestNullValues_MatchTheNullFilter(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectPage, Records: faultRecords(50)}}
	r := faultRuntime(t, fl, 20, "", "")
	var want []string
	for _, rec := range fl.Records {
		if rec["owner"] == "" {
			want = append(want, rec.ID())
		}
	}
	sink, out, err := scanAll(t, r, map[string]any{"owner": nil}, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if !out.ScanComplete || !slices.Equal(sink.ids, want) {
		t.Fatalf("complete %v, %d ids, want %d (every owner \"\")", out.ScanComplete, len(sink.ids), len(want))
	}
}

// TestMultiValueFilters_AreSentOnlyInTheDeclaredForm: a list is never
// comma-joined for an API that takes one value; it is sent as the
// configuration declares, or applied by airlock alone.
func TestMultiValueFilters_AreSentOnlyInTheDeclaredForm(t *testing.T) {
	for _, tc := range []struct {
		name, api, multi string
		wantQuery        []string // the status values the upstream saw
	}{
		{"undeclared, exact-match API", "exact", "", nil},
		{"declared repeat", "exact", "repeat", []string{"active", "disabled"}},
		{"declared comma", "comma", "comma", []string{"active,disabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen [][]string
			fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, Records: faultRecords(60), Filter: tc.api}}
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = append(seen, r.URL.Query()["status"])
				fl.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			r := runtimeFor(t, fixtures.FaultListConfig(ts.URL, fl.Dialect, 25, "", tc.multi)).Resources["items"]
			sink, out, err := scanAll(t, r, map[string]any{"status": []any{"active", "disabled"}}, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, rec := range fl.Records {
				if rec["status"] != "archived" {
					want++
				}
			}
			if !out.ScanComplete || len(sink.ids) != want {
				t.Fatalf("complete %v with %d ids, want %d", out.ScanComplete, len(sink.ids), want)
			}
			for _, q := range seen {
				if !slices.Equal(q, tc.wantQuery) {
					t.Fatalf("the upstream saw status=%q, want %q", q, tc.wantQuery)
				}
			}
		})
	}
}

// TestBaseURLFromEnvironment is read at start-up; an unset variable fails
// there, naming it.
func TestBaseURLFromEnvironment(t *testing.T) {
	ts := httptest.NewServer(&fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectCursor, Records: faultRecords(3)}})
	t.Cleanup(ts.Close)
	cfg := fixtures.FaultListConfig("${ITEMS_API}", fixtures.DialectCursor, 10, "", "")
	parsed, err := config.Parse(cfg)
	if err != nil {
		t.Fatalf("a base_url from the environment must parse: %v", err)
	}
	if _, err := Initialize(context.Background(), parsed, Options{Getenv: func(string) string { return "" }}); err == nil || !strings.Contains(err.Error(), `"ITEMS_API"`) {
		t.Fatalf("initialize without the variable: %v, want an error naming ITEMS_API", err)
	}
	rt := runtimeWith(t, cfg, func(k string) string {
		if k == "ITEMS_API" {
			return ts.URL
		}
		return ""
	})
	sink, out, err := scanAll(t, rt.Resources["items"], nil, Budget{})
	if err != nil || !out.ScanComplete || len(sink.ids) != 3 {
		t.Fatalf("scan: %v, complete %v, %d ids", err, out.ScanComplete, len(sink.ids))
	}
	if got := parsed.EnvRefs(); !slices.Equal(got, []string{"ITEMS_API"}) {
		t.Errorf("EnvRefs = %v", got)
	}
}
