package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/internal/memnet"
	"github.com/airlock-mcp/airlock/internal/refused"
	"github.com/airlock-mcp/airlock/redact"
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

// bubble runs f in a testing/synctest bubble, where time moves only when
// every goroutine waits: backoffs, Retry-After waits, timeouts and the
// fake upstreams' delays take none of the wall clock. Its upstreams are
// served in memory, on n (memClient).
func bubble(t *testing.T, f func(t *testing.T, n *memnet.Network)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) { f(t, &memnet.Network{}) })
}

// memClient serves h on n and returns the client of it ("api", with
// extra) and its base URL.
func memClient(t *testing.T, n *memnet.Network, h http.Handler, extra string, opts Options) (*Client, string) {
	t.Helper()
	base := n.Serve(t, h)
	opts.DialContext = n.DialContext
	return newTestClient(t, base, extra, opts), base
}

// statusThen answers the listed statuses to the first requests (with the
// given headers) and 200 with a small JSON body afterwards.
func statusThen(h http.Header, statuses ...int) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		for k, vs := range h {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json")
		if n <= len(statuses) {
			w.WriteHeader(statuses[n-1])
			fmt.Fprintf(w, `{"error":%q}`, http.StatusText(statuses[n-1]))
			return
		}
		fmt.Fprint(w, `{"ok":true}`)
	}
}

func testGetenv(k string) string {
	if k == "TEST_TOKEN" {
		return testSecret
	}
	return ""
}

// newTestClient initializes the configuration and returns its upstream "api".
func newTestClient(t *testing.T, baseURL, extra string, opts Options) *Client {
	t.Helper()
	cfg, err := config.Parse(configtest.OneUpstream(baseURL, extra))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if opts.Getenv == nil {
		opts.Getenv = testGetenv
	}
	c, err := newClient("api", cfg.Upstreams["api"], opts)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// newClient builds the client of uc with the defaults package upstream's
// Initialize fills in: a discarding logger, the environment, the wall
// clock, a new redactor, and the logger redacting through it.
func newClient(name string, uc *config.UpstreamConfig, opts Options) (*Client, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New()
	}
	opts.Logger = slog.New(opts.Redactor.Handler(opts.Logger.Handler()))
	return New(name, uc, opts)
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func asHTTPError(t *testing.T, err error) *HTTPError {
	t.Helper()
	var he *HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("error = %v (%T), want *HTTPError", err, err)
	}
	return he
}

func TestRetryPolicy_NeverRetriesNonIdempotentWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		status int
		header http.Header
	}{
		{"post 503", http.MethodPost, http.StatusServiceUnavailable, nil},
		{"post 503 with short retry-after", http.MethodPost, http.StatusServiceUnavailable, http.Header{"Retry-After": {"1"}}},
		{"post 429 with short retry-after", http.MethodPost, http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}},
		{"post 500", http.MethodPost, http.StatusInternalServerError, nil},
		{"post 502", http.MethodPost, http.StatusBadGateway, nil},
		{"patch 504", http.MethodPatch, http.StatusGatewayTimeout, nil},
		{"delete 503", http.MethodDelete, http.StatusServiceUnavailable, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{respond: statusThen(tc.header, tc.status, tc.status, tc.status)}
			ts := startRecorder(t, rec)
			c := newTestClient(t, ts.URL, "retries: 3", Options{})

			_, err := c.Do(context.Background(), Request{Method: tc.method, URL: mustURL(t, ts.URL+"/items"), Body: []byte(`{"a":1}`), Idempotent: false})
			he := asHTTPError(t, err)
			if he.Kind != FailStatus || he.Status != tc.status {
				t.Errorf("error = kind %d status %d, want FailStatus %d", he.Kind, he.Status, tc.status)
			}
			if !he.Sent {
				t.Error("Sent = false for a request the upstream answered")
			}
			if got := len(rec.requests()); got != 1 {
				t.Errorf("upstream saw %d requests, want exactly 1 (a non-idempotent write is never repeated)", got)
			}
		})
	}
}

func TestRetryPolicy_NeverRetriesNonIdempotentWriteOnConnectionFailure(t *testing.T) {
	// A connection cut mid-request may or may not have reached the upstream:
	// repeating a write could apply it twice.
	var calls int
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("response writer cannot hijack")
			return
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(ts.Close)
	c := newTestClient(t, ts.URL, "retries: 3", Options{})

	_, err := c.Do(context.Background(), Request{Method: http.MethodPost, URL: mustURL(t, ts.URL+"/items"), Body: []byte(`{}`)})
	he := asHTTPError(t, err)
	if he.Kind != FailConnection {
		t.Errorf("kind = %d, want FailConnection", he.Kind)
	}
	if !he.Sent {
		t.Error("Sent = false after the connection was accepted: the outcome of the write is unknown, not known-unsent")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("upstream saw %d requests, want 1", calls)
	}
}

func TestRetryPolicy_RetriesIdempotentWriteWithItsKey(t *testing.T) {
	bubble(t, testRetriesIdempotentWriteWithItsKey)
}

func testRetriesIdempotentWriteWithItsKey(t *testing.T, n *memnet.Network) {
	rec := &recorder{respond: statusThen(nil, http.StatusServiceUnavailable)}
	c, base := memClient(t, n, rec, "retries: 2", Options{})

	body := []byte(`{"status":"canceled"}`)
	resp, err := c.Do(context.Background(), Request{
		Method: http.MethodPost, URL: mustURL(t, base+"/items/1"), Body: body,
		Header: http.Header{"Idempotency-Key": {"key-123"}}, Idempotent: true,
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if resp.Status != http.StatusOK || resp.Attempts != 2 {
		t.Errorf("response = status %d attempts %d, want 200 after 2 attempts", resp.Status, resp.Attempts)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream saw %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if got := r.Header.Get("Idempotency-Key"); got != "key-123" {
			t.Errorf("request %d: Idempotency-Key = %q, want the same key on every attempt", i+1, got)
		}
		if !bytes.Equal(r.Body, body) {
			t.Errorf("request %d: body = %q, want %q (the body is resent whole)", i+1, r.Body, body)
		}
	}
}

func TestRetryPolicy_RetriesTransientReadFailures(t *testing.T) {
	for _, tc := range []struct {
		name         string
		statuses     []int
		wantStatus   int
		wantAttempts int
	}{
		{"500 then 200", []int{500}, 200, 2},
		{"502 then 200", []int{502}, 200, 2},
		{"504 then 200", []int{504}, 200, 2},
		{"503 then 200", []int{503}, 200, 2},
		{"429 without retry-after then 200", []int{429}, 200, 2},
		{"500 502 then 200", []int{500, 502}, 200, 3},
		{"retries exhausted keeps the last status", []int{500, 502, 504}, 504, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T, n *memnet.Network) {
				rec := &recorder{respond: statusThen(nil, tc.statuses...)}
				c, base := memClient(t, n, rec, "retries: 2", Options{})

				resp, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, base+"/items"), Idempotent: true})
				if tc.wantStatus == 200 {
					if err != nil {
						t.Fatalf("Do: %v", err)
					}
					if string(resp.Body) != `{"ok":true}` {
						t.Errorf("body = %q, want the successful answer's", resp.Body)
					}
				} else {
					he := asHTTPError(t, err)
					if he.Kind != FailStatus || he.Status != tc.wantStatus || he.Attempts != tc.wantAttempts {
						t.Errorf("error = kind %d status %d attempts %d, want FailStatus %d after %d", he.Kind, he.Status, he.Attempts, tc.wantStatus, tc.wantAttempts)
					}
					if !strings.Contains(string(he.Body), http.StatusText(tc.wantStatus)) {
						t.Errorf("error body = %q, want the last answer's body kept for the problem", he.Body)
					}
				}
				if resp == nil || resp.Status != tc.wantStatus || resp.Attempts != tc.wantAttempts {
					t.Errorf("response = %+v, want status %d after %d attempts", resp, tc.wantStatus, tc.wantAttempts)
				}
				if got := len(rec.requests()); got != tc.wantAttempts {
					t.Errorf("upstream saw %d requests, want %d", got, tc.wantAttempts)
				}
			})
		})
	}
}

func TestRetryPolicy_NeverRetriesClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 410, 422, 501} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			rec := &recorder{respond: statusThen(nil, status, status)}
			ts := startRecorder(t, rec)
			c := newTestClient(t, ts.URL, "retries: 3", Options{})

			_, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true})
			he := asHTTPError(t, err)
			if he.Kind != FailStatus || he.Status != status || he.Attempts != 1 {
				t.Errorf("error = kind %d status %d attempts %d, want FailStatus %d after 1 attempt", he.Kind, he.Status, he.Attempts, status)
			}
			if got := len(rec.requests()); got != 1 {
				t.Errorf("upstream saw %d requests, want 1", got)
			}
		})
	}
}

func TestRetryAfter_ShortWaitIsHonouredThenRetried(t *testing.T) {
	bubble(t, testShortWaitIsHonouredThenRetried)
}

func testShortWaitIsHonouredThenRetried(t *testing.T, n *memnet.Network) {
	rec := &recorder{respond: statusThen(http.Header{"Retry-After": {"1"}}, http.StatusTooManyRequests)}
	c, base := memClient(t, n, rec, "retries: 2", Options{})

	resp, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, base+"/items"), Idempotent: true})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if resp.Status != http.StatusOK || resp.Attempts != 2 {
		t.Errorf("response = status %d attempts %d, want 200 after 2 attempts", resp.Status, resp.Attempts)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream saw %d requests, want 2", len(reqs))
	}
	// The upstream's own clock: the second request must not arrive before
	// the second it asked for (allowing for clock granularity).
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 900*time.Millisecond {
		t.Errorf("second request arrived %v after the first, want >= 1s as Retry-After asked", gap)
	}
}

func TestRetryAfter_LongWaitIsReportedNotSlept(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		want   time.Duration
	}{
		{"429 retry-after 60 seconds", http.StatusTooManyRequests, http.Header{"Retry-After": {"60"}}, 60 * time.Second},
		{"503 retry-after 60 seconds", http.StatusServiceUnavailable, http.Header{"Retry-After": {"60"}}, 60 * time.Second},
		{"429 retry-after date 90s ahead of the injected clock", http.StatusTooManyRequests,
			http.Header{"Retry-After": {clock.Now().Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"429 rate limit reset 120s ahead of the injected clock", http.StatusTooManyRequests,
			http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(clock.Now().Add(120 * time.Second).Unix())}}, 120 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{respond: statusThen(tc.header, tc.status, tc.status, tc.status)}
			ts := startRecorder(t, rec)
			c := newTestClient(t, ts.URL, "retries: 2", Options{Clock: clock})

			_, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true})
			he := asHTTPError(t, err)
			if he.Kind != FailStatus || he.Status != tc.status || he.RetryAfter != tc.want {
				t.Errorf("error = kind %d status %d retry-after %v, want FailStatus %d retry-after %v", he.Kind, he.Status, he.RetryAfter, tc.status, tc.want)
			}
			if he.Attempts != 1 {
				t.Errorf("attempts = %d, want 1", he.Attempts)
			}
			if got := len(rec.requests()); got != 1 {
				t.Errorf("upstream saw %d requests, want exactly 1 (a wait over %v is reported, not slept)", got, DefaultMaxRetryWait)
			}
		})
	}
}

func TestRetryAfter_WaitBeyondTheCallerDeadlineIsNotSlept(t *testing.T) {
	// 4s is within the client's own bound (5s) but beyond the caller's 2s.
	rec := &recorder{respond: statusThen(http.Header{"Retry-After": {"4"}}, http.StatusTooManyRequests)}
	ts := startRecorder(t, rec)
	c := newTestClient(t, ts.URL, "retries: 2", Options{})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.Do(ctx, Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true})
	he := asHTTPError(t, err)
	if he.Kind != FailStatus || he.Status != http.StatusTooManyRequests || he.RetryAfter != 4*time.Second {
		t.Errorf("error = kind %d status %d retry-after %v, want FailStatus 429 retry-after 4s", he.Kind, he.Status, he.RetryAfter)
	}
	if got := len(rec.requests()); got != 1 {
		t.Errorf("upstream saw %d requests, want 1", got)
	}
}

func TestRetryAfter_ParsesEverySignal(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"no header", nil, 0},
		{"empty header", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"seconds with spaces", http.Header{"Retry-After": {" 7 "}}, 7 * time.Second},
		{"zero seconds means at least one", http.Header{"Retry-After": {"0"}}, time.Second},
		{"http date in the future", http.Header{"Retry-After": {now.Add(45 * time.Second).Format(http.TimeFormat)}}, 45 * time.Second},
		{"http date in the past means at least one", http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, time.Second},
		{"http date now means at least one", http.Header{"Retry-After": {now.Format(http.TimeFormat)}}, time.Second},
		{"rate limit exhausted with reset epoch", http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(now.Add(30 * time.Second).Unix())}}, 30 * time.Second},
		{"rate limit exhausted with reset in the past", http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(now.Add(-30 * time.Second).Unix())}}, time.Second},
		{"rate limit not exhausted", http.Header{"X-Ratelimit-Remaining": {"12"}, "X-Ratelimit-Reset": {fmt.Sprint(now.Add(30 * time.Second).Unix())}}, 0},
		{"rate limit exhausted without reset", http.Header{"X-Ratelimit-Remaining": {"0"}}, 0},
		{"rate limit exhausted with garbage reset", http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"soon"}}, 0},
		{"retry-after wins over rate limit headers", http.Header{"Retry-After": {"3"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(now.Add(30 * time.Second).Unix())}}, 3 * time.Second},
		{"garbage retry-after falls back to rate limit headers", http.Header{"Retry-After": {"later"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(now.Add(30 * time.Second).Unix())}}, 30 * time.Second},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"negative seconds", http.Header{"Retry-After": {"-5"}}, 0},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RetryAfter(tc.header, now); got != tc.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}

func TestRetryAfter_HugeSecondsNeverShrinkToAShortWait(t *testing.T) {

	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"10000000000", "9223372037", "99999999999999999"} {
		got := RetryAfter(http.Header{"Retry-After": {v}}, now)
		if got <= DefaultMaxRetryWait {
			t.Errorf("RetryAfter(%s) = %v, want a wait longer than %v (the upstream asked for a very long wait)", v, got, DefaultMaxRetryWait)
		}
	}
}

func TestRedirect_ToAnotherHostIsRefused(t *testing.T) {
	other := &recorder{}
	otherTS := startRecorder(t, other)
	for _, tc := range []struct {
		name   string
		status int
	}{
		{"302", http.StatusFound},
		{"307", http.StatusTemporaryRedirect},
		{"301", http.StatusMovedPermanently},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := &recorder{respond: func(_ int, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, otherTS.URL+"/stolen", tc.status)
			}}
			ts := startRecorder(t, origin)
			c := newTestClient(t, ts.URL, "retries: 2", Options{})

			resp, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true})
			if err == nil {
				t.Fatalf("Do = status %d, want an error for a redirect to another host", resp.Status)
			}
			if !IsBadResponse(err) {
				t.Fatalf("a refused cross-host redirect is a bad response (never retried, never a retryable outage), got %T %v", err, err)
			}
			if got := len(origin.requests()); got != 1 {
				t.Errorf("origin saw %d requests, want 1 (a refused redirect is not retried)", got)
			}
		})
	}
	reqs := other.requests()
	if len(reqs) != 0 {
		t.Errorf("the other host saw %d requests, want none", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the other host received an Authorization header")
		}
	}
}

func TestRedirect_OnTheSameHostIsFollowedWithTheCredential(t *testing.T) {
	rec := &recorder{}
	rec.respond = func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new?page=2", http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"moved":true}`)
	}
	ts := startRecorder(t, rec)
	c := newTestClient(t, ts.URL, "", Options{})

	resp, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/old"), Idempotent: true})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if resp.Status != http.StatusOK || string(resp.Body) != `{"moved":true}` {
		t.Errorf("response = %d %q, want the redirect target's answer", resp.Status, resp.Body)
	}
	reqs := rec.requests()
	if len(reqs) != 2 || reqs[1].Path != "/new" {
		t.Fatalf("upstream saw %+v, want /old then /new", reqs)
	}
	if got := reqs[1].Header.Get("Authorization"); got != "Bearer "+testSecret {
		t.Errorf("redirected request Authorization = %q, want the credential", got)
	}
}

func TestBodyLimit_LargerThanMaxBodyBytesFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		status int
		tooBig bool
	}{
		{"exactly the limit", 100, 200, false},
		{"one byte under", 99, 200, false},
		{"one byte over", 101, 200, true},
		{"far over", 100000, 200, true},
		{"error answer over the limit", 5000, 404, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := strings.Repeat("x", tc.size)
			rec := &recorder{respond: func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, body)
			}}
			ts := startRecorder(t, rec)
			c := newTestClient(t, ts.URL, "max_body_bytes: 100", Options{})

			resp, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true})
			if !tc.tooBig {
				if err != nil {
					t.Fatalf("Do: %v", err)
				}
				if len(resp.Body) != tc.size {
					t.Errorf("body length = %d, want %d", len(resp.Body), tc.size)
				}
				return
			}
			he := asHTTPError(t, err)
			if he.Kind != FailTooLarge {
				t.Errorf("kind = %d, want FailTooLarge", he.Kind)
			}
			if len(he.Body) > 100 {
				t.Errorf("error keeps %d body bytes, want at most the limit", len(he.Body))
			}
		})
	}
}

func TestCredential_SentAsConfiguredWithRequestID(t *testing.T) {
	for _, tc := range []struct {
		name        string
		extra       string
		wantHeader  string
		wantValue   string
		reqIDHeader string
	}{
		{"default bearer", "", "Authorization", "Bearer " + testSecret, "X-Request-Id"},
		{"custom header without scheme", "credential: {env: TEST_TOKEN, header: X-Api-Key, scheme: \"\"}", "X-Api-Key", testSecret, "X-Request-Id"},
		{"custom scheme", "credential: {env: TEST_TOKEN, scheme: token}", "Authorization", "token " + testSecret, "X-Request-Id"},
		{"custom request id header", "request_id_header: X-Correlation-Id", "Authorization", "Bearer " + testSecret, "X-Correlation-Id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			ts := startRecorder(t, rec)
			c := newTestClient(t, ts.URL, tc.extra, Options{})

			if _, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), RequestID: "req-42", Idempotent: true}); err != nil {
				t.Fatalf("Do: %v", err)
			}
			reqs := rec.requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream saw %d requests, want 1", len(reqs))
			}
			h := reqs[0].Header
			if got := h.Get(tc.wantHeader); got != tc.wantValue {
				t.Errorf("%s = %q, want %q", tc.wantHeader, got, tc.wantValue)
			}
			if got := h.Get(tc.reqIDHeader); got != "req-42" {
				t.Errorf("%s = %q, want the request id", tc.reqIDHeader, got)
			}
			if got := h.Get("Accept"); got != "application/json" {
				t.Errorf("Accept = %q, want application/json", got)
			}
		})
	}
}

func TestCredential_StaticHeadersCannotOverrideIt(t *testing.T) {
	rec := &recorder{}
	ts := startRecorder(t, rec)
	c := newTestClient(t, ts.URL, "headers: {X-Tenant: acme}", Options{})

	_, err := c.Do(context.Background(), Request{
		Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true,
		Header: http.Header{"Authorization": {"Bearer smuggled"}},
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	h := rec.requests()[0].Header
	if got := h.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+testSecret {
		t.Errorf("Authorization = %q, want only the configured credential", got)
	}
	if got := h.Get("X-Tenant"); got != "acme" {
		t.Errorf("X-Tenant = %q, want the configured static header", got)
	}
}

func TestLogging_NeverContainsTheCredential(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))

	other := startRecorder(t, &recorder{})
	rec := &recorder{}
	rec.respond = func(n int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/flaky":
			statusThen(nil, 500)(n, w, r)
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"no such thing","echo":%q}`, r.Header.Get("Authorization"))
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		default:
			fmt.Fprint(w, `{"ok":true}`)
		}
	}
	ts := startRecorder(t, rec)
	c := newTestClient(t, ts.URL, "retries: 1", Options{Logger: logger})

	for _, p := range []string{"/ok", "/flaky", "/missing", "/away"} {
		_, _ = c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+p), RequestID: "req-log", Idempotent: true})
	}
	_, _ = c.Do(context.Background(), Request{Method: http.MethodPost, URL: mustURL(t, ts.URL+"/missing"), Body: []byte(`{}`), RequestID: "req-log"})

	mu.Lock()
	defer mu.Unlock()
	out := buf.String()
	if out == "" {
		t.Fatal("nothing was logged at debug level; the test would prove nothing")
	}
	if strings.Contains(out, testSecret) {
		t.Errorf("the log contains the credential:\n%s", out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestConnectionRefused_IsReportedAsNotSent(t *testing.T) {
	addr := refused.Addr(t)

	for _, tc := range []struct {
		name         string
		method       string
		idempotent   bool
		wantAttempts int
	}{
		{"read is retried", http.MethodGet, true, 3},
		{"write is not retried", http.MethodPost, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, "http://"+addr, "retries: 2", Options{})
			_, err := c.Do(context.Background(), Request{Method: tc.method, URL: mustURL(t, "http://"+addr+"/items"), Idempotent: tc.idempotent})
			he := asHTTPError(t, err)
			if he.Kind != FailConnection {
				t.Errorf("kind = %d, want FailConnection", he.Kind)
			}
			if he.Sent {
				t.Error("Sent = true for a connection that was never made")
			}
			if he.Attempts != tc.wantAttempts {
				t.Errorf("attempts = %d, want %d", he.Attempts, tc.wantAttempts)
			}
		})
	}
}

func TestTimeoutAfterSend_IsReportedAsSent(t *testing.T) {
	bubble(t, testTimeoutAfterSendIsReportedAsSent)
}

func testTimeoutAfterSendIsReportedAsSent(t *testing.T, n *memnet.Network) {
	release := make(chan struct{})
	c, base := memClient(t, n, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client hanging up
		select {                           // never answers
		case <-r.Context().Done():
		case <-release:
		}
	}), "timeout: 50ms", Options{})
	t.Cleanup(func() { close(release) }) // runs first: unblocks the handler before Close waits for it

	_, err := c.Do(context.Background(), Request{Method: http.MethodPost, URL: mustURL(t, base+"/items"), Body: []byte(`{}`)})
	he := asHTTPError(t, err)
	if he.Kind != FailTimeout {
		t.Errorf("kind = %d, want FailTimeout", he.Kind)
	}
	if !he.Sent {
		t.Error("Sent = false for a write that reached the upstream: its outcome is unknown")
	}
}

func TestCanceledContext_IsReportedAsCanceled(t *testing.T) {
	rec := &recorder{}
	ts := startRecorder(t, rec)
	c := newTestClient(t, ts.URL, "", Options{})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Do(ctx, Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true})
	if he := asHTTPError(t, err); he.Kind != FailCanceled {
		t.Errorf("kind = %d, want FailCanceled", he.Kind)
	}
	if got := len(rec.requests()); got != 0 {
		t.Errorf("upstream saw %d requests after the caller went away, want 0", got)
	}
}

func TestRateLimiter_FollowsTheInjectedClock(t *testing.T) {

	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	rec := &recorder{}
	ts := startRecorder(t, rec)
	// One request per 1000s: on the wall clock the second request would
	// wait for a quarter of an hour; on the injected clock it is due.
	c := newTestClient(t, ts.URL, "rate_limit: {per_second: 0.001, burst: 1}", Options{Clock: clock})

	if _, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true}); err != nil {
		t.Fatalf("first Do: %v", err)
	}
	clock.Advance(2000 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Do(ctx, Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true}); err != nil {
		t.Fatalf("second Do after the injected clock moved past the rate limit: %v", err)
	}
	if got := len(rec.requests()); got != 2 {
		t.Errorf("upstream saw %d requests, want 2", got)
	}
}

// TestRateLimiter_WaitsOnTheInjectedClock: a request over the client-side
// rate limit waits for its token on the injected clock: an hour of the
// (bubble's) wall clock does not release it, the injected clock's
// thousand seconds do.
func TestRateLimiter_WaitsOnTheInjectedClock(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Network) {
		clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
		rec := &recorder{}
		c, base := memClient(t, n, rec, "rate_limit: {per_second: 0.001, burst: 1}", Options{Clock: clock})
		for range 2 {
			go func() {
				_, _ = c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, base+"/items"), Idempotent: true})
			}()
		}
		if err := clock.BlockUntil(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := len(rec.requests()); got != 1 {
			t.Fatalf("upstream saw %d requests before the injected clock moved, want 1", got)
		}
		clock.Advance(1000 * time.Second)
		synctest.Wait()
		if got := len(rec.requests()); got != 2 {
			t.Fatalf("upstream saw %d requests once the injected clock passed the limit, want 2", got)
		}
	})
}

// TestRetry_WaitsBetweenAttemptsOnTheInjectedClock: the wait before a
// retry (here the 3 s a 503 asked for) is taken on the client's clock,
// not on retryablehttp's wall-clock timer.
func TestRetry_WaitsBetweenAttemptsOnTheInjectedClock(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Network) {
		clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
		rec := &recorder{respond: statusThen(http.Header{"Retry-After": {"3"}}, http.StatusServiceUnavailable)}
		c, base := memClient(t, n, rec, "retries: 2", Options{Clock: clock})
		done := make(chan *Response, 1)
		go func() {
			resp, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, base+"/items"), Idempotent: true})
			if err != nil {
				t.Error(err)
			}
			done <- resp
		}()
		if err := clock.BlockUntil(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := len(rec.requests()); got != 1 {
			t.Fatalf("upstream saw %d requests before the injected clock moved, want 1", got)
		}
		clock.Advance(3 * time.Second)
		if resp := <-done; resp == nil || resp.Attempts != 2 {
			t.Fatalf("response %+v, want the second attempt's", resp)
		}
	})
}

// TestRetry_ACallerThatGoesAwayEndsTheWait: a caller whose context ends
// while the client waits before a retry gets FailCanceled at once, and
// the retry is never sent.
func TestRetry_ACallerThatGoesAwayEndsTheWait(t *testing.T) {
	bubble(t, func(t *testing.T, n *memnet.Network) {
		rec := &recorder{respond: statusThen(http.Header{"Retry-After": {"3"}}, http.StatusServiceUnavailable)}
		c, base := memClient(t, n, rec, "retries: 2", Options{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		go func() {
			synctest.Wait() // the client waits out the Retry-After
			cancel()
		}()
		start := time.Now()
		_, err := c.Do(ctx, Request{Method: http.MethodGet, URL: mustURL(t, base+"/items"), Idempotent: true})
		if he := asHTTPError(t, err); he.Kind != FailCanceled {
			t.Fatalf("kind %d, want FailCanceled", he.Kind)
		}
		if time.Since(start) != 0 || len(rec.requests()) != 1 {
			t.Fatalf("after %v, %d requests; want the wait ended at once, and no retry", time.Since(start), len(rec.requests()))
		}
	})
}

func TestHTTPError_NeverHoldsTheCredential(t *testing.T) {
	rec := &recorder{respond: statusThen(nil, 401)}
	ts := startRecorder(t, rec)
	c := newTestClient(t, ts.URL, "", Options{})
	_, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true})
	he := asHTTPError(t, err)
	if strings.Contains(he.Error(), testSecret) || strings.Contains(fmt.Sprintf("%+v", *he), testSecret) {
		t.Errorf("the error holds the credential: %+v", *he)
	}
}
