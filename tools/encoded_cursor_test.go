package tools

import (
	"bytes"
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

	"github.com/airlock-mcp/airlock/envelope"
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
	// airlock's timeout (a second: long enough for any other request on a
	// loaded machine).
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
		// Past the configured timeout: until airlock gives up on the
		// request.
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
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
    timeout: 1s
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

// replica connects h to another replica: a Deps of its own over the same
// store, with secret (nil: the keys the store keeps).
func replica(t *testing.T, h *harness, secret []byte) {
	t.Helper()
	h.otherProcess(secret)
}

// TestSealedNextLink_ContinuesOnAnotherReplicaAndTheStoreCannotDecodeIt:
// a scan cut by its page budget keeps the upstream's next link, whose
// cursor is base64 of a query holding the key, in the store; the stored
// document reveals the key in no form, and another replica (its own
// deps over the same store) continues the scan through the stored link
// unchanged, to the last item, without the upstream refusing a cursor.
func TestSealedNextLink_ContinuesOnAnotherReplicaAndTheStoreCannotDecodeIt(t *testing.T) {
	t.Parallel()
	api, base := newCursorAPI(t, cursorAPIKey, 23)
	h := newHarness(t, cursorAPIConfig(base), withEnv(cursorAPIEnv))
	args := map[string]any{"resource": "items", "max_pages": 2}
	r := h.call("search_all", args)
	if r.env.Complete || r.env.Continuation.Cursor == "" || len(r.ids()) != 2*cursorAPIPage {
		t.Fatalf("want two pages and a cursor, got %s", r.raw)
	}
	h.storeLeaks(cursorAPIKey)
	ids := r.ids()
	for call := 1; r.env.Continuation.Cursor != ""; call++ {
		replica(t, h, nil)
		args["cursor"] = r.env.Continuation.Cursor
		r = h.call("search_all", args)
		if r.env.Status == envelope.StatusError || hasReasonCode(r.env, envelope.CursorExpired) {
			t.Fatalf("call %d: %s", call, r.raw)
		}
		ids = append(ids, r.ids()...)
		h.storeLeaks(cursorAPIKey)
	}
	if !r.env.Complete || len(ids) != 23 || ids[22] != "it-022" {
		t.Fatalf("delivered %d items (%v), complete %v: %s", len(ids), ids, r.env.Complete, r.raw)
	}
	if n := api.refusedCursors(); n > 0 {
		t.Fatalf("the upstream refused %d cursors airlock sent back", n)
	}
}

// TestSealedNextLink_UnderAnotherKeyIsAnExpiredContinuation: a replica
// whose key does not open the stored continuation answers as for an
// expired one (CURSOR_EXPIRED, restart) and sends the upstream nothing of
// it.
func TestSealedNextLink_UnderAnotherKeyIsAnExpiredContinuation(t *testing.T) {
	t.Parallel()
	api, base := newCursorAPI(t, cursorAPIKey, 23)
	h := newHarness(t, cursorAPIConfig(base), withEnv(cursorAPIEnv))
	args := map[string]any{"resource": "items", "max_pages": 1}
	r := h.call("search_all", args)
	if r.env.Continuation.Cursor == "" {
		t.Fatalf("no cursor: %s", r.raw)
	}
	api.mu.Lock()
	before := len(api.requests)
	api.mu.Unlock()
	replica(t, h, []byte("another replica's secret, not this one's: 0123456789"))
	args["cursor"] = r.env.Continuation.Cursor
	r = h.call("search_all", args)
	if r.env.Complete || !hasReasonCode(r.env, envelope.CursorExpired) || r.env.Continuation.Kind != envelope.ContinueRestart {
		t.Fatalf("want CURSOR_EXPIRED with a restart, got %s", r.raw)
	}
	api.mu.Lock()
	after := len(api.requests)
	api.mu.Unlock()
	if after != before || api.refusedCursors() > 0 {
		t.Fatalf("the upstream was called %d times with what did not open", after-before)
	}
}

// TestContinuationURLs_AreLoggedWithoutTheirQueryAtEveryLevel: while
// airlock follows next links whose cursor holds the key, and one page
// times out, nothing it logs at debug level (every request, the retry
// library's lines, the timed-out page's error) holds a query, the cursor
// or the key in any form; the path of each request is there.
func TestContinuationURLs_AreLoggedWithoutTheirQueryAtEveryLevel(t *testing.T) {
	t.Parallel()
	api, base := newCursorAPI(t, cursorAPIKey, 23)
	api.slow = 2
	h := newHarness(t, cursorAPIConfig(base), withEnv(cursorAPIEnv))
	r := h.call("search_all", map[string]any{"resource": "items"})
	if r.env.Complete {
		t.Fatalf("a page timed out, yet: %s", r.raw)
	}
	logs := h.logs.Bytes()
	if hits := leaktest.Hits(logs, cursorAPIKey); len(hits) > 0 {
		t.Fatalf("the logs reveal the key (%v):\n%s", hits, logs)
	}
	levels := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(logs), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("a log line is not JSON: %s", line)
		}
		if bytes.Contains(line, []byte("/v1/items?")) || bytes.Contains(line, []byte("cursor=")) || bytes.Contains(line, []byte(api.cursorOf(1)[:16])) {
			t.Fatalf("a logged URL kept its query: %s", line)
		}
		if bytes.Contains(line, []byte("/v1/items")) {
			levels[rec["level"].(string)]++
		}
	}
	if levels["DEBUG"] < 3 || levels["ERROR"] == 0 {
		t.Fatalf("the requests' path is logged %v times by level, want every request at DEBUG and the timeout at ERROR:\n%s", levels, logs)
	}
}
