package upstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// fakeLogin is MediaWiki's login and token dance: a login token bound to
// a session cookie, action=login with the bot password, a CSRF token per
// session, and assertuserfailed once the server forgot the session.
type fakeLogin struct {
	mu       sync.Mutex
	sessions map[string]string // cookie -> "login-token" or "user"
	csrf     map[string]string // cookie -> csrf token
	logins   atomic.Int64
	edits    []url.Values
}

func newFakeLogin() *fakeLogin {
	return &fakeLogin{sessions: map[string]string{}, csrf: map[string]string{}}
}

func randHex() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// forget ends every session, as a server whose session store was cleared.
func (f *fakeLogin) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions, f.csrf = map[string]string{}, map[string]string{}
}

func (f *fakeLogin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(b))
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	var sid string
	if c, err := r.Cookie("wiki_session"); err == nil {
		sid = c.Value
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	state := f.sessions[sid]
	switch {
	case q.Get("meta") == "tokens" && q.Get("type") == "login":
		sid = randHex()
		f.sessions[sid] = "login-token:" + randHex() + "+\\"
		http.SetCookie(w, &http.Cookie{Name: "wiki_session", Value: sid, Path: "/"})
		http.SetCookie(w, &http.Cookie{Name: "wikiUserID", Value: "2", Path: "/"})
		fmt.Fprintf(w, `{"batchcomplete":true,"query":{"tokens":{"logintoken":%q}}}`, strings.TrimPrefix(f.sessions[sid], "login-token:"))
	case form.Get("action") == "login":
		f.logins.Add(1)
		if !strings.HasPrefix(state, "login-token:") || form.Get("lgtoken") != strings.TrimPrefix(state, "login-token:") {
			io.WriteString(w, `{"login":{"result":"Failed","reason":"Unable to continue login. Your session most likely timed out."}}`)
			return
		}
		if form.Get("lgname") != "Bot@airlock" || form.Get("lgpassword") != "s3cret-bot-password-0123456789" {
			io.WriteString(w, `{"login":{"result":"Failed","reason":"Incorrect username or password entered."}}`)
			return
		}
		f.sessions[sid] = "user"
		io.WriteString(w, `{"login":{"result":"Success","lguserid":2,"lgusername":"Bot"}}`)
	case q.Get("meta") == "tokens":
		tok := "+\\"
		if state == "user" {
			tok = randHex() + "+\\"
			f.csrf[sid] = tok
		}
		fmt.Fprintf(w, `{"batchcomplete":true,"query":{"tokens":{"csrftoken":%q}}}`, tok)
	case r.Method == http.MethodPost && q.Get("action") == "edit":
		switch {
		case state != "user":
			io.WriteString(w, `{"error":{"code":"assertuserfailed","info":"You are no longer logged in, so the action could not be completed."}}`)
		case form.Get("token") != f.csrf[sid] || !strings.HasSuffix(string(b), "token="+url.QueryEscape(f.csrf[sid])):
			io.WriteString(w, `{"error":{"code":"badtoken","info":"Invalid CSRF token."}}`)
		default:
			f.edits = append(f.edits, form)
			io.WriteString(w, `{"edit":{"result":"Success","pageid":1,"newrevid":9}}`)
		}
	default:
		if state != "user" {
			io.WriteString(w, `{"error":{"code":"assertuserfailed","info":"You are no longer logged in."}}`)
			return
		}
		io.WriteString(w, `{"batchcomplete":true,"query":{"allpages":[{"pageid":1,"title":"A"}]}}`)
	}
}

const sessionCredential = `    credential:
      session:
        secrets: {password: {env: WIKI_BOT_PASSWORD}}
        steps:
          - {name: login_token, method: GET, path: "/api.php?action=query&meta=tokens&type=login&format=json", capture: {token: query.tokens.logintoken}}
          - name: login
            method: POST
            path: /api.php
            form: {action: login, format: json, lgname: "${WIKI_BOT_USER}", lgpassword: "{{secrets.password}}", lgtoken: "{{login_token.token}}"}
            success: {path: login.result, equals: Success}
        csrf: {method: GET, path: "/api.php?action=query&meta=tokens&format=json", capture: {token: query.tokens.csrftoken}}
        csrf_field: token
        expired: {path: error.code, values: [assertuserfailed, badtoken]}`

func sessionRuntime(t *testing.T, base string) *Runtime {
	t.Helper()
	y := configtest.Lines(
		"environment: test",
		"upstreams:",
		"  wiki:",
		fmt.Sprintf("    base_url: %q", base),
		"    retries: 0",
		sessionCredential,
		"resources:",
		"  pages:",
		"    upstream: wiki",
		"    list: {path: /api.php, params: {action: query, list: allpages, assert: user, format: json}, items: query.allpages}",
		"    pagination: {dialect: continue_object, page_size_param: aplimit}",
		"    id_field: pageid",
		"    fields: {pageid: {type: integer}, title: {type: string}}",
	)
	return runtimeWith(t, y, func(k string) string {
		return map[string]string{"WIKI_BOT_PASSWORD": "s3cret-bot-password-0123456789", "WIKI_BOT_USER": "Bot@airlock"}[k]
	})
}

func TestSessionCredential_OneLoginForConcurrentReads_RenewedWhenTheAPISaysItEnded(t *testing.T) {
	f := newFakeLogin()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	rt := sessionRuntime(t, ts.URL)
	cl := rt.Upstreams["wiki"]
	read := func() error {
		u, _ := url.Parse(ts.URL + "/api.php?action=query&list=allpages&assert=user&format=json")
		_, err := cl.Do(context.Background(), transport.Request{Method: http.MethodGet, URL: u, Idempotent: true})
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- read() }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a read under the session failed: %v", err)
		}
	}
	if n := f.logins.Load(); n != 1 {
		t.Errorf("%d logins for 8 concurrent reads, want 1 shared", n)
	}
	f.forget()
	if err := read(); err != nil {
		t.Fatalf("a read after the server forgot the session: %v (want a new login and the read again)", err)
	}
	if n := f.logins.Load(); n != 2 {
		t.Errorf("%d logins, want 2 (the session was renewed once)", n)
	}
	// What the login handed out is redacted everywhere.
	red := rt.Redactor
	for _, secret := range []string{"s3cret-bot-password-0123456789"} {
		if got := red.String("x " + secret + " y"); strings.Contains(got, secret) {
			t.Errorf("the redactor left %q", secret)
		}
	}
	f.mu.Lock()
	var sid, csrf string
	for k := range f.sessions {
		sid = k
	}
	f.mu.Unlock()
	if got := red.String("cookie " + sid); strings.Contains(got, sid) {
		t.Error("the session cookie's value is not redacted")
	}
	if got := red.String("user 2 wikiUserID"); got != "user 2 wikiUserID" {
		t.Errorf("a short cookie value was taken for a secret: %q", got)
	}
	_ = csrf
}

func TestSessionCredential_WritesCarryTheCSRFTokenLastInTheirForm(t *testing.T) {
	f := newFakeLogin()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	rt := sessionRuntime(t, ts.URL)
	cl := rt.Upstreams["wiki"]
	write := func() (*transport.Response, error) {
		u, _ := url.Parse(ts.URL + "/api.php?action=edit&format=json&pageid=1")
		return cl.Do(context.Background(), transport.Request{Method: http.MethodPost, URL: u, Body: []byte("text=new+text&summary=bot"),
			Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Repeatable: true})
	}
	resp, err := write()
	if err != nil || !strings.Contains(string(resp.Body), `"Success"`) {
		t.Fatalf("edit = %v, %v", err, resp)
	}
	if len(f.edits) != 1 || f.edits[0].Get("text") != "new text" {
		t.Fatalf("edits = %v", f.edits)
	}
	// The server forgets the session: the write answered badtoken or
	// assertuserfailed is a refused login; a repeatable write is sent
	// again after a new login and a new CSRF token.
	f.forget()
	resp, err = write()
	if err != nil || !strings.Contains(string(resp.Body), `"Success"`) || len(f.edits) != 2 || f.logins.Load() != 2 {
		t.Fatalf("edit after the session ended = %v, %d edits, %d logins; want it renewed and sent again", err, len(f.edits), f.logins.Load())
	}
	// A write that repeating could apply twice is not sent again: its
	// refusal is its answer.
	f.forget()
	u, _ := url.Parse(ts.URL + "/api.php?action=edit&format=json&pageid=1")
	_, err = cl.Do(context.Background(), transport.Request{Method: http.MethodPost, URL: u, Body: []byte("appendtext=x"), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
	var he *transport.HTTPError
	if !errorsAs(err, &he) || he.Status != http.StatusUnauthorized || !he.NotRepeated || len(f.edits) != 2 {
		t.Errorf("a non-repeatable write after the session ended: %v (%d edits), want a 401 refusal not sent again", err, len(f.edits))
	}
	if p := transport.ProblemFor(err, nil); p.Code != envelope.ProblemUpstreamAuth || p.UpstreamMessage == "" {
		t.Errorf("problem = %s %q, want UPSTREAM_UNAUTHORIZED quoting the API", p.Code, p.UpstreamMessage)
	}
}

func TestSessionCredential_ARefusedLoginSendsNothingAndSaysWhy(t *testing.T) {
	f := newFakeLogin()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	y := configtest.Lines("environment: test", "upstreams:", "  wiki:", fmt.Sprintf("    base_url: %q", ts.URL), "    retries: 0", sessionCredential,
		"resources:", "  pages:", "    upstream: wiki", "    list: {path: /api.php, params: {action: query, list: allpages}, items: query.allpages}",
		"    pagination: {dialect: continue_object, page_size_param: aplimit}", "    id_field: pageid", "    fields: {pageid: {type: integer}}")
	rt := runtimeWith(t, y, func(k string) string {
		return map[string]string{"WIKI_BOT_PASSWORD": "wrong-password-0123456789", "WIKI_BOT_USER": "Bot@airlock"}[k]
	})
	se, _ := scanError(t, rt.Resources["pages"])
	if se.Problem.Code != envelope.ProblemTokenClientRejected || !strings.Contains(se.Problem.Detail, "login") {
		t.Errorf("problem = %s %q, want the login's refusal", se.Problem.Code, se.Problem.Detail)
	}
}

func errorsAs(err error, he **transport.HTTPError) bool {
	e, ok := err.(*transport.HTTPError)
	if ok {
		*he = e
	}
	return ok
}

// TestSessionCredential_ALoginFieldFromTheEnvironmentIsRedacted: a value a
// login step takes from ${VAR} (a password written in the form rather
// than under secrets) is redacted wherever airlock would quote it, as the
// declared secrets are.
func TestSessionCredential_ALoginFieldFromTheEnvironmentIsRedacted(t *testing.T) {
	const password = "env-password-9f8e7d6c5b4a"
	y := strings.Replace(sessionCredential, `lgpassword: "{{secrets.password}}"`, `lgpassword: "${WIKI_FORM_PASSWORD}"`, 1)
	cfg, err := config.Parse(configtest.Lines("environment: test", "upstreams:", "  wiki:", "    base_url: http://127.0.0.1:9", y,
		"resources:", "  pages:", "    upstream: wiki", "    list: {path: /api.php, params: {action: query, list: allpages}, items: query.allpages}",
		"    pagination: {dialect: continue_object, page_size_param: aplimit}", "    id_field: pageid", "    fields: {pageid: {type: integer}}"))
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	env := map[string]string{"WIKI_BOT_PASSWORD": "s3cret-bot-password-0123456789", "WIKI_BOT_USER": "Bot@airlock", "WIKI_FORM_PASSWORD": password}
	if _, err := Initialize(t.Context(), cfg, Options{Getenv: func(k string) string { return env[k] }, Redactor: red}); err != nil {
		t.Fatal(err)
	}
	for _, quoted := range []string{`{"error":"bad password ` + password + `"}`, "lgpassword=" + url.QueryEscape(password)} {
		if got := red.String(quoted); strings.Contains(got, password) {
			t.Errorf("%q is quoted as %q: the login's password is not redacted", quoted, got)
		}
	}
}
