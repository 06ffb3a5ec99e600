package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/redact/leaktest"
)

// cursorAPI is an API that takes its key in the query (api_key) and
// whose next link carries a cursor that is base64 of the request's own
// query, the key included and percent-escaped, itself percent-escaped in
// the link (issue #30 finding 5). A cursor that does not decode to the
// key and a page is refused (400) and counted: a continuation airlock
// corrupted.
type cursorAPI struct {
	key   string
	items int
	// slow, when set, makes the request for that page (from 1) wait past
	// airlock's timeout.
	slow int
	// echo puts the page's own link (self), its cursor and base64 of a
	// document holding the cursor (token) into every item.
	echo bool
	mu   sync.Mutex
	// requests are the queries received; refused counts the cursors
	// refused.
	requests []string
	refused  int
}

const cursorAPIPage = 5

func newCursorAPI(t *testing.T, key string, items int) (*cursorAPI, string) {
	t.Helper()
	a := &cursorAPI{key: key, items: items}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return a, srv.URL
}

// cursorOf is the cursor of page: base64 of the query that asks for it,
// with a mark whose bytes make + and / in the encoding (escaped in the
// link as %2B and %2F, beside the padding's %3D).
func (a *cursorAPI) cursorOf(page int) string {
	q := fmt.Sprintf("api_key=%s&limit=%d&page=%d&mark=~~~???", url.QueryEscape(a.key), cursorAPIPage, page)
	return base64.StdEncoding.EncodeToString([]byte(q))
}

func (a *cursorAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests = append(a.requests, r.URL.RawQuery)
	a.mu.Unlock()
	if r.URL.Path != "/v1/items" || r.URL.Query().Get("api_key") != a.key {
		tooltest.Answer(w, 401, "application/json", `{"error":"invalid key"}`)
		return
	}
	page := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		q, perr := url.ParseQuery(string(raw))
		n, nerr := strconv.Atoi(q.Get("page"))
		if err != nil || perr != nil || nerr != nil || q.Get("api_key") != a.key {
			a.mu.Lock()
			a.refused++
			a.mu.Unlock()
			tooltest.Answer(w, 400, "application/json", `{"error":"invalid cursor"}`)
			return
		}
		page = n
	}
	if a.slow > 0 && page == a.slow {
		time.Sleep(400 * time.Millisecond) // past the configured 150ms
	}
	var items []any
	for i := page * cursorAPIPage; i < min((page+1)*cursorAPIPage, a.items); i++ {
		it := map[string]any{"id": fmt.Sprintf("it-%03d", i), "name": fmt.Sprintf("item %d", i)}
		if a.echo {
			c := a.cursorOf(page)
			it["self"] = "http://" + r.Host + "/v1/items?cursor=" + url.QueryEscape(c)
			it["cursor"] = c
			it["token"] = base64.RawURLEncoding.EncodeToString([]byte(`{"page":` + strconv.Itoa(page) + `,"c":"` + c + `"}`))
		}
		items = append(items, it)
	}
	var next any
	if (page+1)*cursorAPIPage < a.items {
		next = "http://" + r.Host + "/v1/items?cursor=" + url.QueryEscape(a.cursorOf(page+1))
	}
	b, _ := json.Marshal(map[string]any{"results": items, "next": next})
	tooltest.Answer(w, 200, "application/json", string(b))
}

func (a *cursorAPI) refusedCursors() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refused
}

// cursorAPIKey is the API's key: it has the bytes a query escapes.
const cursorAPIKey = "cnry+7d2e/c41b=9f03-query-key"

// cursorAPIConfig reads cursorAPI at base as resource "items", with its
// key from CURSOR_API_KEY in the query; fields are YAML lines declaring
// more fields.
func cursorAPIConfig(base string, fields ...string) harnessOpt {
	return withConfig(func(string) []byte {
		return fmt.Appendf(nil, `environment: test
upstreams:
  api:
    base_url: %q
    credential: {env: CURSOR_API_KEY, query: api_key}
    timeout: 150ms
    retries: 0
    backoff: {min: 1ms, max: 5ms}
resources:
  items:
    upstream: api
    list: {path: /v1/items, items: results}
    pagination: {dialect: next_url, next: next, page_size_param: limit, page_size: %d}
    id_field: id
    fields:
      id: {type: string}
      name: {type: string}
%s`, base, cursorAPIPage, strings.Join(fields, ""))
	})
}

func cursorAPIEnv(k string) string {
	if k == "CURSOR_API_KEY" {
		return cursorAPIKey
	}
	return ""
}

// storeLeaks fails when the store's files reveal key in any form
// leaktest reads.
func (h *harness) storeLeaks(key string) {
	h.t.Helper()
	for _, f := range []string{h.dbPath, h.dbPath + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if hits := leaktest.Hits(b, key); len(hits) > 0 {
			h.t.Fatalf("the store reveals the key (%v)", hits)
		}
	}
}

// replica connects h to another replica: a tools.Deps of its own over the same
// store, with secret (nil: the keys the store keeps).
func replica(t *testing.T, h *harness, secret []byte) {
	t.Helper()
	h.otherProcess(secret)
}
