package upstream

// The fake upstream and the client helpers the tests of package transport
// have too: tests here read through a runtime (Initialize), not one client.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// testSecret is the credential the client tests configure. No test output,
// log line or error may contain it.
const testSecret = "s3cr3t-Zq8wX1-never-log-me"

// seen is one request as an upstream saw it.
type seen struct {
	At     time.Time // recorded by the server, not by the client
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// recorder is a fake upstream that records every request and answers with
// the response function of its test. It is safe for concurrent use.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
	// respond writes the answer to the n-th request (from 1).
	respond func(n int, w http.ResponseWriter, r *http.Request)
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, seen{At: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	n := len(rec.reqs)
	rec.mu.Unlock()
	if rec.respond == nil {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
		return
	}
	rec.respond(n, w, r)
}

func (rec *recorder) requests() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.reqs...)
}

// startRecorder serves rec on an ephemeral port for the test's lifetime.
func startRecorder(t *testing.T, rec *recorder) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	return ts
}

func testGetenv(k string) string {
	if k == "TEST_TOKEN" {
		return testSecret
	}
	return ""
}

// newTestClient initializes the configuration and returns its upstream "api".
func newTestClient(t *testing.T, baseURL, extra string, opts Options) *transport.Client {
	t.Helper()
	cfg, err := config.Parse(configtest.OneUpstream(baseURL, extra))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if opts.Getenv == nil {
		opts.Getenv = testGetenv
	}
	rt, err := Initialize(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return rt.Upstreams["api"]
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func get(t *testing.T, c *transport.Client, base string) (*transport.Response, error) {
	t.Helper()
	return c.Do(context.Background(), transport.Request{Method: http.MethodGet, URL: mustURL(t, base+"/items"), Idempotent: true})
}
