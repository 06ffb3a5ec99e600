package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/configtest"
)

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

func TestMediaWikiErrorBehind200_QuotesItsWordsAsUpstreamMessage(t *testing.T) {
	_, base := startWiki(t, func(_ int, _ url.Values, w http.ResponseWriter) {
		io.WriteString(w, `{"error":{"code":"badvalue","info":"Unrecognized value for parameter \"apnamespace\": abc.","docref":"See /api.php for API usage."}}`)
	})
	rt := runtimeFor(t, wikiConfig(base,
		"resources:",
		"  pages:",
		"    upstream: wiki",
		"    list: {path: /api.php, params: {action: query, list: allpages, format: json}, items: query.allpages}",
		"    pagination: {dialect: cursor, next_cursor: continue.apcontinue, cursor_param: apcontinue, page_size_param: aplimit}",
		"    id_field: pageid",
		"    fields: {pageid: {type: integer}}",
	))
	se, out := scanError(t, rt.Resources["pages"])
	if se.Problem.Code != envelope.ProblemUpstreamErrorInSuccess {
		t.Fatalf("code = %s, want %s", se.Problem.Code, envelope.ProblemUpstreamErrorInSuccess)
	}
	if want := `Unrecognized value for parameter "apnamespace": abc.`; se.Problem.UpstreamMessage != want {
		t.Errorf("upstream_message = %q, want %q", se.Problem.UpstreamMessage, want)
	}
	if out.ScanComplete {
		t.Error("a scan that ended on an error claims to be complete")
	}
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
		doc, ver, found, err := r.Read(context.Background(), id, "t")
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
	if _, _, found, err := r.Read(context.Background(), "404", "t"); err != nil || found {
		t.Errorf("a page the answer says is missing: found %v, %v; want not found", found, err)
	}
}
