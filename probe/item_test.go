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
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// enveloped is a fake peer whose answers wrap what they hold in data, as
// headless CMSs do: the list {data: [...], total}, one item {data: {...}};
// it refuses a page size over maxSize with 400 and its own words.
func enveloped(t *testing.T, n, maxSize int) *httptest.Server {
	t.Helper()
	var all []map[string]any
	for i := range n {
		all = append(all, map[string]any{"id": "a" + strconv.Itoa(i), "status": []string{"active", "disabled"}[i%2]})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if id, ok := strings.CutPrefix(r.URL.Path, "/accounts/"); ok {
			for _, a := range all {
				if a["id"] == id {
					_ = json.NewEncoder(w).Encode(map[string]any{"data": a})
					return
				}
			}
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]any{"errors": []any{map[string]any{"message": "not found"}}})
			return
		}
		q := r.URL.Query()
		page, _ := strconv.Atoi(q.Get("page"))
		size, _ := strconv.Atoi(q.Get("per_page"))
		if size > maxSize {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "per_page must be <= " + strconv.Itoa(maxSize)})
			return
		}
		from := min((page-1)*size, len(all))
		_ = json.NewEncoder(w).Encode(map[string]any{"data": all[from:min(from+size, len(all))], "total": len(all)})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func probeEnveloped(t *testing.T, base, pagination, get string) *Report {
	t.Helper()
	cfg, err := config.Parse([]byte(`environment: test
upstreams: {api: {base_url: "` + base + `"}}
resources:
  accounts:
    upstream: api
    list: {path: /accounts, items: data}
    pagination: ` + pagination + `
    id_field: id
    fields: {id: {type: string}, status: {type: string}}
    get: ` + get + `
actions:
  disable:
    resource: accounts
    request: {method: POST, path: "/accounts/{{id}}/disable"}
    conditional: reread
    effect: [{field: status, to: disabled}]
`))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rt.Resources["accounts"]
	return CheckAssumptions(t.Context(), r, Options{Actions: []*upstream.Action{rt.Actions["disable"]}})
}

func checkOf(rep *Report, name string) Check {
	for _, c := range rep.Checks {
		if c.Check == name {
			return c
		}
	}
	return Check{Status: "absent"}
}

// TestProbe_GetByIDMustAnswerTheItemWithItsID: a GET by id that answers
// 200 with the item wrapped in an envelope is not a working re-read until
// get.item points into it; probe says where the item is, and the reread
// action that rests on it is wrong too.
func TestProbe_GetByIDMustAnswerTheItemWithItsID(t *testing.T) {
	srv := enveloped(t, 30, 100)
	without := probeEnveloped(t, srv.URL, "{dialect: page, page_size: 20}", `{path: "/accounts/{{id}}"}`)
	item := checkOf(without, "get.item")
	if item.Status != Wrong || !strings.Contains(item.Hint, "set get.item: data") {
		t.Errorf("get.item without item: %+v", item)
	}
	if got := checkOf(without, "actions.disable.conditional"); got.Status != Wrong {
		t.Errorf("a reread through a GET that answers the envelope: %+v", got)
	}
	with := probeEnveloped(t, srv.URL, "{dialect: page, page_size: 20}", `{path: "/accounts/{{id}}", item: data}`)
	if with.Wrong() != 0 || checkOf(with, "get.item").Status != OK || checkOf(with, "actions.disable.conditional").Status != OK {
		t.Errorf("with get.item: data: %+v", with.Checks)
	}
}

// TestProbe_APageSizeOverTheAPIsMaximumIsNamedInItsOwnWords: a first page
// refused for its size is tried at the size the API's message names;
// probe names pagination.page_size with the API's words and the size that
// works, and checks the rest at that size.
func TestProbe_APageSizeOverTheAPIsMaximumIsNamedInItsOwnWords(t *testing.T) {
	srv := enveloped(t, 30, 10)
	rep := probeEnveloped(t, srv.URL, "{dialect: page, page_size: 2000}", `{path: "/accounts/{{id}}", item: data}`)
	c := checkOf(rep, "pagination.page_size")
	if c.Status != Wrong || !strings.Contains(c.Evidence, `the API said: "per_page must be <= 10"`) || !strings.Contains(c.Hint, "set pagination.page_size: 10") {
		t.Errorf("pagination.page_size: %+v", c)
	}
	if got := checkOf(rep, "pagination.end"); got.Status != OK {
		t.Errorf("the walk at the size the API accepts: %+v", got)
	}
	if rep.Wrong() != 1 {
		t.Errorf("%d wrong, want only the page size: %+v", rep.Wrong(), rep.Checks)
	}
}

// TestRead_AnEnvelopeReadAsTheItemIsABadResponse: a re-read whose answer
// holds no id where get.item points fails as a bad response naming
// get.item, never reads as a record that moved.
func TestRead_AnEnvelopeReadAsTheItemIsABadResponse(t *testing.T) {
	srv := enveloped(t, 3, 100)
	cfg, err := config.Parse([]byte(`environment: test
upstreams: {api: {base_url: "` + srv.URL + `"}}
resources:
  accounts:
    upstream: api
    list: {path: /accounts, items: data}
    pagination: {dialect: page}
    id_field: id
    fields: {id: {type: string}}
    get: {path: "/accounts/{{id}}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, found, err := read.Item(t.Context(), rt.Resources["accounts"], "a1", "test")
	if err == nil || !transport.IsBadResponse(err) || !strings.Contains(err.Error(), "get.item") {
		t.Fatalf("Read = found %v, %v; want a bad response naming get.item", found, err)
	}
}
