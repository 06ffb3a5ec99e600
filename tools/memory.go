package tools

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// remembered are the failures that repeat verbatim: an identical call would
// meet the same answer, so airlock gives it without calling the upstream.
var remembered = map[string]bool{
	envelope.ProblemUpstreamAuth: true, envelope.ProblemUpstreamForbidden: true, envelope.ProblemUpstreamNotFound: true,
	envelope.ProblemUpstreamRejected: true, envelope.ProblemUpstreamBadResponse: true, envelope.ProblemUpstreamErrorInSuccess: true,
	envelope.ProblemUpstreamTooLarge: true, envelope.ProblemUpstreamContentType: true,
}

// ProblemMemory answers a call identical to one that failed with a
// non-retryable upstream problem, for a short window, from memory.
type ProblemMemory struct {
	mu      sync.Mutex
	clock   upstream.Clock
	ttl     time.Duration
	entries map[string]memoryEntry
}

type memoryEntry struct {
	problem envelope.Problem
	at      time.Time
}

// NewProblemMemory remembers failures for ttl.
func NewProblemMemory(clock upstream.Clock, ttl time.Duration) *ProblemMemory {
	return &ProblemMemory{clock: clock, ttl: ttl, entries: map[string]memoryEntry{}}
}

func memoryKey(tool string, raw json.RawMessage) (string, bool) {
	doc, err := envelope.DecodeJSON(raw)
	if err != nil {
		return "", false
	}
	b, err := selection.Canonical(doc)
	if err != nil {
		return "", false
	}
	return tool + "\x00" + string(b), true
}

func (m *ProblemMemory) recall(tool string, raw json.RawMessage, requestID string) *envelope.Problem {
	key, ok := memoryKey(tool, raw)
	if !ok {
		return nil
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.entries {
		if now.Sub(e.at) > m.ttl {
			delete(m.entries, k)
		}
	}
	e, ok := m.entries[key]
	if !ok {
		return nil
	}
	p := e.problem
	p.Errors = append([]envelope.FieldError(nil), e.problem.Errors...)
	p.Detail = fmt.Sprintf("%s airlock answered from memory: an identical call failed %d s ago (request %s) and this one did not reach the upstream.",
		e.problem.Detail, int(now.Sub(e.at).Seconds()), e.problem.RequestID)
	p.WithRequest(requestID)
	return &p
}

func (m *ProblemMemory) remember(tool string, raw json.RawMessage, p *envelope.Problem) {
	if p == nil || !remembered[p.Code] {
		return
	}
	key, ok := memoryKey(tool, raw)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) > 1000 {
		m.entries = map[string]memoryEntry{}
	}
	m.entries[key] = memoryEntry{problem: *p, at: m.clock.Now()}
}

// coolingDown answers from airlock's own state while an upstream recovers
// from a rate limit: the problem names the remaining wait.
func coolingDown(c *upstream.Client, write bool) *envelope.Envelope {
	wait := c.CoolingDown()
	if wait <= 0 {
		return nil
	}
	p := envelope.NewProblem(envelope.ProblemUpstreamRateLimited,
		"The upstream rate-limited airlock; airlock answered from its own state and did not call it.")
	p.SetRetryAfter(int((wait + time.Second - 1) / time.Second))
	if write {
		p.StateChanged = envelope.StateNone
	}
	return envelope.ErrorEnvelope(p)
}
