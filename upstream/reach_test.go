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
