package tooltest

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

	"github.com/airlock-mcp/airlock/redact/leaktest"
)

// CursorAPI is an API that takes its key in the query (api_key) and whose
// next link carries a cursor that is base64 of the request's own query,
// the key included and percent-escaped, itself percent-escaped in the
// link. A cursor that does not decode to the key and a page is refused
// (400) and counted: a continuation airlock corrupted.
type CursorAPI struct {
	Key   string
	Items int
	// Slow, when set, makes the request for that page (from 1) wait until
	// airlock gives up on it (its configured timeout).
	Slow int
	// Echo puts the page's own link (self), its cursor and base64 of a
	// document holding the cursor (token) into every item.
	Echo bool

	mu sync.Mutex
	// requests are the queries received; refused counts the cursors
	// refused.
	requests []string
	refused  int
}

// CursorAPIPage is the CursorAPI's page size.
const CursorAPIPage = 5

// CursorAPIKey is the key a CursorAPI is started with in the suites: it
// has the bytes a query escapes.
const CursorAPIKey = "cnry+7d2e/c41b=9f03-query-key"

// CursorAPIEnv is the environment a configuration reading a CursorAPI
// takes its key from (CURSOR_API_KEY).
func CursorAPIEnv(k string) string {
	if k == "CURSOR_API_KEY" {
		return CursorAPIKey
	}
	return ""
}

// NewCursorAPI serves a CursorAPI of items under key until t ends.
func NewCursorAPI(t testing.TB, key string, items int) (*CursorAPI, string) {
	t.Helper()
	a := &CursorAPI{Key: key, Items: items}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return a, srv.URL
}

// CursorOf is the cursor of page: base64 of the query that asks for it,
// with a mark whose bytes make + and / in the encoding (escaped in the
// link as %2B and %2F, beside the padding's %3D).
func (a *CursorAPI) CursorOf(page int) string {
	q := fmt.Sprintf("api_key=%s&limit=%d&page=%d&mark=~~~???", url.QueryEscape(a.Key), CursorAPIPage, page)
	return base64.StdEncoding.EncodeToString([]byte(q))
}

func (a *CursorAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests = append(a.requests, r.URL.RawQuery)
	a.mu.Unlock()
	if r.URL.Path != "/v1/items" || r.URL.Query().Get("api_key") != a.Key {
		Answer(w, 401, "application/json", `{"error":"invalid key"}`)
		return
	}
	page := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		q, perr := url.ParseQuery(string(raw))
		n, nerr := strconv.Atoi(q.Get("page"))
		if err != nil || perr != nil || nerr != nil || q.Get("api_key") != a.Key {
			a.mu.Lock()
			a.refused++
			a.mu.Unlock()
			Answer(w, 400, "application/json", `{"error":"invalid cursor"}`)
			return
		}
		page = n
	}
	if a.Slow > 0 && page == a.Slow {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	var items []any
	for i := page * CursorAPIPage; i < min((page+1)*CursorAPIPage, a.Items); i++ {
		it := map[string]any{"id": fmt.Sprintf("it-%03d", i), "name": fmt.Sprintf("item %d", i)}
		if a.Echo {
			c := a.CursorOf(page)
			it["self"] = "http://" + r.Host + "/v1/items?cursor=" + url.QueryEscape(c)
			it["cursor"] = c
			it["token"] = base64.RawURLEncoding.EncodeToString([]byte(`{"page":` + strconv.Itoa(page) + `,"c":"` + c + `"}`))
		}
		items = append(items, it)
	}
	var next any
	if (page+1)*CursorAPIPage < a.Items {
		next = "http://" + r.Host + "/v1/items?cursor=" + url.QueryEscape(a.CursorOf(page+1))
	}
	b, _ := json.Marshal(map[string]any{"results": items, "next": next})
	Answer(w, 200, "application/json", string(b))
}

// Requests is how many requests reached the API.
func (a *CursorAPI) Requests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.requests)
}

// RefusedCursors is how many cursors the API refused.
func (a *CursorAPI) RefusedCursors() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refused
}

// CursorAPIConfig is a configuration that reads the CursorAPI at base as
// resource "items", its key from CURSOR_API_KEY in the query, each request
// bounded by timeout; fields are YAML lines declaring more fields.
func CursorAPIConfig(base, timeout string, fields ...string) []byte {
	return fmt.Appendf(nil, `environment: test
upstreams:
  api:
    base_url: %q
    credential: {env: CURSOR_API_KEY, query: api_key}
    timeout: %s
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
%s`, base, timeout, CursorAPIPage, strings.Join(fields, ""))
}

// StoreLeaks fails t when the SQLite store at dbPath (its file and its
// write-ahead log) reveals key in any form leaktest reads.
func StoreLeaks(t testing.TB, dbPath, key string) {
	t.Helper()
	for _, f := range []string{dbPath, dbPath + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if hits := leaktest.Hits(b, key); len(hits) > 0 {
			t.Fatalf("the store reveals the key (%v)", hits)
		}
	}
}
