package mcpserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/tooltest"
)

// failureMode is an upstream that fails one way on every request.
type failureMode struct {
	name    string
	respond func(w http.ResponseWriter, r *http.Request)
	edits   []string
}

func failureModes() []failureMode {
	json := "application/json"
	return []failureMode{
		{"validation_422", func(w http.ResponseWriter, _ *http.Request) {
			tooltest.Answer(w, 422, json, `{"errors":[{"field":"state","message":"invalid"}]}`)
		}, nil},
		{"rate_limited_429", func(w http.ResponseWriter, _ *http.Request) {
			tooltest.Answer(w, 429, json, `{"error":"slow down"}`, "Retry-After", "30")
		}, nil},
		{"server_error_500", func(w http.ResponseWriter, _ *http.Request) {
			tooltest.Answer(w, 500, json, `{"error":"boom"}`)
		}, nil},
		{"unauthorized_401", func(w http.ResponseWriter, _ *http.Request) {
			tooltest.Answer(w, 401, json, `{"error":"bad token"}`)
		}, nil},
		{"malformed_body", func(w http.ResponseWriter, _ *http.Request) {
			tooltest.Answer(w, 200, json, `{"items": [`)
		}, nil},
		{"error_behind_200", func(w http.ResponseWriter, _ *http.Request) {
			tooltest.Answer(w, 200, json, `{"error":{"code":503,"message":"backend down"}}`)
		}, nil},
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
			}
		}, []string{"timeout: 5s", "timeout: 100ms"}},
	}
}

// naiveRead is the wrapper airlock replaces: retry any failure at once, up
// to five attempts, and call a 2xx with a JSON body a success.
func naiveRead(url string) (requests int, actionable bool) {
	client := &http.Client{Timeout: 100 * time.Millisecond}
	for attempt := 0; attempt < 5; attempt++ {
		requests++
		resp, err := client.Get(url + "/v1/projects?per_page=100")
		if err != nil {
			continue
		}
		var body any
		decodeErr := json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode/100 == 2 && decodeErr == nil {
			// A 200 holding an error is taken for an empty success.
			return requests, false
		}
	}
	return requests, false
}

// BenchmarkFailureModes counts, per failure mode, the upstream requests
// before the agent holds an answer it can act on, for airlock and for a
// naive retry loop, over one call and over three identical calls (an agent
// that insists). The counts are deterministic; the benchmark is the place
// for them because they are measurements, not assertions.
func BenchmarkFailureModes(b *testing.B) {
	for _, fm := range failureModes() {
		b.Run(fm.name+"/airlock", func(b *testing.B) {
			var first, three, actionable float64
			for i := 0; i < b.N; i++ {
				up, url := tooltest.ServeScripted(b, func(_ int, w http.ResponseWriter, r *http.Request) { fm.respond(w, r) })
				edits := append([]string{"retries: 2", "retries: 2\n    backoff: {min: 1ms, max: 5ms}"}, fm.edits...)
				h := newHarness(b, demoAt(url, edits...))
				args := map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "max_items": 0}
				r := h.call("search_all", args)
				first += float64(up.Count())
				if isActionable(r.env) {
					actionable++
				}
				h.call("search_all", args)
				h.call("search_all", args)
				three += float64(up.Count())
			}
			n := float64(b.N)
			b.ReportMetric(first/n, "requests-first-answer")
			b.ReportMetric(three/n, "requests-3-calls")
			b.ReportMetric(actionable/n, "actionable")
		})
		b.Run(fm.name+"/naive", func(b *testing.B) {
			var first, three, actionable float64
			for i := 0; i < b.N; i++ {
				up, url := tooltest.ServeScripted(b, func(_ int, w http.ResponseWriter, r *http.Request) { fm.respond(w, r) })
				n, ok := naiveRead(url)
				first += float64(n)
				if ok {
					actionable++
				}
				naiveRead(url)
				naiveRead(url)
				three += float64(up.Count())
			}
			n := float64(b.N)
			b.ReportMetric(first/n, "requests-first-answer")
			b.ReportMetric(three/n, "requests-3-calls")
			b.ReportMetric(actionable/n, "actionable")
		})
	}
}

// isActionable: the agent knows what to do from codes alone: a problem
// with retryable and next_action, or a partial answer whose reasons and
// continuation name the route.
func isActionable(env *envelope.Envelope) bool {
	if env.Problem != nil {
		return env.Problem.NextAction != "" && !strings.Contains(env.Problem.NextAction, "{")
	}
	return !env.Complete && len(env.IncompleteReasons) > 0 && env.Continuation.Kind != ""
}
