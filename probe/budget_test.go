package probe

import (
	"encoding/json"
	"fmt"
	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// pastLastPage is a page-dialect peer that counts nothing and refuses a
// page past its last with 400 and WordPress's words; its status filter
// is exact.
func pastLastPage(t *testing.T, n int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var sel []map[string]any
		for i := range n {
			st := []string{"active", "disabled"}[i%2]
			if v := q.Get("status"); v != "" && v != st {
				continue
			}
			sel = append(sel, map[string]any{"id": "a" + strconv.Itoa(i), "status": st})
		}
		page, _ := strconv.Atoi(q.Get("page"))
		size, _ := strconv.Atoi(q.Get("per_page"))
		w.Header().Set("Content-Type", "application/json")
		last := (len(sel) + size - 1) / size
		if page > max(last, 1) {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": "rest_post_invalid_page_number", "message": "The page number requested is larger than the number of pages available."})
			return
		}
		from := min((page-1)*size, len(sel))
		_ = json.NewEncoder(w).Encode(map[string]any{"items": sel[from:min(from+size, len(sel))]})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestProbe_APageRefusedPastTheLastIsNotBlamedOnAFilter: a filtered walk
// whose first page was answered and whose next page the API refuses as
// past its last is the pagination's doing: the filter is unverifiable, and
// no advice says to remove it.
func TestProbe_APageRefusedPastTheLastIsNotBlamedOnAFilter(t *testing.T) {
	srv := pastLastPage(t, 12)
	rep := probeYAML(t, []byte(fmt.Sprintf(`environment: test
upstreams: {api: {base_url: %q}}
resources:
  accounts:
    upstream: api
    list: {path: /accounts, items: items}
    pagination: {dialect: page, page_size: 5, total: none}
    id_field: id
    fields: {id: {type: string}, status: {type: string}}
    filters: {status: {param: status}}
`, srv.URL)), "accounts")
	c := check(rep, "filters.status.param")
	if c.Status != Unverifiable || strings.Contains(c.Hint, "remove param") || !strings.Contains(c.Evidence, "larger than the number of pages") {
		t.Errorf("filters.status.param: %+v", c)
	}
}

// TestProbe_ACheckTheBudgetCutShortIsUnverifiableNotWrong: a probe that
// runs out of requests before it reads an item by id reports that read,
// and the three writes' conditions that rest on it, as unverifiable:
// nothing it did not see is wrong.
func TestProbe_ACheckTheBudgetCutShortIsUnverifiableNotWrong(t *testing.T) {
	srv := enveloped(t, 40, 100)
	cfg := fmt.Sprintf(`environment: test
upstreams: {api: {base_url: %q}}
resources:
  accounts:
    upstream: api
    list: {path: /accounts, items: data}
    pagination: {dialect: page, page_size: 5}
    id_field: id
    fields: {id: {type: string}, status: {type: string}}
    get: {path: "/accounts/{{id}}", item: data}
actions:
  archive: {resource: accounts, request: {method: POST, path: "/accounts/{{id}}/archive"}, conditional: reread, effect: [{field: status, to: archived}], approval: {mode: client}}
  restore: {resource: accounts, request: {method: POST, path: "/accounts/{{id}}/restore"}, conditional: reread, effect: [{field: status, to: active}], approval: {mode: client}}
  disable: {resource: accounts, request: {method: POST, path: "/accounts/{{id}}/disable"}, conditional: reread, effect: [{field: status, to: disabled}], approval: {mode: client}}
`, srv.URL)
	parsed, err := config.Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), parsed, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []*upstream.Action
	for _, n := range rt.ActionNames() {
		actions = append(actions, rt.Actions[n])
	}
	sawCut := false
	for budget := 1; budget <= 14; budget++ {
		rep := CheckAssumptions(t.Context(), rt.Resources["accounts"], Options{MaxRequests: budget, PageSize: 5, Actions: actions})
		if rep.Wrong() > 0 {
			t.Errorf("a budget of %d requests made checks wrong: %+v", budget, rep.Checks)
		}
		if c := check(rep, "get.path"); c.Status == Unverifiable {
			sawCut = true
			if a := check(rep, "actions.archive.conditional"); a.Status != Unverifiable {
				t.Errorf("budget %d: a condition resting on the read the budget cut: %+v", budget, a)
			}
		}
	}
	if !sawCut {
		t.Error("no budget cut the read by id short: the test proves nothing")
	}
}

// TestProbe_APageSizeLimitInANestedFieldIsRead: an API whose refusal says
// only "invalid params" at the top and names the limit in a nested field
// (data.params) is asked again at that limit, not at halves.
func TestProbe_APageSizeLimitInANestedFieldIsRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		size, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		if size > 25 {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": "invalid_params", "message": "Invalid parameter(s).", "data": map[string]any{"status": 400, "params": map[string]any{"per_page": "per_page must be between 1 (inclusive) and 25 (inclusive)"}}})
			return
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		var items []map[string]any
		for i := (page - 1) * size; i < min(page*size, 30); i++ {
			items = append(items, map[string]any{"id": strconv.Itoa(i)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "total": 30})
	}))
	t.Cleanup(srv.Close)
	rep := probeYAML(t, []byte(fmt.Sprintf(`environment: test
upstreams: {api: {base_url: %q}}
resources:
  posts:
    upstream: api
    list: {path: /posts, items: items}
    pagination: {dialect: page, page_size: 100}
    id_field: id
    fields: {id: {type: string}}
`, srv.URL)), "posts")
	c := check(rep, "pagination.page_size")
	if c.Status != Wrong || !strings.Contains(c.Hint, "set pagination.page_size: 25 (the API's maximum)") || !strings.Contains(c.Evidence, "data.params.per_page") {
		t.Errorf("pagination.page_size: %+v", c)
	}
}
