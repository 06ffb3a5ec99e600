package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// verbatim are the failures an identical call meets again as long as
// nothing about the call or the credential changes: the upstream refused
// what airlock sent, or answered in a shape the configuration rules out.
var verbatim = map[envelope.ProblemCode]bool{
	envelope.ProblemUpstreamRejected: true, envelope.ProblemUpstreamBadResponse: true, envelope.ProblemUpstreamTooLarge: true,
}

// changeable are the failures the upstream's state decides (a permission
// granted, a credential re-enabled, a maintenance page taken down): they
// are remembered for a short window only.
var changeable = map[envelope.ProblemCode]bool{
	envelope.ProblemUpstreamAuth: true, envelope.ProblemUpstreamForbidden: true, envelope.ProblemUpstreamNotFound: true,
	envelope.ProblemUpstreamContentType: true, envelope.ProblemUpstreamErrorInSuccess: true, envelope.ProblemUpstreamGraphQL: true,
}

// ChangeableWindow is how long a failure the upstream's state decides
// (401, 403, 404, a login page, an error behind a 200) is answered from
// memory.
const ChangeableWindow = 10 * time.Second

// ProblemMemory answers a call identical to one that recently failed
// without calling the upstream again:
//   - a failure that repeats verbatim (a rejected request, a body of the
//     wrong shape) for the memory's window (60 s by default);
//   - a failure the upstream's state decides (401, 403, 404, ...) for
//     ChangeableWindow;
//   - a transient failure that named a wait (retry_after_seconds: a 5xx, a
//     timeout, a rate limit) until that wait is over, with the wait left.
//
// Answers are keyed on the tool, the canonical arguments and Fingerprint
// (the credentials in use): a call made with another credential is not
// answered from memory. A remembered problem says so in its detail and in
// remembered_until; a remembered partial answer carries the warning
// ANSWERED_FROM_MEMORY. Calls of tools that write are never answered from
// memory for a transient failure.
type ProblemMemory struct {
	mu      sync.Mutex
	clock   upstream.Clock
	ttl     time.Duration
	entries map[string]memoryEntry
	// fingerprint names what an answer depends on besides the call (the
	// credentials airlock sends); nil means nothing.
	fingerprint func() string
}

type memoryEntry struct {
	env       []byte // the envelope as it was answered
	at, until time.Time
}

// maxMemory bounds the entries kept; past it the memory starts over.
const maxMemory = 1000

// NewProblemMemory remembers verbatim failures for ttl.
func NewProblemMemory(clock upstream.Clock, ttl time.Duration) *ProblemMemory {
	return &ProblemMemory{clock: clock, ttl: ttl, entries: map[string]memoryEntry{}}
}

func (m *ProblemMemory) key(tool string, raw json.RawMessage) (string, bool) {
	doc, err := envelope.DecodeJSON(raw)
	if err != nil {
		return "", false
	}
	b, err := jsonvalue.Canonical(doc)
	if err != nil {
		return "", false
	}
	fp := ""
	if m.fingerprint != nil {
		fp = m.fingerprint()
	}
	return tool + "\x00" + fp + "\x00" + string(b), true
}

// window says until when an answer is remembered (zero: it is not).
func (m *ProblemMemory) window(s Spec, env *envelope.Envelope, now time.Time) time.Time {
	if p := env.Problem; p != nil {
		switch {
		case verbatim[p.Code]:
			return now.Add(m.ttl)
		case changeable[p.Code]:
			return now.Add(min(m.ttl, ChangeableWindow))
		case !s.Writes && p.Retryable && p.RetryAfterSeconds != nil && strings.HasPrefix(string(p.Code), "UPSTREAM_"):
			return now.Add(time.Duration(*p.RetryAfterSeconds) * time.Second)
		}
		return time.Time{}
	}
	if !s.Writes && env.Status == envelope.StatusPartial && env.Continuation.Kind == envelope.ContinueRetryAfter && env.Continuation.RetryAfterSeconds != nil {
		return now.Add(time.Duration(*env.Continuation.RetryAfterSeconds) * time.Second)
	}
	return time.Time{}
}

// Remember keeps env, s's answer to a call with arguments raw, when it is
// an answer an identical call would get again before its window ends.
func (m *ProblemMemory) Remember(s Spec, raw json.RawMessage, env *envelope.Envelope) {
	now := m.clock.Now()
	until := m.window(s, env, now)
	if !until.After(now) {
		return
	}
	key, ok := m.key(s.Name, raw)
	if !ok {
		return
	}
	b := env.Marshal()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) >= maxMemory {
		m.entries = map[string]memoryEntry{}
	}
	m.entries[key] = memoryEntry{env: b, at: now, until: until}
}

// Recall returns the remembered answer to an identical call of s, updated
// to now (the wait left, when it was remembered, until when) and to the
// request requestID, or nil.
func (m *ProblemMemory) Recall(s Spec, raw json.RawMessage, requestID string) *envelope.Envelope {
	key, ok := m.key(s.Name, raw)
	if !ok {
		return nil
	}
	now := m.clock.Now()
	m.mu.Lock()
	for k, e := range m.entries {
		if !now.Before(e.until) {
			delete(m.entries, k)
		}
	}
	e, ok := m.entries[key]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	var env envelope.Envelope
	dec := json.NewDecoder(bytes.NewReader(e.env))
	dec.UseNumber()
	if dec.Decode(&env) != nil {
		return nil
	}
	left := transport.WaitSeconds(e.until.Sub(now))
	ago := int(now.Sub(e.at).Seconds())
	if p := env.Problem; p != nil {
		p.Detail = fmt.Sprintf("%s airlock answered from memory: an identical call failed %d s ago (request %s); this one did not reach the upstream.",
			p.Detail, ago, p.RequestID)
		p.RememberedUntil = e.until.UTC().Format(time.RFC3339)
		if p.RetryAfterSeconds != nil {
			p.SetRetryAfter(left)
		}
		p.WithRequest(requestID)
		return &env
	}
	env.Continuation.RetryAfterSeconds = envelope.Ptr(left)
	for i := range env.IncompleteReasons {
		if env.IncompleteReasons[i].RetryAfterSeconds != nil {
			env.IncompleteReasons[i].RetryAfterSeconds = envelope.Ptr(left)
		}
	}
	w := envelope.NewWarning(envelope.WarnAnsweredFromMemory, "airlock")
	w.Revision = e.at.UTC().Format(time.RFC3339)
	env.Warnings = append(env.Warnings, w)
	return &env
}

// coolingDown answers from airlock's own state while an upstream recovers
// from a rate limit: the problem names the remaining wait.
func coolingDown(c *transport.Client, write bool) *envelope.Envelope {
	wait := c.CoolingDown()
	if wait <= 0 {
		return nil
	}
	p := envelope.NewProblem(envelope.ProblemUpstreamRateLimited,
		"The upstream rate-limited airlock; airlock answered from its own state and did not call it.")
	p.SetRetryAfter(transport.WaitSeconds(wait))
	if write {
		p.StateChanged = envelope.StateNone
	}
	return envelope.ErrorEnvelope(p)
}
