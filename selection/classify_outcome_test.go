package selection

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
	"github.com/airlock-mcp/airlock/write"
)

// journalOnly is the store a classifier table test needs: it keeps the
// journal's entries; any other call panics (the classifier makes none).
type journalOnly struct {
	Store
	mu      sync.Mutex
	entries []Target
}

func (s *journalOnly) Journal(_ context.Context, _ Lease, es []Target) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, es...)
	return nil
}

// TestClassify_OutcomeOfEveryAnswer is the write outcome table: what each
// answer to an attempt makes of the target, with and without an earlier
// attempt whose outcome was not observed. A refusal is final only when no
// earlier attempt may have applied.
func TestClassify_OutcomeOfEveryAnswer(t *testing.T) {
	t.Parallel()
	status := func(st int) error { return &transport.HTTPError{Kind: transport.FailStatus, Status: st, Sent: true} }
	ok := func(st int, body string) *transport.Response {
		return &transport.Response{Status: st, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
	}
	for _, tc := range []struct {
		name    string
		resp    *transport.Response
		err     error
		landed  bool // an earlier attempt was not observed
		want    Outcome
		changed string // problem.state_changed ("" without a problem)
		stops   bool
	}{
		// Only the target's own record, showing the change and every other
		// declared field as the preview read it, proves a write.
		{"200 with the target's record", ok(200, `{"id":"t","status":"archived","name":"Ada"}`), nil, false, TargetSucceeded, "", false},
		{"200 with another record", ok(200, `{"id":"u","status":"archived","name":"Ada"}`), nil, false, TargetUnknown, envelope.StateUnknown, false},
		{"200 with the target unchanged", ok(200, `{"id":"t","status":"active","name":"Ada"}`), nil, false, TargetUnknown, envelope.StateUnknown, false},
		{"200 with another field changed", ok(200, `{"id":"t","status":"archived"}`), nil, false, TargetUnknown, envelope.StateUnknown, false},
		{"200 {}", ok(200, `{}`), nil, false, TargetUnknown, envelope.StateUnknown, false},
		{"200 with a bare id", ok(200, `{"id":"t"}`), nil, false, TargetUnknown, envelope.StateUnknown, false},
		{"204 empty", ok(204, ``), nil, false, TargetUnknown, envelope.StateUnknown, false},
		{"202 accepted", ok(202, `{"queued":true}`), nil, false, TargetUnknown, envelope.StateUnknown, false},
		{"2xx with an error body", ok(200, `{"error":{"message":"queue full"}}`), nil, false, TargetUnknown, envelope.StateUnknown, false},
		{"timeout after sending", nil, &transport.HTTPError{Kind: transport.FailTimeout, Sent: true}, false, TargetUnknown, envelope.StateUnknown, false},
		{"cancelled before sending", nil, &transport.HTTPError{Kind: transport.FailCanceled}, false, TargetPending, "", false},
		{"connection refused", nil, &transport.HTTPError{Kind: transport.FailConnection}, false, TargetFailed, envelope.StateNone, false},
		{"connection refused after an unobserved attempt", nil, &transport.HTTPError{Kind: transport.FailConnection}, true, TargetUnknown, envelope.StateUnknown, false},
		{"connection broken after sending", nil, &transport.HTTPError{Kind: transport.FailConnection, Sent: true}, false, TargetUnknown, envelope.StateUnknown, false},
		{"404", nil, status(404), false, TargetSkipped, envelope.StateNone, false},
		{"404 after an unobserved attempt", nil, status(404), true, TargetUnknown, envelope.StateUnknown, false},
		{"409", nil, status(409), false, TargetSkipped, envelope.StateNone, false},
		{"409 after an unobserved attempt", nil, status(409), true, TargetUnknown, envelope.StateUnknown, false},
		{"412", nil, status(412), false, TargetSkipped, envelope.StateNone, false},
		{"412 after an unobserved attempt", nil, status(412), true, TargetUnknown, envelope.StateUnknown, false},
		{"422", nil, status(422), false, TargetFailed, envelope.StateNone, false},
		{"422 after an unobserved attempt", nil, status(422), true, TargetUnknown, envelope.StateUnknown, false},
		{"429", nil, status(429), false, TargetPending, "", false},
		{"401", nil, status(401), false, TargetFailed, envelope.StateNone, true},
		{"403 after an unobserved attempt", nil, status(403), true, TargetUnknown, envelope.StateUnknown, true},
		{"500", nil, status(500), false, TargetUnknown, envelope.StateUnknown, false},
		{"307", nil, status(307), false, TargetUnknown, envelope.StateUnknown, true},
		{"418", nil, status(418), false, TargetUnknown, envelope.StateUnknown, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &journalOnly{}
			res := &upstream.Resource{Name: "r", List: dialect.List{Config: config.ResourceConfig{IDField: "id", Fields: map[string]*config.FieldConfig{
				"id": {Type: "string"}, "status": {Type: "string"}, "name": {Type: "string"}}}}}
			a := &upstream.Action{Name: "a", Resource: res, Config: config.ActionConfig{Stop: config.StopConfig{FailureRatio: 0.5, MinAttempts: 20},
				Effect: []config.EffectConfig{{Field: "status", To: "archived"}}}}
			e := &Engine{Clock: upstream.WallClock, MaxRateLimitPause: time.Minute}
			r := &run{e: e, op: &Operation{ID: "op"}, a: a, done: make(chan struct{}), after: map[string]any{"status": "archived"}}
			r.fence = newFence(Lease{OperationID: "op", Epoch: 1, Expires: time.Now().Add(time.Hour)}, e.Clock, time.Hour)
			r.j = newJournal(st, r.fence, e.Clock, func([]AuditEvent) {})
			target := Target{ID: "t", Attempts: 1, Before: map[string]any{"status": "active"}}
			target.Frame = write.FrameOf(a, map[string]any{"id": "t", "status": "active", "name": "Ada"})
			if tc.landed {
				target.Attempts, target.Unobserved = 2, 1
			}
			r.classify(target, tc.resp, tc.err)
			if err := r.j.close(); err != nil {
				t.Fatal(err)
			}
			if len(st.entries) != 1 {
				t.Fatalf("%d journal entries, want 1", len(st.entries))
			}
			got := st.entries[0]
			if got.Outcome != tc.want {
				t.Errorf("outcome %s (%q), want %s", got.Outcome, got.Note, tc.want)
			}
			if changed := ""; got.Problem != nil {
				changed = got.Problem.StateChanged
				if changed != tc.changed {
					t.Errorf("state_changed %q, want %q", changed, tc.changed)
				}
			} else if tc.changed != "" {
				t.Errorf("no problem, want state_changed %q", tc.changed)
			}
			if r.stopped.Load() != tc.stops {
				t.Errorf("stopped %v (%q), want %v", r.stopped.Load(), r.stopReason, tc.stops)
			}
			// This attempt adds an unobserved one unless it was answered
			// (a refusal, a success) or never sent.
			wantUnobserved := target.Unobserved
			if tc.want == TargetUnknown && !isRefusal(tc.err) {
				wantUnobserved++
			}
			if got.Unobserved != wantUnobserved {
				t.Errorf("unobserved_attempts %d, want %d", got.Unobserved, wantUnobserved)
			}
		})
	}
}

// isRefusal reports an attempt that was answered with a refusal airlock
// knows (an unexpected status, such as 418, is not one) or that never left:
// nothing of it can have applied.
func isRefusal(err error) bool {
	he, ok := err.(*transport.HTTPError)
	if !ok {
		return false
	}
	switch {
	case he.Kind == transport.FailConnection:
		return !he.Sent
	case he.Kind != transport.FailStatus:
		return false
	}
	switch he.Status {
	case 400, 401, 403, 404, 409, 412, 422, 429:
		return true
	}
	return false
}
