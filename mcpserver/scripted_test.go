package mcpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
)

// scripted is an upstream whose every answer a test decides; it records
// when each request arrived.
type scripted struct {
	mu      sync.Mutex
	respond func(n int, w http.ResponseWriter, r *http.Request)
	seen    []time.Time
	paths   []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, time.Now())
	s.paths = append(s.paths, r.URL.String())
	n := len(s.seen)
	s.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	s.respond(n, w, r)
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func serveScripted(t testing.TB, respond func(n int, w http.ResponseWriter, r *http.Request)) (*scripted, string) {
	t.Helper()
	s := &scripted{respond: respond}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func answer(w http.ResponseWriter, status int, ctype, body string, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	if ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func demoAt(url string, edits ...string) harnessOpt {
	return withConfig(func(string) []byte {
		y := string(fixtures.DemoConfig(url))
		for i := 0; i+1 < len(edits); i += 2 {
			y = strings.Replace(y, edits[i], edits[i+1], 1)
		}
		return []byte(y)
	})
}

var assignOwner = map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}

func explicitPreview(ids ...any) map[string]any {
	return map[string]any{"resource": "service_accounts", "ids": ids, "action": assignOwner}
}
