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

// fastReconcile edits re-read the demo's writes whose outcome was not
// observed in rounds 10–40 ms apart instead of 0.25–4 s: the same rounds,
// in test time.
var fastReconcile = []string{
	"    description: Pause payment collection on a past-due subscription.\n",
	"    description: Pause payment collection on a past-due subscription.\n    reconcile: {backoff: 10ms, max_backoff: 40ms}\n",
	"    description: Assign an owning team to a service account without one.\n",
	"    description: Assign an owning team to a service account without one.\n    reconcile: {backoff: 10ms, max_backoff: 40ms}\n",
}

// TestTransientFailure_IdenticalCallBeforeTheWaitIsAnsweredFromMemory: a
// scan that met a 500 (retried twice) says to wait; the same call before
// the wait is over is answered from memory, with the wait left and the
// ANSWERED_FROM_MEMORY warning, and costs the upstream nothing; after the
// wait the upstream is called again.
func TestTransientFailure_IdenticalCallBeforeTheWaitIsAnsweredFromMemory(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	up, url := tooltest.ServeScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		tooltest.Answer(w, 500, "application/json", `{"error":"boom"}`)
	})
	h := newHarness(t, demoAt(url, fastRetries...), withClock(clock))
	args := map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "max_items": 0}
	first := h.call("search_all", args)
	wait := first.env.Continuation.RetryAfterSeconds
	if first.env.Continuation.Kind != envelope.ContinueRetryAfter || wait == nil || up.Count() != 3 {
		t.Fatalf("want retry_after after 3 requests, got %+v after %d", first.env.Continuation, up.Count())
	}
	clock.Advance(4 * time.Second)
	again := h.call("search_all", args)
	if up.Count() != 3 {
		t.Fatalf("the identical call reached the upstream (%d requests)", up.Count()-3)
	}
	if !again.env.HasWarning(envelope.WarnAnsweredFromMemory) || again.env.Continuation.RetryAfterSeconds == nil ||
		*again.env.Continuation.RetryAfterSeconds != *wait-4 || again.env.Continuation.Cursor != first.env.Continuation.Cursor {
		t.Fatalf("want the remembered answer with %d s left and the same cursor, got %+v %v", *wait-4, again.env.Continuation, again.env.Warnings)
	}
	other := h.call("search_all", map[string]any{"resource": "projects", "filter": map[string]any{"state": "active"}, "max_items": 0})
	if up.Count() != 6 || other.env.HasWarning(envelope.WarnAnsweredFromMemory) {
		t.Fatal("another call is not answered from memory")
	}
	clock.Advance(time.Duration(*wait) * time.Second)
	h.call("search_all", args)
	if up.Count() != 9 {
		t.Fatalf("after the wait the upstream is called again: %d requests", up.Count())
	}
}

// TestTransientProblem_IdenticalCallSaysItWasAnsweredFromMemoryAndUntilWhen:
// a named read that failed with a timeout is answered from memory until
// its wait is over; the problem says so in detail and remembered_until.
func TestTransientProblem_IdenticalCallSaysItWasAnsweredFromMemoryAndUntilWhen(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	up, url := tooltest.ServeScripted(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	h := newHarness(t, demoAt(url, append(fastRetries, "timeout: 5s", "timeout: 100ms")...), withClock(clock))
	first := h.call("preview_selection", explicitPreview("sa_00002"))
	p := first.env.Problem
	if p == nil || p.Code != envelope.ProblemUpstreamTimeout || p.RetryAfterSeconds == nil {
		t.Fatalf("want UPSTREAM_TIMEOUT with a wait, got %+v", p)
	}
	n := up.Count()
	clock.Advance(3 * time.Second)
	again := h.call("preview_selection", explicitPreview("sa_00002"))
	q := again.env.Problem
	if up.Count() != n || q == nil || q.Code != p.Code {
		t.Fatalf("want the remembered problem without a request, got %+v (%d requests)", q, up.Count()-n)
	}
	until, err := time.Parse(time.RFC3339, q.RememberedUntil)
	if err != nil || !strings.Contains(q.Detail, "answered from memory") || *q.RetryAfterSeconds != *p.RetryAfterSeconds-3 ||
		until.Sub(clock.Now()) > time.Duration(*q.RetryAfterSeconds)*time.Second {
		t.Fatalf("the problem must say it came from memory and until when: %+v", q)
	}
	if q.RequestID == p.RequestID {
		t.Fatal("each call keeps its own request id")
	}
}

// TestChangeableFailure_IsRememberedBrieflyAndPerCredential: a 401 is
// answered from memory only briefly (the upstream's state may change) and
// never for another credential; a rejected request is remembered longer.
func TestChangeableFailure_IsRememberedBrieflyAndPerCredential(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var status atomic.Int32
	status.Store(401)
	api := newFixture(t)
	up, url := tooltest.ServeScripted(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("owner") == "team-retired" {
			tooltest.Answer(w, 422, "application/json", `{"errors":[{"field":"owner"}]}`)
			return
		}
		if st := int(status.Load()); st != 0 {
			tooltest.Answer(w, st, "application/json", `{"error":"no"}`)
			return
		}
		api.ServeHTTP(w, r)
	})
	var fingerprint atomic.Value
	fingerprint.Store("credential-1")
	h := newHarness(t, demoAt(url), withClock(clock), withFingerprint(func() string { return fingerprint.Load().(string) }))
	args := map[string]any{"resource": "projects", "max_items": 0}
	if p := h.call("search_all", args).env.Problem; p == nil || p.Code != envelope.ProblemUpstreamAuth {
		t.Fatalf("want UPSTREAM_AUTH, got %+v", p)
	}
	n := up.Count()
	if p := h.call("search_all", args).env.Problem; p == nil || p.RememberedUntil == "" || up.Count() != n {
		t.Fatalf("an immediate repeat is answered from memory: %+v", p)
	}
	fingerprint.Store("credential-2") // the credential was rotated
	h.call("search_all", args)
	if up.Count() == n {
		t.Fatal("a call with another credential must reach the upstream")
	}
	status.Store(0) // the upstream recovered
	clock.Advance(ChangeableWindow + time.Second)
	if r := h.call("search_all", args); r.env.Problem != nil || !r.env.Complete {
		t.Fatalf("after the short window the recovered upstream answers: %+v", r.env.Problem)
	}
	rejected := map[string]any{"resource": "projects", "filter": map[string]any{"owner": "team-retired"}, "max_items": 0}
	h.call("search_all", rejected)
	n = up.Count()
	clock.Advance(ChangeableWindow + time.Second)
	if p := h.call("search_all", rejected).env.Problem; p == nil || p.Code != envelope.ProblemUpstreamRejected || up.Count() != n {
		t.Fatalf("a rejected request is remembered for the longer window: %+v", p)
	}
}
