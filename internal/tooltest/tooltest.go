// Package tooltest holds what the tests of the tools package (each tool's
// behaviour through Spec.Run) and of mcpserver (the same tools over the
// wire) both check every answer with: the codes the answers produced, the
// schemas they hold to, the numbers a double reads, the canary
// credentials, and an upstream whose every answer a test scripts. It is for
// tests only; it must never import tools or mcpserver (the tools package's
// own tests import it).
package tooltest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// The suites' credentials are canaries: no tool result, problem, log line
// or stored row may ever contain them.
const (
	// CanaryToken is the demo API's credential.
	CanaryToken = "cnry-3f9a1c7e-demo-credential"
	// CanaryAdmin is the demo API's administrator credential.
	CanaryAdmin = "cnry-b81d04aa-admin-credential"
)

// MaxResultBytes bounds a whole tool result (structured content and its
// text copy, as sent).
const MaxResultBytes = 32 << 10

// ProducedByTools are the registered problem, reason and warning codes
// whose only producing tests are the tools package's: its suite fails when
// one of them was produced by no result it saw, and mcpserver's leaves
// them to it. One list for both, kept by hand: a code whose last producing
// test moves between the packages moves here.
var ProducedByTools = []string{
	"ACTION_MISMATCH", "ALREADY_COMMITTED", "ANSWERED_FROM_MEMORY", "APPROVAL_CANCELLED", "APPROVAL_EXPIRED", "APPROVAL_MISMATCH",
	"CLAIM_UNAVAILABLE", "COMPENSATION_UNAVAILABLE", "CONFLICTING_EVIDENCE", "CONTRACT_VIOLATION", "CURSOR_EXPIRED",
	"DECLARATION_CONTRADICTED", "DEFAULT_SCOPE_APPLIED", "DEPRECATED_FIELD", "END_NOT_PROVEN", "ESTIMATED_TOTAL", "FIELD_DRIFT",
	"INCONSISTENT_SNAPSHOT", "NULL_LIKE_VALUES", "OPERATION_RUNNING", "PARTIAL_FIELD_SET", "SEARCH_MATCHES_UNVERIFIED",
	"SELECTION_NOT_COMMITTABLE", "SELECTION_STALE", "SIGNAL_UNREADABLE", "STALE_INDEX", "TIME_BUDGET_EXCEEDED", "UNKNOWN_ENUM_VALUE",
	"UPSTREAM_BAD_RESPONSE", "UPSTREAM_CLAIM_UNVERIFIED", "UPSTREAM_CONFLICT", "UPSTREAM_CONNECTION_FAILED",
	"UPSTREAM_CONTRACT_VIOLATION", "UPSTREAM_FORBIDDEN", "UPSTREAM_GRAPHQL_ERRORS", "UPSTREAM_NOT_FOUND",
	"UPSTREAM_REPORTED_INCOMPLETE", "UPSTREAM_RESPONSE_TOO_LARGE", "UPSTREAM_UNAVAILABLE", "UPSTREAM_WRITE_UNCONFIRMED",
	"VALUE_NORMALIZED",
}

var (
	producedMu sync.Mutex
	produced   = map[string]bool{}
)

// RecordCodes notes every stable code an answer (an envelope as JSON)
// carries: the call's problem, its incomplete reasons and warnings, and
// the per-target problems of an operation.
func RecordCodes(raw []byte) {
	type coded struct {
		Code string `json:"code"`
	}
	var env struct {
		Reasons  []coded `json:"incomplete_reasons"`
		Warnings []coded `json:"warnings"`
		Problem  *coded  `json:"problem"`
		Data     struct {
			Results []struct {
				Problem *coded `json:"problem"`
			} `json:"results"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &env) != nil {
		return
	}
	producedMu.Lock()
	defer producedMu.Unlock()
	if env.Problem != nil {
		produced[env.Problem.Code] = true
	}
	for _, c := range append(env.Reasons, env.Warnings...) {
		produced[c.Code] = true
	}
	for _, r := range env.Data.Results {
		if r.Problem != nil {
			produced[r.Problem.Code] = true
		}
	}
}

// Unproduced are the codes of want no recorded answer carried, or that
// are not registered codes at all, sorted.
func Unproduced(want []string) []string {
	registered := map[string]bool{}
	for _, c := range envelope.Codes() {
		registered[c.Code] = true
	}
	producedMu.Lock()
	defer producedMu.Unlock()
	var missing []string
	for _, c := range want {
		if !produced[c] || !registered[c] {
			missing = append(missing, c)
		}
	}
	sort.Strings(missing)
	return missing
}

// Produced says whether a recorded answer carried code.
func Produced(code string) bool {
	producedMu.Lock()
	defer producedMu.Unlock()
	return produced[code]
}

// validators caches compiled output schemas by their text: tests build
// many servers and directs with the same tools.
var validators sync.Map

// OutputValidator is schema compiled, once per name and text.
func OutputValidator(name string, schema []byte) (*envelope.Validator, error) {
	key := name + "\x00" + string(schema)
	if v, ok := validators.Load(key); ok {
		return v.(*envelope.Validator), nil
	}
	v, err := envelope.CompileSchema(name, schema)
	if err != nil {
		return nil, err
	}
	validators.Store(key, v)
	return v, nil
}

// FullEnvelope is the envelope's published schema, which every answer
// holds to besides its tool's compact output schema.
var FullEnvelope = sync.OnceValue(func() *envelope.Validator {
	v, err := envelope.CompileSchema("envelope-full", envelope.Schema())
	if err != nil {
		panic(err)
	}
	return v
})

// NoRoundedNumbers fails when v (decoded with its numbers as json.Number)
// holds a number a double would not read as itself.
func NoRoundedNumbers(t testing.TB, what string, v any) {
	t.Helper()
	var rounded []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case json.Number:
			if !jsonvalue.Interoperable(string(x)) {
				rounded = append(rounded, string(x))
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	if len(rounded) > 0 {
		t.Errorf("%s holds %d numbers a JavaScript client reads as others, such as %s", what, len(rounded), rounded[0])
	}
}

// SyncBuffer is a bytes buffer safe for concurrent writers (loggers).
type SyncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

// Bytes is a copy of everything written.
func (s *SyncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b...)
}

// MustJSON is v as JSON (nil when it cannot be).
func MustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Scripted is an upstream whose every answer a test decides; it records
// when each request arrived.
type Scripted struct {
	mu      sync.Mutex
	respond func(n int, w http.ResponseWriter, r *http.Request)
	seen    []time.Time
}

func (s *Scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, time.Now())
	n := len(s.seen)
	s.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	s.respond(n, w, r)
}

// Count is how many requests arrived.
func (s *Scripted) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// Times are when each request arrived.
func (s *Scripted) Times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.seen...)
}

// ServeScripted serves respond (given the request's number, from 1) until
// the test ends, and returns the upstream and its URL.
func ServeScripted(t testing.TB, respond func(n int, w http.ResponseWriter, r *http.Request)) (*Scripted, string) {
	t.Helper()
	s := &Scripted{respond: respond}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// Answer writes status, ctype (none when empty) and body, with headers
// (name, value pairs).
func Answer(w http.ResponseWriter, status int, ctype, body string, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	if ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
