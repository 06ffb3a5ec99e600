package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/redact/leaktest"
	"github.com/airlock-mcp/airlock/review"
)

// echo is one way a hostile or careless upstream sends back the
// credential it received: respond answers the request with it, given the
// Authorization header's value.
type echo struct {
	name    string
	respond func(w http.ResponseWriter, r *http.Request, auth string)
}

func jsonAnswer(status int, body string, headers ...string) func(w http.ResponseWriter, r *http.Request, auth string) {
	return func(w http.ResponseWriter, _ *http.Request, auth string) {
		tok := strings.TrimPrefix(auth, "Bearer ")
		b := strings.NewReplacer("{AUTH}", auth, "{TOKEN}", tok,
			"{B64}", base64.StdEncoding.EncodeToString([]byte(tok)),
			"{B64URL}", base64.RawURLEncoding.EncodeToString([]byte(tok)),
			"{B64AUTH}", base64.StdEncoding.EncodeToString([]byte(auth)),
			"{BASIC}", base64.StdEncoding.EncodeToString([]byte("svc-user:"+tok)),
			"{QUERY}", url.QueryEscape(auth),
			"{PCT}", strings.ReplaceAll(url.PathEscape(tok), "-", "%2D"),
			"{DOTS}", strings.ReplaceAll(tok, "-", "."),
			"{SPACES}", strings.ReplaceAll(tok, "-", " "),
			"{UNDERSCORES}", strings.ReplaceAll(tok, "-", "_"),
			"{SLASHES}", strings.ReplaceAll(tok, "-", "/"),
			"{UNICODE}", strings.ReplaceAll(tok, "-", `\u002d`),
		).Replace(body)
		h := make([]string, len(headers))
		for i, v := range headers {
			h[i] = strings.ReplaceAll(strings.ReplaceAll(v, "{AUTH}", auth), "{TOKEN}", tok)
		}
		tooltest.Answer(w, status, "application/json", b, h...)
	}
}

// echoes are the failure answers that carry the credential: in field
// names (every error format airlock reads), error.param, nested
// documents, base64, URL-encoded, split at its punctuation, in body text,
// in an error behind a 200, in headers.
func echoes() []echo {
	return []echo{
		{"errors[].field raw", jsonAnswer(422, `{"errors":[{"field":"{TOKEN}","message":"invalid"}]}`)},
		{"errors[].field whole header", jsonAnswer(422, `{"errors":[{"field":"{AUTH}"}]}`)},
		{"errors[].pointer", jsonAnswer(422, `{"errors":[{"pointer":"/{TOKEN}"}]}`)},
		{"errors[].name", jsonAnswer(400, `{"errors":[{"name":"{TOKEN}"}]}`)},
		{"errors[].param", jsonAnswer(400, `{"errors":[{"param":"{AUTH}"}]}`)},
		{"invalid-params[].name", jsonAnswer(422, `{"type":"about:blank","invalid-params":[{"name":"{TOKEN}","reason":"bad"}]}`)},
		{"invalid_params[].name", jsonAnswer(422, `{"invalid_params":[{"name":"{AUTH}"}]}`)},
		{"error.param", jsonAnswer(400, `{"error":{"type":"invalid_request_error","param":"{TOKEN}","message":"No such parameter"}}`)},
		{"error.field", jsonAnswer(400, `{"error":{"field":"{AUTH}"}}`)},
		{"google fieldViolations", jsonAnswer(400, `{"error":{"code":400,"details":[{"fieldViolations":[{"field":"{TOKEN}","description":"{AUTH}"}]}]}}`)},
		{"kubernetes causes", jsonAnswer(422, `{"kind":"Status","details":{"causes":[{"field":"spec.{TOKEN}","message":"{AUTH}"}]}}`)},
		{"nested path", jsonAnswer(422, `{"errors":[{"field":"body.credentials.{TOKEN}.value"}]}`)},
		{"base64", jsonAnswer(422, `{"errors":[{"field":"{B64}"}]}`)},
		{"base64 url, no padding", jsonAnswer(422, `{"errors":[{"field":"{B64URL}"}]}`)},
		{"base64 of the header", jsonAnswer(422, `{"errors":[{"param":"{B64AUTH}"}]}`)},
		{"basic-style base64", jsonAnswer(400, `{"error":{"param":"Basic {BASIC}"}}`)},
		{"url query-encoded", jsonAnswer(422, `{"errors":[{"field":"{QUERY}"}]}`)},
		{"url percent-encoded", jsonAnswer(422, `{"errors":[{"field":"{PCT}"}]}`)},
		{"split by dots", jsonAnswer(422, `{"errors":[{"field":"{DOTS}"}]}`)},
		{"split by spaces", jsonAnswer(422, `{"errors":[{"field":"{SPACES}"}]}`)},
		{"split by underscores", jsonAnswer(422, `{"errors":[{"name":"{UNDERSCORES}"}]}`)},
		{"split by slashes", jsonAnswer(422, `{"errors":[{"pointer":"/{SLASHES}"}]}`)},
		{"json unicode escapes", jsonAnswer(422, `{"errors":[{"field":"{UNICODE}"}]}`)},
		{"body text", jsonAnswer(400, `{"error":{"message":"the token {AUTH} is not valid for {TOKEN}"},"detail":"{AUTH}"}`)},
		{"401 body", jsonAnswer(401, `{"error":"invalid_token","error_description":"{AUTH} expired"}`, "WWW-Authenticate", `Bearer error="{TOKEN}"`)},
		{"error behind a 200", jsonAnswer(200, `{"ok":false,"error":"{AUTH}","param":"{TOKEN}"}`)},
		{"errors hash", jsonAnswer(422, `{"errors":{"{TOKEN}":["is invalid"],"authorization":["{AUTH}"]}}`)},
		{"non-string field", jsonAnswer(422, `{"errors":[{"field":{"name":"{TOKEN}"},"param":["{AUTH}"]}]}`)},
		{"header echo", jsonAnswer(422, `{"errors":[{"field":"state"}]}`, "X-Echo-Authorization", "{AUTH}", "Location", "/v1/{TOKEN}")},
		{"content type", func(w http.ResponseWriter, _ *http.Request, auth string) {
			tooltest.Answer(w, 200, "text/x-"+strings.TrimPrefix(auth, "Bearer "), "<html>"+auth+"</html>")
		}},
		{"server error body", jsonAnswer(500, `{"error":"upstream {AUTH} failed","trace":"{B64AUTH}"}`)},
		{"rate limit body", jsonAnswer(429, `{"error":"quota for {TOKEN} exceeded"}`, "Retry-After", "1")},
	}
}

// hostile is an upstream that serves the demo API but answers marked
// requests with one of the echoes, and keeps what it sent.
type hostile struct {
	api    *fixtures.Server
	echoes []echo
	mark   func(r *http.Request) (int, bool)
	// once answers each echo to its first request only (later attempts,
	// such as a write retried after a rate limit, reach the demo API).
	once bool
	// auth is the credential as the request carried it, which the echoes
	// send back (nil: the Authorization header). When set, the demo API
	// behind is called with its own token.
	auth func(r *http.Request) string
	// secret is what every echo must hold ("" for canaryToken).
	secret string
	mu     sync.Mutex
	hits   map[int]int
	sent   map[int][]byte
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i, ok := h.mark(r)
	h.mu.Lock()
	done := h.once && h.hits[i] > 0
	h.mu.Unlock()
	auth := r.Header.Get("Authorization")
	if h.auth != nil {
		auth = h.auth(r)
		r.Header.Set("Authorization", "Bearer "+canaryToken)
	}
	if !ok || i < 0 || i >= len(h.echoes) || done {
		h.api.ServeHTTP(w, r)
		return
	}
	rec := &recorder{ResponseWriter: w}
	h.echoes[i].respond(rec, r, auth)
	h.mu.Lock()
	h.hits[i]++
	var hdr bytes.Buffer
	_ = w.Header().Write(&hdr)
	h.sent[i] = append(hdr.Bytes(), rec.body.Bytes()...)
	h.mu.Unlock()
}

type recorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// checkEchoed fails unless every echo reached airlock and really carried
// the credential (the check that finds nothing afterwards finds it here).
func (h *hostile) checkEchoed(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, e := range h.echoes {
		if h.hits[i] == 0 {
			t.Errorf("%s: the upstream never sent it", e.name)
			continue
		}
		secret := h.secret
		if secret == "" {
			secret = canaryToken
		}
		if len(leaktest.Hits(h.sent[i], secret)) == 0 {
			t.Errorf("%s: what the upstream sent does not hold the credential", e.name)
		}
	}
}

func newHostile(t *testing.T, once bool, mark func(r *http.Request) (int, bool)) (*hostile, string) {
	t.Helper()
	h := &hostile{api: newFixture(t), echoes: echoes(), mark: mark, once: once, hits: map[int]int{}, sent: map[int][]byte{}}
	_, url := tooltest.ServeScripted(t, func(_ int, w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
	return h, url
}

// exportLeaks exports a selection's manifest both ways and checks them.
func (h *harness) exportLeaks(selID any) {
	h.t.Helper()
	id, _ := selID.(string)
	if id == "" {
		return
	}
	sel, err := h.deps.Store.Selection(context.Background(), id)
	if err != nil {
		h.t.Fatalf("selection %s: %v", id, err)
	}
	for _, format := range []string{review.ExportCSV, review.ExportJSON} {
		var b bytes.Buffer
		if err := review.ExportManifest(context.Background(), h.deps.Store, sel, format, &b); err != nil {
			h.t.Fatal(err)
		}
		leaks(h.t, format+" export", b.Bytes())
	}
}

const echoOwner = "team-echo-"

// TestCanary_EchoedCredentialIsFoundNowhere: an upstream echoes the
// credential it received in every position seen in practice, on list
// reads (search_all and a previewed scope), single-item reads (a preview
// of named ids) and writes (a commit). The credential, in any readable
// form, is in no tool result, no log line (debug level), no store page or
// WAL frame, no audit line and no export. (The harness scans the logs,
// the audit file and the store when the test ends.)
func TestCanary_EchoedCredentialIsFoundNowhere(t *testing.T) {
	t.Parallel()
	n := len(echoes())
	t.Run("list", func(t *testing.T) {
		t.Parallel()
		up, url := newHostile(t, false, func(r *http.Request) (int, bool) {
			owner, ok := strings.CutPrefix(r.URL.Query().Get("owner"), echoOwner)
			i, err := strconv.Atoi(strings.TrimPrefix(owner, "p"))
			return i, ok && err == nil && r.URL.Path == "/v1/projects"
		})
		h := newHarness(t, demoAt(url, fastRetries...))
		for i := range n {
			h.call("search_all", map[string]any{"resource": "projects", "filter": map[string]any{"owner": echoOwner + strconv.Itoa(i)}})
			p := h.call("preview_selection", map[string]any{"resource": "projects", "filter": map[string]any{"owner": echoOwner + "p" + strconv.Itoa(i)},
				"action": map[string]any{"type": "archive"}})
			h.exportLeaks(p.data["selection_id"])
		}
		up.checkEchoed(t)
	})
	t.Run("get", func(t *testing.T) {
		t.Parallel()
		ids := map[string]int{}
		var list []any
		for i := range n {
			id := fmt.Sprintf("sa_%05d", 100+i)
			ids[id] = i
			list = append(list, id)
		}
		up, url := newHostile(t, false, func(r *http.Request) (int, bool) {
			id, ok := strings.CutPrefix(r.URL.Path, "/v1/service_accounts/")
			i, known := ids[id]
			return i, ok && known && r.Method == http.MethodGet
		})
		h := newHarness(t, demoAt(url, fastRetries...))
		for _, id := range list {
			p := h.call("preview_selection", explicitPreview(id))
			h.exportLeaks(p.data["selection_id"])
		}
		up.checkEchoed(t)
	})
	t.Run("write", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		ids := map[string]int{}
		up, url := newHostile(t, true, func(r *http.Request) (int, bool) {
			id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v1/service_accounts/"), "/owner")
			mu.Lock()
			i, known := ids[id]
			mu.Unlock()
			return i, ok && known && r.Method == http.MethodPut
		})
		h := newHarness(t, demoAt(url, append(fastRetries, fastReconcile...)...))
		free := ownerlessVisible(h, n)
		if len(free) < n {
			t.Fatalf("the demo data has %d ownerless accounts, want %d", len(free), n)
		}
		for i, id := range free {
			mu.Lock()
			ids[id.(string)] = i
			mu.Unlock()
			p := h.call("preview_selection", explicitPreview(id))
			if p.data["committable"] != true {
				t.Fatalf("%s: the preview is not committable: %s", id, p.raw)
			}
			c := h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"],
				"action": assignOwner, "mode": "execute"})
			if opID := c.data["operation_id"]; opID != nil {
				op := h.operation(opID)
				raw, _ := json.Marshal(op.data)
				leaks(t, "get_operation", raw)
			}
			h.exportLeaks(p.data["selection_id"])
		}
		up.checkEchoed(t)
	})
	t.Logf("%d echo variants on list, get and write failures (%d in all): no trace of the credential found", n, 3*n)
}

// TestCanary_KeyInsideEncodedCursorsIsFoundNowhere: an API takes its key
// in the query and hands out next links whose cursor is base64 of the
// request's own query, the key percent-escaped in it, escaped again in
// the link; its items carry their page's link, that cursor and base64 of
// a document holding it (base64 inside base64). Read through several
// pages, a cursor resumed on another replica, a delivery paged by
// max_items and a page that times out, the key is in no tool result, log
// line (debug level) or store page, in any form leaktest reads. (The
// harness checks every result, the logs and the store files.)
func TestCanary_KeyInsideEncodedCursorsIsFoundNowhere(t *testing.T) {
	t.Parallel()
	api, base := tooltest.NewCursorAPI(t, tooltest.CursorAPIKey, 42)
	api.Echo = true
	fields := "      self: {type: string}\n      cursor: {type: string}\n      token: {type: string}\n"
	h := newHarness(t, cursorAPIConfig(base, fields), withEnv(tooltest.CursorAPIEnv))
	// What the API sends holds the key in each of those containers.
	for _, c := range []string{api.CursorOf(1), url.QueryEscape(api.CursorOf(1)), base64.StdEncoding.EncodeToString([]byte(`{"c":"` + api.CursorOf(1) + `"}`))} {
		if len(leaktest.Hits([]byte(c), tooltest.CursorAPIKey)) == 0 {
			t.Fatalf("the check cannot see the key in %s", c)
		}
	}
	args := map[string]any{"resource": "items", "max_pages": 3, "max_items": 4}
	r := h.call("search_all", args)
	seen := len(r.ids())
	for call := 1; r.env.Continuation.Cursor != ""; call++ {
		if call == 2 {
			replica(t, h, nil)
		}
		args["cursor"] = r.env.Continuation.Cursor
		r = h.call("search_all", args)
		seen += len(r.ids())
		h.storeLeaks(tooltest.CursorAPIKey)
	}
	if !r.env.Complete || seen != 42 || api.RefusedCursors() > 0 {
		t.Fatalf("delivered %d of 42 (refused cursors: %d): %s", seen, api.RefusedCursors(), r.raw)
	}
	// A page that times out logs its request at error level.
	api.Slow = 3
	if r := h.call("search_all", map[string]any{"resource": "items", "fields": []any{"id", "self", "token"}}); r.env.Complete {
		t.Fatalf("a page timed out, yet: %s", r.raw)
	}
	h.storeLeaks(tooltest.CursorAPIKey)
}
