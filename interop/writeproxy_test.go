package interop

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
)

// writeProxy stands between airlock and a real upstream, for write tests:
// it keeps the order of every request it saw, and its hooks can act as
// another writer at an exact point of airlock's work (after the upstream
// answered a request, before airlock reads the answer), change an answer,
// or answer a request itself without forwarding it (an API that ignores
// a write). No hook waits on time: each acts when the request it watches
// for arrives.
type writeProxy struct {
	URL string

	mu   sync.Mutex
	seen []proxied
	// intercept, when set, sees each request first; ok answers it with
	// status and body without forwarding it.
	intercept func(req proxied) (status int, body []byte, ok bool)
	// after, when set, sees each forwarded request once the upstream
	// answered it, and returns the answer airlock gets.
	after func(req proxied, status int, body []byte) (int, []byte)
}

// proxied is one request the proxy saw, in arrival order (seq).
type proxied struct {
	Seq       int
	Method    string
	Path      string // unescaped
	RawPath   string // as sent, escaped
	Query     url.Values
	Body      []byte
	Forwarded bool
}

// startWriteProxy serves a writeProxy in front of target (a base URL)
// until the test ends.
func startWriteProxy(t *testing.T, target string) *writeProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &writeProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		p.mu.Lock()
		req := proxied{Seq: len(p.seen), Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(), Query: r.URL.Query(), Body: body}
		intercept, after := p.intercept, p.after
		p.mu.Unlock()
		if intercept != nil {
			if status, answer, ok := intercept(req); ok {
				p.record(req)
				writeAnswer(w, status, http.Header{"Content-Type": {"application/json"}}, answer)
				return
			}
		}
		req.Forwarded = true
		p.record(req)
		out, err := http.NewRequestWithContext(r.Context(), r.Method, u.Scheme+"://"+u.Host+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, vs := range r.Header {
			if k != "Accept-Encoding" && k != "Host" {
				out.Header[k] = slices.Clone(vs)
			}
		}
		resp, err := http.DefaultClient.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		status, header := resp.StatusCode, resp.Header.Clone()
		if after != nil {
			status, answer = after(req, status, answer)
		}
		writeAnswer(w, status, header, answer)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *writeProxy) record(req proxied) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, req)
}

// writeAnswer passes an answer on; a 204 or 304 carries no body.
func writeAnswer(w http.ResponseWriter, status int, header http.Header, body []byte) {
	for k, vs := range header {
		switch k {
		case "Content-Length", "Content-Encoding", "Transfer-Encoding", "Connection":
			continue
		}
		w.Header()[k] = vs
	}
	if status == http.StatusNoContent || status == http.StatusNotModified {
		w.Header().Del("Content-Type")
		body = nil
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// set installs the hooks (nil removes them) and forgets what was seen.
func (p *writeProxy) set(intercept func(proxied) (int, []byte, bool), after func(proxied, int, []byte) (int, []byte)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.intercept, p.after, p.seen = intercept, after, nil
}

// requests is a copy of what the proxy saw since the hooks were set.
func (p *writeProxy) requests() []proxied {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}
