package read

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
)

// runtimeFor initializes a configuration whose credentials are the demo
// API's token, else "admin-token".
func runtimeFor(t *testing.T, yaml []byte) *upstream.Runtime {
	t.Helper()
	cfg, err := config.Parse(yaml)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultToken
		}
		return "admin-token"
	}})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// fakeDynamo is a peer that answers DynamoDB's Scan and GetItem over typed
// items, keyed by pk (S), in pk order. It names its operation by
// X-Amz-Target, as DynamoDB does, and fails the test on another. It does
// not evaluate FilterExpression (airlock re-checks every item); it keeps
// every request's body for the test to read. lastKey, when set, replaces
// the LastEvaluatedKey of its first answer (a malformed continuation).
type fakeDynamo struct {
	t       *testing.T
	items   []map[string]any
	lastKey string
	mu      sync.Mutex
	bodies  []map[string]any
	targets []string
}

func (f *fakeDynamo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	doc, err := jsonvalue.Decode(b)
	body, _ := doc.(map[string]any)
	if err != nil || body == nil {
		f.t.Errorf("a request body that is not a JSON object: %s", b)
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.targets = append(f.targets, target)
	first := len(f.bodies) == 1
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch target {
	case "DynamoDB_20120810.Scan":
		limit, _ := jsonvalue.Int(body["Limit"])
		start := ""
		if k, ok := body["ExclusiveStartKey"].(map[string]any); ok {
			start = k["pk"].(map[string]any)["S"].(string)
		}
		var page []any
		var last string
		for _, it := range f.items {
			pk := it["pk"].(map[string]any)["S"].(string)
			if pk <= start {
				continue
			}
			if len(page) == limit {
				break
			}
			page, last = append(page, it), pk
		}
		out := map[string]any{"Items": page, "Count": len(page), "ScannedCount": len(page)}
		if len(page) == limit && last != f.items[len(f.items)-1]["pk"].(map[string]any)["S"] {
			out["LastEvaluatedKey"] = map[string]any{"pk": map[string]any{"S": last}}
		}
		enc, _ := json.Marshal(out)
		if first && f.lastKey != "" {
			enc = []byte(fmt.Sprintf(`{"Items":[],"Count":0,"ScannedCount":%d,"LastEvaluatedKey":%s}`, limit, f.lastKey))
		}
		_, _ = w.Write(enc)
	case "DynamoDB_20120810.GetItem":
		want := body["Key"].(map[string]any)["pk"]
		for _, it := range f.items {
			if jsonvalue.Equal(it["pk"], want) {
				enc, _ := json.Marshal(map[string]any{"Item": it})
				_, _ = w.Write(enc)
				return
			}
		}
		_, _ = w.Write([]byte(`{}`))
	default:
		f.t.Errorf("an operation the list and the read do not name: %q", target)
		http.Error(w, "unknown operation", http.StatusBadRequest)
	}
}

// typedItem is one DynamoDB item as the API writes it.
func typedItem(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// dynamoResource is a resource over a fakeDynamo, described as the docs
// describe a DynamoDB table.
func dynamoResource(t *testing.T, f *fakeDynamo, pageSize int) *upstream.Resource {
	t.Helper()
	f.t = t
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	rt := runtimeFor(t, []byte(fmt.Sprintf(`environment: test
upstreams:
  ddb:
    base_url: %q
    retries: 0
    timeout: 5s
    json_media_types: [application/x-amz-json-1.0]
    headers: {X-Amz-Target: DynamoDB_20120810.Unset}
resources:
  accounts:
    upstream: ddb
    item_encoding: dynamodb
    list:
      path: /
      method: POST
      headers: {X-Amz-Target: DynamoDB_20120810.Scan}
      body: {TableName: accounts}
      items: Items
      expression: {param: FilterExpression, language: dynamodb}
    pagination: {dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: %d}
    get:
      method: POST
      path: /
      headers: {X-Amz-Target: DynamoDB_20120810.GetItem}
      body: {TableName: accounts, Key: {pk: "{{id}}"}, ConsistentRead: true}
      item: Item
      absent: not_found
    id_field: pk
    fields:
      pk: {type: string}
      status: {type: string}
      owner: {type: string, nullable: true}
      n: {type: integer}
      tags: {type: array, elements: string, set: SS}
    filters:
      status: {expression: status}
      owner: {expression: "o#w:n er \"x\""}
`, ts.URL, pageSize)))
	return rt.Resources["accounts"]
}

// TestDynamoDBRead_GoesOutAsGetItemWithTheIdTyped: a read by id goes out
// as GetItem with the id typed, and reads a set as a list.
func TestDynamoDBRead_GoesOutAsGetItemWithTheIdTyped(t *testing.T) {
	f := &fakeDynamo{}
	for i := range 7 {
		s := fmt.Sprintf(`{"pk":{"S":"acct#%02d"},"status":{"S":"active"},"n":{"N":"9007199254740993"},"tags":{"SS":["a","b"]}}`, i)
		switch i {
		case 2:
			s = fmt.Sprintf(`{"pk":{"S":"acct#%02d"},"status":{"S":"active"},"owner":{"NULL":true},"n":{"N":"1"}}`, i)
		case 3:
			s = fmt.Sprintf(`{"pk":{"S":"acct#%02d"},"status":{"S":"closed"},"owner":{"S":"ann"},"n":{"N":"2"}}`, i)
		}
		f.items = append(f.items, typedItem(t, s))
	}
	r := dynamoResource(t, f, 3)
	doc, _, found, err := Item(context.Background(), r, "acct#01", "t")
	if err != nil || !found {
		t.Fatalf("read: %v, found %v", err, found)
	}
	if tags, _ := jsonvalue.Canonical(doc["tags"]); string(tags) != `["a","b"]` {
		t.Errorf("tags read as %s; want the set's members", tags)
	}
	if tg := f.targets[len(f.targets)-1]; tg != "DynamoDB_20120810.GetItem" {
		t.Errorf("the read went out as %q", tg)
	}
	if k, _ := jsonvalue.Canonical(f.bodies[len(f.bodies)-1]["Key"]); string(k) != `{"pk":{"S":"acct#01"}}` {
		t.Errorf("the read's key %s; want the id typed", k)
	}
}

// wikiServer answers like MediaWiki's api.php: every request is one path,
// and what it asks is in its query (or, for a POST, its form).
type wikiServer struct {
	mu     sync.Mutex
	seen   []*http.Request
	bodies []string
	answer func(n int, q url.Values, w http.ResponseWriter)
}

func (ws *wikiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	ws.mu.Lock()
	ws.seen = append(ws.seen, r.Clone(context.Background()))
	ws.bodies = append(ws.bodies, string(b))
	n := len(ws.seen)
	ws.mu.Unlock()
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		form, _ := url.ParseQuery(string(b))
		for k, vs := range form {
			q[k] = append(q[k], vs...)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	ws.answer(n, q, w)
}

func (ws *wikiServer) requests() []*http.Request {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return append([]*http.Request(nil), ws.seen...)
}

func startWiki(t *testing.T, answer func(n int, q url.Values, w http.ResponseWriter)) (*wikiServer, string) {
	t.Helper()
	ws := &wikiServer{answer: answer}
	ts := httptest.NewServer(ws)
	t.Cleanup(ts.Close)
	return ws, ts.URL
}

// wikiConfig is a MediaWiki configuration: upstream, then the resource's
// lines (indented under it) and anything after.
func wikiConfig(baseURL string, lines ...string) []byte {
	return configtest.Lines(append([]string{
		"environment: test",
		"upstreams:",
		"  wiki:",
		fmt.Sprintf("    base_url: %q", baseURL),
		"    credential: {env: " + fixtures.DemoTokenEnv + "}",
		"    retries: 0",
	}, lines...)...)
}

func TestGetPathWithQuery_SendsTheIdAsOneQueryValue(t *testing.T) {
	ws, base := startWiki(t, func(_ int, q url.Values, w http.ResponseWriter) {
		id := q.Get("pageids")
		if id == "404" {
			fmt.Fprintf(w, `{"batchcomplete":true,"query":{"pages":[{"pageid":%s,"missing":true}]}}`, id)
			return
		}
		fmt.Fprintf(w, `{"batchcomplete":true,"query":{"pages":[{"pageid":%q,"title":"T","lastrevid":7}]}}`, id)
	})
	rt := runtimeFor(t, wikiConfig(base,
		"resources:",
		"  pages:",
		"    upstream: wiki",
		"    list: {path: /api.php, params: {action: query, list: allpages, format: json}, items: query.allpages}",
		"    pagination: {dialect: cursor, next_cursor: continue.apcontinue, cursor_param: apcontinue, page_size_param: aplimit}",
		"    get: {path: \"/api.php?action=query&prop=info|revisions&format=json&formatversion=2&pageids={{id}}\", item: query.pages.0, missing: missing}",
		"    id_field: pageid",
		"    version_field: lastrevid",
		"    fields: {pageid: {type: string}, title: {type: string}, lastrevid: {type: integer}}",
	))
	r := rt.Resources["pages"]
	for _, id := range []string{"12", "5&action=delete", "a b/c?d#e"} {
		doc, ver, found, err := Item(context.Background(), r, id, "t")
		if err != nil || !found {
			t.Fatalf("Read(%q) = found %v, %v", id, found, err)
		}
		if doc["pageid"] != id || ver != "7" {
			t.Errorf("Read(%q) = %v version %q, want the page %q at version 7", id, doc, ver, id)
		}
	}
	reqs := ws.requests()
	last := reqs[len(reqs)-1]
	if last.URL.Path != "/api.php" {
		t.Errorf("path = %q, want /api.php (the query is not part of the path)", last.URL.Path)
	}
	q := last.URL.Query()
	if q.Get("pageids") != "a b/c?d#e" || q.Get("action") != "query" || q.Get("prop") != "info|revisions" || len(q["action"]) != 1 {
		t.Errorf("query = %v, want the id as one pageids value beside the path's own parameters", q)
	}
	if strings.Contains(reqs[1].URL.RawQuery, "action=delete") {
		t.Errorf("an id's & was read as a parameter: %q", reqs[1].URL.RawQuery)
	}
	if _, _, found, err := Item(context.Background(), r, "404", "t"); err != nil || found {
		t.Errorf("a page the answer says is missing: found %v, %v; want not found", found, err)
	}
}
