package upstream

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/configtest"
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
	if len(out.Reasons) != 1 || out.Reasons[0].Code != envelope.EndNotProven || out.Reasons[0].Signal != SignalContinuationRefused {
		t.Errorf("reasons %+v, want END_NOT_PROVEN %s", out.Reasons, SignalContinuationRefused)
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
