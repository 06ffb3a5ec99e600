package tools

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/tooltest"
)

// TestRateLimit_TheWaitToldIsKeptAndNoLonger: whatever a 429 says of its
// wait (nothing, 31 years, a number too long for an int64), the scan tells
// the wait airlock keeps (5 s when none is named, max_retry_after, 1 h, at
// most) and makes no retry the agent is not told of; until it is over an
// identical call is answered from memory and any other from airlock's
// state, without a request; once it is over, the identical call reaches
// the upstream, which has recovered.
func TestRateLimit_TheWaitToldIsKeptAndNoLonger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, retryAfter string
		told, requests   int
	}{
		{"no wait named", "", 5, 3}, // a 429 naming no wait is retried in the call
		{"31 years", "999999999", 3600, 1},
		{"too long for an int64", "99999999999999999999", 3600, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			api := newFixture(t)
			var recovered atomic.Bool
			up, url := tooltest.ServeScripted(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				if recovered.Load() {
					api.ServeHTTP(w, r)
					return
				}
				headers := []string{}
				if tc.retryAfter != "" {
					headers = append(headers, "Retry-After", tc.retryAfter)
				}
				tooltest.Answer(w, http.StatusTooManyRequests, "application/json", `{"error":"slow down"}`, headers...)
			})
			h := newHarness(t, demoAt(url, fastRetries...), withClock(clock))
			args := map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "max_items": 0}

			first := h.call("search_all", args)
			cont := first.env.Continuation
			if !first.env.HasReason(envelope.RateLimited) || cont.RetryAfterSeconds == nil || *cont.RetryAfterSeconds != tc.told ||
				secs(first.reason(envelope.RateLimited).RetryAfterSeconds) != tc.told {
				t.Fatalf("want RATE_LIMITED telling %d s, got %v telling %v s", tc.told, first.reasonCodes(), secs(cont.RetryAfterSeconds))
			}
			if up.Count() != tc.requests {
				t.Fatalf("the upstream saw %d request(s), want %d", up.Count(), tc.requests)
			}

			recovered.Store(true)
			clock.Advance(time.Duration(tc.told-1) * time.Second)
			again := h.call("search_all", args)
			if !again.env.HasWarning(envelope.WarnAnsweredFromMemory) || secs(again.env.Continuation.RetryAfterSeconds) != 1 {
				t.Fatalf("a second before the wait is over, want the remembered answer with 1 s left, got %v s", secs(again.env.Continuation.RetryAfterSeconds))
			}
			other := h.call("search_all", map[string]any{"resource": "projects", "filter": map[string]any{"state": "active"}, "max_items": 0})
			if p := other.env.Problem; p == nil || p.Code != envelope.ProblemUpstreamRateLimited || secs(p.RetryAfterSeconds) != 1 {
				t.Fatalf("a second before the wait is over, want another call refused with 1 s left, got %+v", p)
			}
			if up.Count() != tc.requests {
				t.Fatalf("the upstream saw %d request(s) within the wait", up.Count()-tc.requests)
			}

			clock.Advance(time.Second)
			done := h.call("search_all", args)
			if !done.env.Complete || done.env.HasWarning(envelope.WarnAnsweredFromMemory) || up.Count() == tc.requests {
				t.Fatalf("once the told wait is over the identical call reaches the upstream: %v %v", done.reasonCodes(), done.env.Warnings)
			}
		})
	}
}

// secs shows a wait in seconds that may be missing.
func secs(p *int) any {
	if p == nil {
		return "no"
	}
	return *p
}

// dynamoDBThrottlingEdits declare DynamoDB's throttle on the demo upstream
// (and retry it fast).
var dynamoDBThrottlingEdits = []string{"retries: 2", "retries: 2\n    backoff: {min: 1ms, max: 5ms}\n" +
	"    throttling:\n      - {status: 400, member: __type, match: ProvisionedThroughputExceededException}"}

// dynamoDBThrottle answers as DynamoDB does when a table's provisioned
// throughput is exceeded.
func dynamoDBThrottle(w http.ResponseWriter) {
	tooltest.Answer(w, http.StatusBadRequest, "application/x-amz-json-1.0",
		`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`,
		"X-Amzn-RequestId", "8M3QG5N0VJ7EXAMPLE")
}

// TestDeclaredThrottling_ADynamoDBThrottleIsWaitedOutNotRemembered: an
// upstream that declares DynamoDB's throttle (400,
// ProvisionedThroughputExceededException in __type) is rate-limiting when
// it answers it: a scan says RATE_LIMITED and a named read
// UPSTREAM_RATE_LIMITED, retryable, with the wait airlock keeps; the
// identical call after that wait reaches the recovered upstream instead
// of being answered from memory as a refused request.
func TestDeclaredThrottling_ADynamoDBThrottleIsWaitedOutNotRemembered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"search_all", map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "max_items": 0}},
		{"preview_selection", explicitPreview("sa_00002")},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			api := newFixture(t)
			var recovered atomic.Bool
			up, url := tooltest.ServeScripted(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				if recovered.Load() {
					api.ServeHTTP(w, r)
					return
				}
				dynamoDBThrottle(w)
			})
			h := newHarness(t, demoAt(url, dynamoDBThrottlingEdits...), withClock(clock))

			first := h.call(tc.tool, tc.args)
			var told int
			if p := first.env.Problem; p != nil {
				if p.Code != envelope.ProblemUpstreamRateLimited || !p.Retryable || p.RetryAfterSeconds == nil ||
					!strings.Contains(p.UpstreamMessage, "provisioned throughput") {
					t.Fatalf("want UPSTREAM_RATE_LIMITED, retryable, with a wait and DynamoDB's words quoted, got %+v", p)
				}
				told = *p.RetryAfterSeconds
			} else {
				if !first.env.HasReason(envelope.RateLimited) || first.env.Continuation.RetryAfterSeconds == nil {
					t.Fatalf("want RATE_LIMITED with a wait, got %v telling %v s", first.reasonCodes(), secs(first.env.Continuation.RetryAfterSeconds))
				}
				told = *first.env.Continuation.RetryAfterSeconds
			}
			if told != 5 || up.Count() != 3 {
				t.Fatalf("told %d s after %d request(s); want DynamoDB's throttle retried in the call like a 429, then 5 s", told, up.Count())
			}

			recovered.Store(true)
			clock.Advance(time.Duration(told-1) * time.Second)
			if again := h.call(tc.tool, tc.args); again.env.Complete || up.Count() != 3 {
				t.Fatalf("within the wait the upstream saw %d more request(s)", up.Count()-3)
			}
			clock.Advance(time.Second)
			done := h.call(tc.tool, tc.args)
			if done.env.Problem != nil || done.env.HasWarning(envelope.WarnAnsweredFromMemory) || up.Count() == 3 {
				t.Fatalf("after the wait the identical call must reach the recovered upstream: %+v %v", done.env.Problem, done.reasonCodes())
			}
		})
	}
}
