package upstream

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// twoUpstreams is a configuration whose upstreams read their credentials
// from BILLING_TOKEN and CRM_TOKEN.
func twoUpstreams(billingCred, crmCred string) []byte {
	return configtest.Lines(
		"environment: test",
		"upstreams:",
		"  billing:",
		"    base_url: http://127.0.0.1:1",
		"    credential: "+billingCred,
		"  crm:",
		"    base_url: http://127.0.0.1:2",
		"    credential: "+crmCred,
		"resources:",
		"  items:",
		"    upstream: billing",
		"    list: {path: /items}",
		"    pagination: {dialect: link}",
		"    id_field: id",
		"    fields: {id: {type: string}}",
	)
}

func TestInitialize_UnsetCredentialFailsAtStartUpWithoutSecrets(t *testing.T) {
	const billingSecret = "sk_live_billing_0123456789"
	for _, tc := range []struct {
		name   string
		crmEnv string
	}{
		{"unset", ""},
		{"blank", "   \n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(twoUpstreams("{env: BILLING_TOKEN}", "{env: CRM_TOKEN}"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Initialize(context.Background(), cfg, Options{Getenv: func(k string) string {
				switch k {
				case "BILLING_TOKEN":
					return billingSecret
				case "CRM_TOKEN":
					return tc.crmEnv
				}
				return ""
			}})
			if err == nil {
				t.Fatal("Initialize succeeded with an unset credential")
			}
			msg := err.Error()
			for _, want := range []string{`"crm"`, `"CRM_TOKEN"`, "empty or unset"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %s", msg, want)
				}
			}
			if strings.Contains(msg, billingSecret) || strings.Contains(msg, "BILLING_TOKEN") {
				t.Errorf("error %q mentions the other upstream's credential", msg)
			}
		})
	}
}

func TestInitialize_CredentialFileIsReadAndTrimmed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		contents string
		cred     string
		header   string
		want     string
	}{
		{"trailing newline", "file-token\n", "", "Authorization", "Bearer file-token"},
		{"surrounding blanks", "  \tfile-token \r\n\n", "", "Authorization", "Bearer file-token"},
		{"custom header without scheme", "file-token\n", ", header: X-Api-Key, scheme: \"\"", "X-Api-Key", "file-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(path, []byte(tc.contents), 0o600); err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			ts := startRecorder(t, rec)
			c := newTestClient(t, ts.URL, "credential: {file: "+path+tc.cred+"}", Options{Getenv: func(string) string { return "" }})
			if _, err := c.Do(context.Background(), transport.Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true}); err != nil {
				t.Fatalf("Do: %v", err)
			}
			if got := rec.requests()[0].Header.Get(tc.header); got != tc.want {
				t.Errorf("%s = %q, want %q", tc.header, got, tc.want)
			}
		})
	}
}

func TestInitialize_CredentialFileProblemsFailAtStartUp(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n\t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name string
		path string
		want string
	}{
		{"missing file", missing, "read file"},
		{"blank file", empty, "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(twoUpstreams("{file: "+tc.path+"}", "{env: CRM_TOKEN}"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Initialize(context.Background(), cfg, Options{Getenv: func(string) string { return "crm-token" }})
			if err == nil {
				t.Fatal("Initialize succeeded with an unusable credential file")
			}
			if msg := err.Error(); !strings.Contains(msg, `"billing"`) || !strings.Contains(msg, tc.path) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to name the upstream, the file and %q", msg, tc.want)
			}
		})
	}
}

func TestInitialize_CredentialErrorKeepsItsCause(t *testing.T) {

	cfg, err := config.Parse(twoUpstreams("{file: "+filepath.Join(t.TempDir(), "missing")+"}", "{env: CRM_TOKEN}"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Initialize(context.Background(), cfg, Options{Getenv: func(string) string { return "crm-token" }})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) = false, want the cause kept with %%w", err)
	}
}

func TestInitialize_ResolvesDialectDefaults(t *testing.T) {
	for _, tc := range []struct {
		pagination  string
		items       string
		check       func(p config.PaginationConfig) bool
		consistency string
	}{
		{"{dialect: cursor, has_more: has_more}", "data", func(p config.PaginationConfig) bool {
			return p.PageSizeParam == "limit" && p.CursorParam == "starting_after"
		}, config.ConsistencyKeyset},
		{"{dialect: cursor, next_cursor: meta.next}", "data", func(p config.PaginationConfig) bool {
			return p.PageSizeParam == "limit" && p.CursorParam == "cursor"
		}, config.ConsistencyKeyset},
		{"{dialect: link}", "", func(p config.PaginationConfig) bool { return p.PageSizeParam == "per_page" }, config.ConsistencyNone},
		{"{dialect: offset}", "items", func(p config.PaginationConfig) bool {
			return p.PageSizeParam == "limit" && p.OffsetParam == "offset" && p.Total == "total"
		}, config.ConsistencyNone},
		{"{dialect: page}", "items", func(p config.PaginationConfig) bool {
			return p.PageSizeParam == "per_page" && p.PageParam == "page" && p.Total == "total" && p.FirstPage != nil && *p.FirstPage == 1
		}, config.ConsistencyNone},
		{"{dialect: page, first_page: 0}", "items", func(p config.PaginationConfig) bool { return *p.FirstPage == 0 }, config.ConsistencyNone},
		{"{dialect: continue}", "items", func(p config.PaginationConfig) bool {
			return p.PageSizeParam == "limit" && p.ContinueParam == "continue" && p.ContinuePath == "metadata.continue" && p.ResourceVersion == "metadata.resourceVersion"
		}, config.ConsistencySnapshot},
		{"{dialect: offset, consistency: keyset, page_size_param: n}", "items", func(p config.PaginationConfig) bool { return p.PageSizeParam == "n" }, config.ConsistencyKeyset},
	} {
		t.Run(tc.pagination, func(t *testing.T) {
			cfg, err := config.Parse(configtest.WithPagination(tc.pagination))
			if err != nil {
				t.Fatal(err)
			}
			rt, err := Initialize(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := rt.Resources["items"]
			p := r.Pagination
			if p.PageSize != config.DefaultPageSize || p.Concurrency != 1 || !tc.check(p) {
				t.Errorf("resolved pagination = %+v", p)
			}
			if r.Consistency() != tc.consistency {
				t.Errorf("consistency = %q, want %q", r.Consistency(), tc.consistency)
			}
			if r.Config.List.Items != tc.items {
				t.Errorf("items path = %q, want %q", r.Config.List.Items, tc.items)
			}
			if len(r.Sources) != 1 || r.Sources[0].Name != "items" {
				t.Errorf("sources = %+v, want one source named after the resource", r.Sources)
			}
		})
	}
}

func TestInitialize_ResolvesLimitsWithinTheirCaps(t *testing.T) {
	for _, tc := range []struct {
		limits string
		want   config.LimitsConfig
	}{
		{"{}", config.LimitsConfig{
			MaxItems: config.Limit{Default: config.DefaultMaxItems, Cap: config.DefaultMaxItemsCap}, MaxPages: config.Limit{Default: config.DefaultMaxPages, Cap: config.DefaultMaxPagesCap},
			DeadlineMS: config.Limit{Default: config.DefaultDeadlineMS, Cap: config.DefaultDeadlineMSCap}, ResponseBytes: config.DefaultResponseBytes, ScanItems: config.DefaultScanItems,
		}},
		{"{max_items: {cap: 10}}", config.LimitsConfig{
			MaxItems: config.Limit{Default: 10, Cap: 10}, MaxPages: config.Limit{Default: config.DefaultMaxPages, Cap: config.DefaultMaxPagesCap},
			DeadlineMS: config.Limit{Default: config.DefaultDeadlineMS, Cap: config.DefaultDeadlineMSCap}, ResponseBytes: config.DefaultResponseBytes, ScanItems: config.DefaultScanItems,
		}},
		{"{max_items: {default: 5000}, response_bytes: 100, scan_items: 7}", config.LimitsConfig{
			MaxItems: config.Limit{Default: 5000, Cap: 5000}, MaxPages: config.Limit{Default: config.DefaultMaxPages, Cap: config.DefaultMaxPagesCap},
			DeadlineMS: config.Limit{Default: config.DefaultDeadlineMS, Cap: config.DefaultDeadlineMSCap}, ResponseBytes: 100, ScanItems: 7,
		}},
	} {
		t.Run(tc.limits, func(t *testing.T) {
			cfg, err := config.Parse(append(configtest.WithPagination("{dialect: link}"), []byte("    limits: "+tc.limits+"\n")...))
			if err != nil {
				t.Fatal(err)
			}
			rt, err := Initialize(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := rt.Resources["items"].Limits; got != tc.want {
				t.Errorf("limits = %+v, want %+v", got, tc.want)
			}
		})
	}
}
