package tools

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

// browser is an HTTP client with cookies, as a browser on the page would be.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar}}
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	leaks(b.t, "the review page", body)
	return resp.StatusCode, string(body)
}

// post submits the decision form as JSON-accepting code would, so that a
// refusal comes back as a problem document.
func (b *browser) post(path string, form url.Values, origin string) (int, *envelope.Problem, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/problem+json, text/html")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		recordProblems([]byte(`{"problem":` + string(body) + `}`))
		var p envelope.Problem
		if err := json.Unmarshal(body, &p); err != nil {
			b.t.Fatal(err)
		}
		return resp.StatusCode, &p, ""
	}
	return resp.StatusCode, nil, string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) form(selID string) url.Values {
	b.t.Helper()
	code, page := b.get("/review/selections/" + selID)
	m := csrfField.FindStringSubmatch(page)
	if code != 200 || m == nil {
		b.t.Fatalf("the selection page has no decision form (%d):\n%s", code, page)
	}
	return url.Values{"csrf": {m[1]}}
}

func TestReviewPage_ShowsWhatTheApprovalNeeds(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewServer(NewReviewHandler(h.deps, ReviewOptions{}))
	t.Cleanup(srv.Close)
	p := h.call("preview_selection", seedPreview(nil))
	selID := p.data["selection_id"].(string)
	b := newBrowser(t, srv.URL)

	code, index := b.get("/review/")
	if code != 200 || !strings.Contains(index, selID) || !strings.Contains(index, "awaiting a decision") {
		t.Fatalf("index (%d):\n%s", code, index)
	}
	_, page := b.get("/review/selections/" + selID)
	for _, want := range []string{
		`pause_collection on <span id="members">131</span> subscriptions in <span id="environment">demo</span>`,
		p.data["digest"].(string), `{&#34;reason&#34;:&#34;approved credit hold review&#34;}`,
		"collection_paused", "legal hold", "disputed invoices stay", "NO_SNAPSHOT",
		"cannot be undone: the customer is emailed that collection is paused", `region &#34;eu&#34; never approved before`,
		"By region", `id="next-page"`, `name="acknowledge"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if rows := strings.Count(page, "<tr><td>sub_"); rows != manifestPage {
		t.Errorf("%d manifest rows on the first page, want %d", rows, manifestPage)
	}
	// Paging through the manifest reaches every member exactly once.
	seen := map[string]bool{}
	next := "/review/selections/" + selID
	rowID := regexp.MustCompile(`<tr><td>(sub_[0-9]+)</td>`)
	nextLink := regexp.MustCompile(`id="next-page" href="([^"]+)"`)
	for next != "" {
		_, pg := b.get(strings.ReplaceAll(next, "&amp;", "&"))
		for _, m := range rowID.FindAllStringSubmatch(pg, -1) {
			if seen[m[1]] {
				t.Fatalf("%s twice", m[1])
			}
			seen[m[1]] = true
		}
		next = ""
		if m := nextLink.FindStringSubmatch(pg); m != nil {
			next = m[1]
		}
	}
	if len(seen) != 131 {
		t.Fatalf("paged through %d members, want 131", len(seen))
	}

	// The exports hold every member, and only members.
	_, csvBody := b.get("/review/selections/" + selID + "/manifest.csv")
	rows, err := csv.NewReader(strings.NewReader(csvBody)).ReadAll()
	if err != nil || len(rows) != 132 || rows[0][0] != "id" || !contains(rows[0], "before.collection_paused") {
		t.Fatalf("csv: %d rows, header %v, err %v", len(rows), rows[0], err)
	}
	for _, r := range rows[1:] {
		if !seen[r[0]] {
			t.Fatalf("csv row %s is not a member", r[0])
		}
	}
	_, jsonBody := b.get("/review/selections/" + selID + "/manifest.json")
	var doc struct {
		Digest  string `json:"digest"`
		Members []struct {
			ID string `json:"id"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(jsonBody), &doc); err != nil || len(doc.Members) != 131 || doc.Digest != p.data["digest"] {
		t.Fatalf("json export: %v, %d members", err, len(doc.Members))
	}
}

func TestReviewPage_DecisionsAndTheirRefusals(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewServer(NewReviewHandler(h.deps, ReviewOptions{}))
	t.Cleanup(srv.Close)
	p := h.call("preview_selection", seedPreview(nil))
	selID, digest := p.data["selection_id"].(string), p.data["digest"].(string)
	path := "/review/selections/" + selID + "/decision"
	b := newBrowser(t, srv.URL)
	form := b.form(selID)

	// A form posted from elsewhere: no token, a token of another session,
	// or another origin.
	stranger := newBrowser(t, srv.URL)
	if _, pr, _ := stranger.post(path, url.Values{"decision": {"approve"}, "name": {"Mallory"}, "digest": {digest}}, ""); pr == nil || pr.Code != envelope.ProblemReviewFormInvalid {
		t.Fatalf("no token: %+v", pr)
	}
	stolen := url.Values{"csrf": form["csrf"], "decision": {"approve"}, "name": {"Mallory"}, "digest": {digest}, "acknowledge": {"yes"}}
	if _, pr, _ := stranger.post(path, stolen, ""); pr == nil || pr.Code != envelope.ProblemReviewFormInvalid {
		t.Fatalf("another session's token: %+v", pr)
	}
	withOrigin := url.Values{"csrf": form["csrf"], "decision": {"approve"}, "name": {"Ada"}, "digest": {digest}, "acknowledge": {"yes"}}
	if _, pr, _ := b.post(path, withOrigin, "https://evil.example"); pr == nil || pr.Code != envelope.ProblemReviewFormInvalid {
		t.Fatalf("foreign origin: %+v", pr)
	}
	// Every missing field is named.
	_, pr, _ := b.post(path, url.Values{"csrf": form["csrf"], "decision": {"approve"}}, srv.URL)
	if pr == nil || pr.Code != envelope.ProblemInvalidArguments || len(pr.Errors) != 3 {
		t.Fatalf("missing fields: %+v", pr)
	}
	if _, pr, _ := b.post(path, url.Values{"csrf": form["csrf"], "decision": {"approve"}, "name": {"Ada"}, "digest": {"sha256:0"}, "acknowledge": {"yes"}}, srv.URL); pr == nil || pr.Code != envelope.ProblemDigestMismatch {
		t.Fatalf("wrong digest: %+v", pr)
	}
	if aps := h.approvals(selID); len(aps) != 0 {
		t.Fatalf("refused forms recorded %d decisions", len(aps))
	}

	code, _, page := b.post(path, withOrigin, srv.URL)
	if code != 200 || !strings.Contains(page, `id="decided"`) || !strings.Contains(page, "approved by review page: Ada from 127.0.0.1") {
		t.Fatalf("approve (%d):\n%s", code, page)
	}
	if _, pr, _ := b.post(path, withOrigin, srv.URL); pr == nil || pr.Code != envelope.ProblemApprovalDecided {
		t.Fatalf("approving twice: %+v", pr)
	}
	aps := h.approvals(selID)
	if len(aps) != 1 || aps[0].Channel != selection.ChannelReviewPage || len(aps[0].Acknowledgements) == 0 {
		t.Fatalf("approval records %+v", aps)
	}
	// The agent's commit goes through without asking the client.
	c := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if c.env.Problem != nil || len(h.answer.asked()) != 0 {
		t.Fatalf("commit after the page approved: %s", c.raw)
	}
	if got := h.operation(c.data["operation_id"]); got.data["status"] != selection.OpCompleted {
		t.Fatalf("operation %s", got.raw)
	}

	// Another selection, rejected on the page: the commit is refused.
	q := h.call("preview_selection", map[string]any{"resource": "projects", "ids": []any{"proj_0004"}, "action": archive})
	form = b.form(q.data["selection_id"].(string))
	if code, _, _ := b.post("/review/selections/"+q.data["selection_id"].(string)+"/decision",
		url.Values{"csrf": form["csrf"], "decision": {"reject"}, "name": {"Ada"}, "digest": {q.data["digest"].(string)}}, srv.URL); code != 200 {
		t.Fatalf("reject: %d", code)
	}
	r := h.call("commit_bulk_action", map[string]any{"selection_id": q.data["selection_id"], "expected_digest": q.data["digest"], "action": archive, "mode": "execute"})
	if problemCode(r) != envelope.ProblemApprovalRejected || !strings.Contains(r.env.Problem.Detail, "Ada") {
		t.Fatalf("commit of a rejected selection: %s", r.raw)
	}
	if code, _ := b.get("/review/selections/sel_nope"); code != http.StatusNotFound {
		t.Fatalf("unknown selection: %d", code)
	}
}

func TestReviewPage_Access(t *testing.T) {
	h := newHarness(t)
	open := NewReviewHandler(h.deps, ReviewOptions{})
	do := func(hd http.Handler, remote, host, target string, hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.RemoteAddr, req.Host = remote, host
		req.Header.Set("Accept", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		hd.ServeHTTP(w, req)
		if strings.HasPrefix(w.Header().Get("Content-Type"), "application/problem+json") {
			recordProblems([]byte(`{"problem":` + w.Body.String() + `}`))
		}
		return w
	}
	for _, c := range []struct {
		name, remote, host string
		want               int
	}{
		{"loopback", "127.0.0.1:5000", "127.0.0.1:8766", 200},
		{"localhost", "[::1]:5000", "localhost:8766", 200},
		{"another machine", "10.1.2.3:5000", "127.0.0.1:8766", 403},
		{"DNS rebinding", "127.0.0.1:5000", "evil.example:8766", 403},
	} {
		w := do(open, c.remote, c.host, "/review/", nil)
		if w.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, w.Code, c.want)
		}
		if w.Header().Get("X-Frame-Options") != "DENY" || !strings.Contains(w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: the page may be framed", c.name)
		}
	}
	if w := do(open, "10.1.2.3:5000", "airlock.internal", "/review/", nil); !strings.Contains(w.Body.String(), envelope.ProblemReviewAccessDenied) {
		t.Fatalf("denied body: %s", w.Body)
	}

	// With a token, any address may use the page: the token once in the
	// address, then a cookie.
	tok := NewReviewHandler(h.deps, ReviewOptions{Token: "review-secret"})
	if w := do(tok, "10.1.2.3:5000", "airlock.internal", "/review/", nil); w.Code != 403 {
		t.Fatalf("no token: %d", w.Code)
	}
	w := do(tok, "10.1.2.3:5000", "airlock.internal", "/review/?token=review-secret", nil)
	cookie := w.Header().Get("Set-Cookie")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/review/" || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("token exchange: %d %v", w.Code, w.Header())
	}
	if w := do(tok, "10.1.2.3:5000", "airlock.internal", "/review/", map[string]string{"Cookie": strings.Split(cookie, ";")[0]}); w.Code != 200 {
		t.Fatalf("with the cookie: %d", w.Code)
	}
	if w := do(tok, "10.1.2.3:5000", "airlock.internal", "/review/", map[string]string{"Authorization": "Bearer review-secret"}); w.Code != 200 {
		t.Fatalf("with a bearer: %d", w.Code)
	}

	// Mounted on the MCP HTTP server behind its bearer token, the page
	// keeps its own check: a browser cannot send a bearer header.
	srv, err := NewServer(h.deps)
	if err != nil {
		t.Fatal(err)
	}
	mounted := NewHTTPHandler(srv, HTTPOptions{Token: "review-secret", Extra: map[string]http.Handler{"/review/": tok}})
	if w := do(mounted, "10.1.2.3:5000", "airlock.internal", "/review/?token=review-secret", nil); w.Code != http.StatusSeeOther {
		t.Fatalf("mounted, token exchange: %d %s", w.Code, w.Body)
	}
	if w := do(mounted, "10.1.2.3:5000", "airlock.internal", "/mcp", nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("mounted: /mcp without a bearer: %d", w.Code)
	}
}
