package probe

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
)

// pagedAccounts is a fake peer: a page-dialect list of n accounts whose
// owner is "" every third item, whose updated time is written
// "2006-01-02 15:04:05.000Z", and whose status filter is an exact match
// of the whole parameter value.
func pagedAccounts(t *testing.T, n int) *httptest.Server {
	t.Helper()
	var all []map[string]any
	for i := range n {
		owner := "ada@example.com"
		if i%3 == 0 {
			owner = ""
		}
		status := []string{"active", "disabled"}[i%2]
		all = append(all, map[string]any{"id": "a" + strconv.Itoa(i), "owner": owner, "status": status, "updated": "2026-01-05 09:00:00.000Z"})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/accounts" {
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		sel := []map[string]any{}
		for _, a := range all {
			if st, ok := q["status"]; ok && !hasString(st, a["status"].(string)) {
				continue
			}
			sel = append(sel, a)
		}
		page, _ := strconv.Atoi(q.Get("page"))
		size, _ := strconv.Atoi(q.Get("per_page"))
		from := min((page-1)*size, len(sel))
		items := sel[from:min(from+size, len(sel))]
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "total": len(sel)})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func hasString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func probeOf(t *testing.T, base, fields, filters string) *Report {
	t.Helper()
	cfg, err := config.Parse([]byte(`environment: test
upstreams: {api: {base_url: "` + base + `"}}
resources:
  accounts:
    upstream: api
    list: {path: /accounts, items: items}
    pagination: {dialect: page, page_size: 20}
    id_field: id
    fields:
` + fields + `
    filters: ` + filters + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return CheckAssumptions(t.Context(), rt.Resources["accounts"], Options{})
}

func status(rep *Report, check string) string {
	for _, c := range rep.Checks {
		if c.Check == check {
			return c.Status
		}
	}
	return "absent"
}

// TestProbe_NamesEachWrongAssumption: "" used for null without null_values,
// a timestamp layout that is not RFC 3339 and a comma list on an
// exact-match API are each named wrong; the same API described as it is
// passes.
func TestProbe_NamesEachWrongAssumption(t *testing.T) {
	srv := pagedAccounts(t, 90)
	wrong := probeOf(t, srv.URL, `      id: {type: string}
      owner: {type: string, nullable: true}
      status: {type: string, enum: [active, disabled]}
      updated: {type: timestamp}`, `{status: {param: status, multi: comma}}`)
	for _, check := range []string{"fields.owner.null_values", "fields.updated.layout", "filters.status.multi"} {
		if got := status(wrong, check); got != Wrong {
			t.Errorf("%s: %s, want wrong; report: %+v", check, got, wrong.Checks)
		}
	}
	for _, c := range wrong.Checks {
		if c.Check == "fields.updated.layout" && !strings.Contains(c.Hint, "2006-01-02 15:04:05.999Z07:00") {
			t.Errorf("the layout hint suggests no layout that reads the values: %q", c.Hint)
		}
	}
	right := probeOf(t, srv.URL, `      id: {type: string}
      owner: {type: string, nullable: true, null_values: [""]}
      status: {type: string, enum: [active, disabled]}
      updated: {type: timestamp, layout: "2006-01-02 15:04:05.999Z07:00"}`, `{status: {param: status, multi: repeat}}`)
	if right.Wrong() != 0 {
		t.Errorf("a configuration that fits the API: %d wrong: %+v", right.Wrong(), right.Checks)
	}
	for _, check := range []string{"pagination.end", "pagination.count", "filters.status.param", "filters.status.multi"} {
		if got := status(right, check); got != OK {
			t.Errorf("%s: %s, want ok", check, got)
		}
	}
	if right.Requests > DefaultRequests {
		t.Errorf("%d requests, over the budget of %d", right.Requests, DefaultRequests)
	}
}

// TestProbe_AFirstPageWithoutItemsNamesTheItemsPath: a first page that is
// JSON but holds no items where list.items says (JSON null included) is
// list.items wrong, with a hint to set list.items; a body that is not JSON
// is list.path wrong.
func TestProbe_AFirstPageWithoutItemsNamesTheItemsPath(t *testing.T) {
	for _, tc := range []struct {
		name, body, wrong, fine string
	}{
		{"null", "null", "list.items", "list.path"},
		{"another key", `{"data": []}`, "list.items", "list.path"},
		{"not JSON", "<html>", "list.path", "list.items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			rep := probeOf(t, srv.URL, "      id: {type: string}", "{}")
			if got := status(rep, tc.wrong); got != Wrong {
				t.Fatalf("%s: %s, want wrong; report: %+v", tc.wrong, got, rep.Checks)
			}
			if got := status(rep, tc.fine); got == Wrong {
				t.Errorf("%s is wrong too: %+v", tc.fine, rep.Checks)
			}
			for _, c := range rep.Checks {
				if c.Check == "list.items" && !strings.Contains(c.Hint, "set list.items") {
					t.Errorf("list.items hint %q does not say to set list.items", c.Hint)
				}
			}
		})
	}
}
