package transport

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
			got, ok := parseRetryAfter(tc.value, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.value, got, ok, tc.want, tc.ok)
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

// TestUnavailable_AnAbsurdWaitIsToldCapped: a 503 asking for 31 years is
// reported (not slept, not retried) with max_retry_after as its wait: the
// wait the memory of failed calls then keeps for the identical call.
func TestUnavailable_AnAbsurdWaitIsToldCapped(t *testing.T) {
	t.Parallel()
	rec := &recorder{respond: statusThen(http.Header{"Retry-After": {"999999999"}}, http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusServiceUnavailable)}
	ts := startRecorder(t, rec)
	c := newTestClient(t, ts.URL, "retries: 2\nmax_retry_after: 10m", Options{})
	_, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, ts.URL+"/items"), Idempotent: true})
	p := ProblemFor(err, nil)
	if p.Code != envelope.ProblemUpstreamUnavailable || p.RetryAfterSeconds == nil || *p.RetryAfterSeconds != 600 || len(rec.requests()) != 1 {
		t.Fatalf("problem %s told %q after %d request(s); want UPSTREAM_UNAVAILABLE telling 600 s after one", p.Code, p.NextAction, len(rec.requests()))
	}
}

// dynamoDBThrottling is DynamoDB's throttle declared: its 400 whose
// __type names ProvisionedThroughputExceededException.
const dynamoDBThrottling = "throttling:\n  - {status: 400, member: __type, match: ProvisionedThroughputExceededException}"

// dynamoDBThrottle answers as DynamoDB does when a table's provisioned
// throughput is exceeded (no Retry-After), until recovered is set.
func dynamoDBThrottle(recovered *atomic.Bool, errType string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if recovered != nil && recovered.Load() {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"Items":[],"Count":0,"ScannedCount":0}`)
			return
		}
		w.Header().Set("X-Amzn-RequestId", "8M3QG5N0VJ7EXAMPLE")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`, errType)
	}
}

// TestDeclaredThrottling_DynamoDBThrottleIsARateLimitWithAWait: a 400 the
// upstream declares throttling (DynamoDB's
// ProvisionedThroughputExceededException) is a rate limit like a 429:
// UPSTREAM_RATE_LIMITED, retryable, with the wait airlock keeps; the same
// call after that wait reaches the upstream. Undeclared, or with another
// __type, the 400 stays a refusal.
func TestDeclaredThrottling_DynamoDBThrottleIsARateLimitWithAWait(t *testing.T) {
	for _, tc := range []struct {
		name, extra, errType string
		throttled            bool
	}{
		{"declared", dynamoDBThrottling, "ProvisionedThroughputExceededException", true},
		{"declared, another error type", dynamoDBThrottling, "ValidationException", false},
		{"not declared", "", "ProvisionedThroughputExceededException", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			var recovered atomic.Bool
			rec := &recorder{respond: dynamoDBThrottle(&recovered, tc.errType)}
			ts := startRecorder(t, rec)
			c := newTestClient(t, ts.URL, "retries: 0\n"+tc.extra, Options{Clock: clock})
			call := func() error {
				_, err := c.Do(context.Background(), Request{Method: http.MethodPost, URL: mustURL(t, ts.URL+"/"), Body: []byte(`{"TableName":"accounts"}`), Idempotent: true})
				return err
			}
			he := asHTTPError(t, call())
			p := ProblemFor(he, nil)
			if !tc.throttled {
				if p.Code != envelope.ProblemUpstreamRejected || p.Retryable || c.CoolingDown() != 0 {
					t.Fatalf("problem %s (retryable %v), cooling down %v; want the 400 to stay a refusal", p.Code, p.Retryable, c.CoolingDown())
				}
				return
			}
			if !he.RateLimited() || p.Code != envelope.ProblemUpstreamRateLimited || !p.Retryable || p.RetryAfterSeconds == nil {
				t.Fatalf("problem %+v; want UPSTREAM_RATE_LIMITED, retryable, with a wait", p)
			}
			told := time.Duration(*p.RetryAfterSeconds) * time.Second
			if kept := c.CoolingDown(); kept != told || told != defaultRateLimitWait {
				t.Fatalf("airlock keeps %v, tells %v; want both %v (no Retry-After)", kept, told, defaultRateLimitWait)
			}
			if !strings.Contains(p.UpstreamMessage, "provisioned throughput") {
				t.Fatalf("upstream_message %q, want DynamoDB's words quoted", p.UpstreamMessage)
			}
			recovered.Store(true)
			if he := asHTTPError(t, call()); !he.Local || len(rec.requests()) != 1 {
				t.Fatalf("within the wait: local %v, %d requests; want a local answer", he.Local, len(rec.requests()))
			}
			clock.Advance(told)
			if err := call(); err != nil || len(rec.requests()) != 2 {
				t.Fatalf("after the wait: %v, %d requests; want the upstream's answer", err, len(rec.requests()))
			}
		})
	}
}

// TestDeclaredThrottling_IsRetriedWithinTheCallLikeA429: a read throttled
// once is retried after a backoff and answers; a write is never retried.
func TestDeclaredThrottling_IsRetriedWithinTheCallLikeA429(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	rec.respond = func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 || r.Method == http.MethodPut {
			dynamoDBThrottle(nil, "ProvisionedThroughputExceededException")(n, w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"Items":[],"Count":0}`)
	}
	ts := startRecorder(t, rec)
	c := newTestClient(t, ts.URL, "retries: 2\n"+dynamoDBThrottling, Options{})
	resp, err := c.Do(context.Background(), Request{Method: http.MethodPost, URL: mustURL(t, ts.URL+"/"), Body: []byte(`{}`), Idempotent: true})
	if err != nil || resp.Status != http.StatusOK || resp.Attempts != 2 {
		t.Fatalf("read: %v, %+v; want 200 after 2 attempts", err, resp)
	}
	_, err = c.Do(context.Background(), Request{Method: http.MethodPut, URL: mustURL(t, ts.URL+"/"), Body: []byte(`{}`)})
	if he := asHTTPError(t, err); !he.RateLimited() || he.Attempts != 1 || len(rec.requests()) != 3 {
		t.Fatalf("write: rate limited %v after %d attempt(s), %d requests in all; want one attempt", he.RateLimited(), he.Attempts, len(rec.requests()))
	}
}

// TestDeclaredThrottling_ABodyOverTheLimitIsNotReadPastIt: the throttle's
// body is read within max_body_bytes; one over it is refused as too large,
// not decoded to find the member.
func TestDeclaredThrottling_ABodyOverTheLimitIsNotReadPastIt(t *testing.T) {
	t.Parallel()
	rec := &recorder{respond: func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":%q}`, strings.Repeat("x", 5000))
	}}
	ts := startRecorder(t, rec)
	c := newTestClient(t, ts.URL, "retries: 2\nmax_body_bytes: 1000\n"+dynamoDBThrottling, Options{})
	_, err := c.Do(context.Background(), Request{Method: http.MethodPost, URL: mustURL(t, ts.URL+"/"), Body: []byte(`{}`), Idempotent: true})
	if he := asHTTPError(t, err); he.Kind != FailTooLarge || len(rec.requests()) != 1 || c.CoolingDown() != 0 {
		t.Fatalf("kind %d after %d request(s), cooling down %v; want FailTooLarge after one", he.Kind, len(rec.requests()), c.CoolingDown())
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
