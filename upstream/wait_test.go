package upstream

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/internal/memnet"
	"github.com/airlock-mcp/airlock/internal/oauthtest"
)

func TestParseRetryAfter_ReadsSecondsOfAnyLengthAndEveryDateForm(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := now.Add(90 * time.Second)
	for _, tc := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"120", 120 * time.Second, true},
		{" 120 ", 120 * time.Second, true},
		{"0", 0, true},
		{"999999999", 999999999 * time.Second, true},
		{"0000000000000000000000000000007", 7 * time.Second, true},
		// Too long for an int64, or for a Duration: a very long wait.
		{"99999999999999999999", maxWait, true},
		{"9223372037", maxWait, true},
		{at.Format(http.TimeFormat), 90 * time.Second, true},                          // IMF-fixdate
		{at.Format(time.RFC850), 90 * time.Second, true},                              // obsolete RFC 850
		{at.Format(time.ANSIC), 90 * time.Second, true},                               // asctime
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},                        // past: no wait left
		{now.Add(1500 * time.Millisecond).Format(http.TimeFormat), time.Second, true}, // a date has whole seconds
		{"", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"5 s", 0, false},
		{"soon", 0, false},
		{"Sun, 30 Nov 2026 12:01:30", 0, false},
	} {
		t.Run(tc.value, func(t *testing.T) {
			got, ok := ParseRetryAfter(tc.value, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// throttleThen answers 429 with the given Retry-After until recovered is
// set, and 200 then.
func throttleThen(retryAfter string, recovered *atomic.Bool) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if recovered.Load() {
			fmt.Fprint(w, `{"ok":true}`)
			return
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":"slow down"}`)
	}
}

// TestRetryAfter_AnAbsurdOrOverflowingWaitIsCappedThenTheUpstreamIsCalledAgain:
// a Retry-After of 31 years, or one too long for an int64, is read as
// max_retry_after (1 h by default): never slept, never retried within the
// call, never ignored. airlock answers locally for exactly the wait it
// tells, and once it is over the same call reaches the upstream again.
func TestRetryAfter_AnAbsurdOrOverflowingWaitIsCappedThenTheUpstreamIsCalledAgain(t *testing.T) {
	for _, tc := range []struct {
		value, extra string
		want         time.Duration
	}{
		{"999999999", "retries: 2", DefaultMaxRetryAfter},
		{"99999999999999999999", "retries: 2", DefaultMaxRetryAfter},
		{"99999999999999999999", "retries: 2\nmax_retry_after: 2m", 2 * time.Minute},
		{time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat), "retries: 2", DefaultMaxRetryAfter},
	} {
		t.Run(tc.value+" "+strings.ReplaceAll(tc.extra, "\n", " "), func(t *testing.T) {
			bubble(t, func(t *testing.T, n *memnet.Network) {
				var recovered atomic.Bool
				rec := &recorder{respond: throttleThen(tc.value, &recovered)}
				c, base := memClient(t, n, rec, tc.extra, Options{})
				call := func() error {
					_, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, base+"/items"), Idempotent: true})
					return err
				}

				he := asHTTPError(t, call())
				p := ProblemFor(he, nil)
				if got := len(rec.requests()); got != 1 || he.Attempts != 1 {
					t.Fatalf("the upstream saw %d request(s) in %d attempt(s); want 1: a wait that long is reported, never retried", got, he.Attempts)
				}
				told := time.Duration(*p.RetryAfterSeconds) * time.Second
				if p.Code != envelope.ProblemUpstreamRateLimited || told != tc.want || he.RetryAfter != tc.want {
					t.Fatalf("problem %s told %v (error's wait %v), want UPSTREAM_RATE_LIMITED with %v", p.Code, told, he.RetryAfter, tc.want)
				}
				if kept := c.CoolingDown(); kept != told {
					t.Fatalf("airlock keeps %v, tells %v", kept, told)
				}

				recovered.Store(true)
				time.Sleep(told - time.Second)
				if he := asHTTPError(t, call()); !he.Local || WaitSeconds(he.RetryAfter) != 1 || len(rec.requests()) != 1 {
					t.Fatalf("a second before the wait is over: local %v, wait %v, %d requests; want a local answer naming 1 s", he.Local, he.RetryAfter, len(rec.requests()))
				}
				time.Sleep(time.Second)
				if err := call(); err != nil || len(rec.requests()) != 2 {
					t.Fatalf("once the told wait is over the call must reach the upstream: %v, %d requests", err, len(rec.requests()))
				}
			})
		})
	}
}

// TestRateLimit_TheWaitToldIsTheWaitKept: whatever the upstream said about
// its wait (nothing, seconds, a date, a rate limit reset), the problem's
// retry_after_seconds is the wait airlock keeps before calling it again,
// and a call made that many seconds later reaches it.
func TestRateLimit_TheWaitToldIsTheWaitKept(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no wait named", nil, 5},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7},
		{"a date", http.Header{"Retry-After": {clock.Now().Add(90 * time.Second).Format(http.TimeFormat)}}, 90},
		{"a rate limit reset", http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(clock.Now().Add(120 * time.Second).Unix())}}, 120},
		{"an absurd reset", http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"99999999999999999999"}}, 3600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktest.New(clock.Now())
			rec := &recorder{respond: statusThen(tc.header, http.StatusTooManyRequests)}
			ts := startRecorder(t, rec)
			c := newTestClient(t, ts.URL, "retries: 0", Options{Clock: clock})
			call := func() error {
				_, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true})
				return err
			}
			p := ProblemFor(call(), nil)
			if p.RetryAfterSeconds == nil || *p.RetryAfterSeconds != tc.want || !strings.Contains(p.NextAction, fmt.Sprintf("Wait %d seconds", tc.want)) {
				t.Fatalf("told %q, want %d s", p.NextAction, tc.want)
			}
			if kept := c.CoolingDown(); kept != time.Duration(tc.want)*time.Second {
				t.Fatalf("airlock keeps %v, tells %d s", kept, tc.want)
			}
			clock.Advance(time.Duration(tc.want) * time.Second)
			if err := call(); err != nil || len(rec.requests()) != 2 {
				t.Fatalf("after the told wait: %v, %d requests; want the upstream's answer", err, len(rec.requests()))
			}
		})
	}
}

// TestOAuth2_TheWaitToldForAFailedTokenRequestIsTheWaitKept: the first
// answer of a failed token request tells the wait airlock keeps before
// asking the authorization server again (its backoff, or its Retry-After
// up to 5 min), not the endpoint's own figure nor a default; a call made
// that many seconds later asks again.
func TestOAuth2_TheWaitToldForAFailedTokenRequestIsTheWaitKept(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter string
		want       time.Duration
	}{
		{"no Retry-After", "", tokenBackoffBase},
		{"a short Retry-After", "1", tokenBackoffBase},
		{"a Retry-After of 31 years", "999999999", tokenRetryAfterMax},
		{"a Retry-After too long for an int64", "99999999999999999999", tokenRetryAfterMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
			te := &oauthtest.TokenEndpoint{Answer: func(w http.ResponseWriter, _ *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"error":"temporarily_unavailable"}`)
			}}
			c, base := oauthClient(t, te, &oauthtest.API{}, "", "", Options{Clock: clock})
			_, err := get(t, c, base.URL)
			p := ProblemFor(err, nil)
			if p.Code != envelope.ProblemTokenEndpointFailed || p.RetryAfterSeconds == nil || time.Duration(*p.RetryAfterSeconds)*time.Second != tc.want {
				t.Fatalf("problem %s told %q, want %v", p.Code, p.NextAction, tc.want)
			}
			clock.Advance(tc.want - time.Second)
			_, _ = get(t, c, base.URL)
			if n := te.Requests.Load(); n != 1 {
				t.Fatalf("%d token requests before the told wait was over, want 1", n)
			}
			clock.Advance(time.Second)
			_, _ = get(t, c, base.URL)
			if n := te.Requests.Load(); n != 2 {
				t.Fatalf("%d token requests once the told wait was over, want 2", n)
			}
		})
	}
}
