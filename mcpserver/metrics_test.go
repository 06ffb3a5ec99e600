package mcpserver

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/telemetry"
	"github.com/airlock-mcp/airlock/tools"
)

// withMetrics observes the server with metrics built from the harness's
// configuration (their labels take its names), set in *m.
func withMetrics(m **telemetry.Metrics) harnessOpt {
	return func(c *harnessCfg) {
		c.newMetrics = func(cfg *config.Config) *telemetry.Metrics { *m = telemetry.NewMetrics(cfg); return *m }
	}
}

func withTracing(t *telemetry.Tracing) harnessOpt { return func(c *harnessCfg) { c.tracing = t } }

// hostileCalls is a workload whose arguments hold values no label may
// take: unknown resources, ids and filter values made up by the caller,
// a failing upstream, a commit with approval and a dry run.
func hostileCalls(h *harness) {
	h.call("search_all", map[string]any{"resource": "caller-made-resource-7f3e"})
	h.call("search_all", map[string]any{"resource": "subscriptions", "filter": map[string]any{"region": "caller-made-region-7f3e"}})
	h.call("search_all", map[string]any{"resource": "projects", "max_items": 3, "max_pages": 1})
	h.call("get_operation", map[string]any{"operation_id": "op_caller-made-7f3e"})
	h.call("get_selection", map[string]any{"selection_id": "sel_caller-made-7f3e"})
	h.call("describe_resources", map[string]any{})
	p := h.call("preview_selection", seedPreview(nil))
	h.call("commit_bulk_action", commitArgsFor(p, "dry_run", map[string]any{"wait_ms": 30000}))
	h.call("commit_bulk_action", commitArgsFor(p, "execute", map[string]any{"wait_ms": 30000}))
	h.api.SetFaults(fixtures.DatasetServiceAccounts, fixtures.Faults{FailRequests: map[int]int{1: 503}})
	h.call("search_all", map[string]any{"resource": "service_accounts", "max_items": 2})
	h.deps.Engine.Wait()
}

// TestMetrics_LabelValuesComeFromFixedSets: after a workload full of
// caller-made values, every label of every airlock metric takes a value
// from a fixed set or the configuration, and no caller-made value appears
// anywhere in the exposition; the workload is counted.
func TestMetrics_LabelValuesComeFromFixedSets(t *testing.T) {
	t.Parallel()
	var m *telemetry.Metrics
	h := newHarness(t, withMetrics(&m))
	hostileCalls(h)

	tools := map[string]bool{"other": true}
	for _, s := range h.deps.Specs() {
		tools[s.Name] = true
	}
	allowed := map[string]func(string) bool{
		"tool":     func(v string) bool { return tools[v] },
		"status":   regexp.MustCompile(`^(complete|partial|error|input_required|task|other|[1-5]\d\d|[1-5]xx)$`).MatchString,
		"complete": func(v string) bool { return v == "true" || v == "false" },
		"retry":    func(v string) bool { return v == "true" || v == "false" },
		"upstream": func(v string) bool { return h.deps.Runtime.Upstreams[v] != nil || v == "other" },
		"resource": func(v string) bool { return h.deps.Runtime.Resources[v] != nil },
		"outcome": func(v string) bool {
			return slices.Contains([]selection.Outcome{selection.TargetPending, selection.TargetInFlight, selection.TargetSucceeded, selection.TargetFailed,
				selection.TargetSkipped, selection.TargetUnknown, selection.TargetWouldSucceed, selection.TargetWouldSkip, "other"}, selection.Outcome(v))
		},
		"channel": func(v string) bool {
			return slices.Contains([]string{selection.ChannelClient, selection.ChannelOperator, selection.ChannelReviewPage, "other"}, v)
		},
		"decision": func(v string) bool {
			return slices.Contains([]string{selection.DecisionApproved, selection.DecisionRejected, selection.DecisionDeclined, selection.DecisionCancelled, "other"}, v)
		},
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "airlock_") {
			continue
		}
		for _, metric := range f.GetMetric() {
			counted[f.GetName()] += value(metric)
			for _, l := range metric.GetLabel() {
				ok, known := allowed[l.GetName()]
				if !known {
					t.Errorf("%s has a label %q outside the known ones", f.GetName(), l.GetName())
					continue
				}
				if !ok(l.GetValue()) {
					t.Errorf("%s{%s=%q}: a value outside the label's fixed set", f.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
	for _, name := range []string{"airlock_tool_calls_total", "airlock_tool_call_duration_seconds", "airlock_answers_total",
		"airlock_upstream_requests_total", "airlock_scan_pages_total", "airlock_scan_items_total", "airlock_target_outcomes_total",
		"airlock_journal_write_duration_seconds", "airlock_approval_wait_seconds"} {
		if counted[name] == 0 {
			t.Errorf("%s counted nothing", name)
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, leak := range []string{"7f3e", "sel_", "op_", "apr_", canaryToken} {
		if strings.Contains(body, leak) {
			t.Errorf("the exposition holds %q", leak)
		}
	}
	if !strings.Contains(body, `airlock_upstream_requests_total{retry="true",status="200",upstream="demo"}`) {
		t.Errorf("the retried upstream request is not counted as a retry:\n%s", grep(body, "airlock_upstream_requests_total"))
	}
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestTracing_SpansPerCallAndUpstreamRequestHoldNoCredential: every tool
// call is a span, every upstream attempt a child span of the call that made
// it, and no attribute of any span holds the credential, a URL's path or
// query, or a caller-made value.
func TestTracing_SpansPerCallAndUpstreamRequestHoldNoCredential(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h := newHarness(t, withTracing(telemetry.NewTracing(tp)))
	hostileCalls(h)
	spans := exp.GetSpans()
	calls := map[string]bool{}
	var upstreamSpans, children int
	for _, s := range spans {
		for _, a := range s.Attributes {
			v := a.Value.String()
			for _, leak := range []string{canaryToken, "7f3e", "/v1/", "?", "Bearer"} {
				if strings.Contains(v, leak) {
					t.Errorf("span %q: attribute %s=%q holds %q", s.Name, a.Key, v, leak)
				}
			}
		}
		if strings.HasPrefix(s.Name, "tools/call ") {
			calls[s.SpanContext.SpanID().String()] = true
		}
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "upstream ") {
			upstreamSpans++
			if calls[s.Parent.SpanID().String()] {
				children++
			}
			if !calls[s.Parent.SpanID().String()] && s.Parent.IsValid() && s.Name != "upstream POST" {
				t.Errorf("the upstream span %q is not the child of a tool call", s.Name)
			}
		}
	}
	if len(calls) < 10 || upstreamSpans == 0 || children == 0 {
		t.Fatalf("%d tool call spans and %d upstream spans, %d of them children of a call", len(calls), upstreamSpans, children)
	}
}

// TestProbes_HealthAnswersWithoutTokenAndReadinessFollowsTheStore:
// /healthz answers without the bearer token the MCP endpoint requires;
// /readyz is ready while the store answers with the schema this airlock
// knows, found under the redacting wrapper, and 503 once it does not.
func TestProbes_HealthAnswersWithoutTokenAndReadinessFollowsTheStore(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(bareDeps(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(NewHTTPHandler(srv, HTTPOptions{Options: httpserve.Options{Token: "secret-token-for-probes", Probes: httpserve.HealthHandlers(selection.Redacting(st, nil))}}))
	t.Cleanup(hs.Close)
	get := func(path string) int {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/healthz"); c != http.StatusOK {
		t.Fatalf("/healthz: %d", c)
	}
	if c := get("/readyz"); c != http.StatusOK {
		t.Fatalf("/readyz with a live store: %d", c)
	}
	if c := get("/mcp"); c != http.StatusUnauthorized {
		t.Fatalf("/mcp without the token: %d", c)
	}
	st.Close()
	if c := get("/readyz"); c != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with a closed store: %d", c)
	}
}

// TestToolsList_CarriesCacheHintsOnTheNewestProtocol: tools/list of
// protocol 2026-07-28 says how long the list may be reused, privately
// (which tools a caller sees may depend on who asks).
func TestToolsList_CarriesCacheHintsOnTheNewestProtocol(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	rpc := h.taskRPC()
	res, e := rpc.send("tools/list", map[string]any{})
	if e != nil {
		t.Fatalf("tools/list: %v", e)
	}
	var list struct {
		TTL   *int64 `json:"ttlMs"`
		Scope string `json:"cacheScope"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		t.Fatal(err)
	}
	if list.TTL == nil || time.Duration(*list.TTL)*time.Millisecond != ToolsListTTL || list.Scope != string(mcp.CacheScopePrivate) {
		t.Fatalf("tools/list hints: ttlMs %v, cacheScope %q", list.TTL, list.Scope)
	}
}

// TestMetricsListener_GuardedLikeMCP: the metrics listener refuses what
// /mcp refuses: a foreign Origin, a foreign Host on a loopback listener
// (403), and, off loopback, a request without the metrics token or an
// access token of the OAuth resource server (401); Prometheus scrapes with
// either, and the probes answer without one.
func TestMetricsListener_GuardedLikeMCP(t *testing.T) {
	t.Parallel()
	lab := newOAuthLab(t)
	m := telemetry.NewMetrics(nil)
	probe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	h := httpserve.MetricsHandler(m.Handler(), httpserve.Options{Token: "scrape-s3cret", OAuth: lab.oauth, Probes: map[string]http.Handler{"/healthz": probe}})
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9090}
	public := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 9090}
	for _, tc := range []struct {
		name   string
		local  net.Addr
		path   string
		host   string
		header map[string]string
		want   int
	}{
		{"loopback, a foreign Host", loopback, "/metrics", "metrics.attacker.example", map[string]string{"Authorization": "Bearer scrape-s3cret"}, http.StatusForbidden},
		{"loopback, a foreign Origin", loopback, "/metrics", "127.0.0.1:9090", map[string]string{"Authorization": "Bearer scrape-s3cret", "Origin": "https://attacker.example"}, http.StatusForbidden},
		{"off loopback, no token", public, "/metrics", "10.0.0.7:9090", nil, http.StatusUnauthorized},
		{"off loopback, a wrong token", public, "/metrics", "10.0.0.7:9090", map[string]string{"Authorization": "Bearer scrape-wrong"}, http.StatusUnauthorized},
		{"off loopback, the metrics token", public, "/metrics", "10.0.0.7:9090", map[string]string{"Authorization": "Bearer scrape-s3cret"}, http.StatusOK},
		{"off loopback, an access token", public, "/metrics", "10.0.0.7:9090", map[string]string{"Authorization": "Bearer " + lab.token(t, "prometheus", tools.ScopeRead)}, http.StatusOK},
		{"off loopback, the probe without a token", public, "/healthz", "10.0.0.7:9090", nil, http.StatusOK},
	} {
		req := httptest.NewRequestWithContext(context.WithValue(t.Context(), http.LocalAddrContextKey, tc.local), http.MethodGet, tc.path, nil)
		req.Host = tc.host
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, rec.Code, tc.want)
		}
		if got := strings.Contains(rec.Body.String(), "go_goroutines"); got != (tc.want == http.StatusOK && tc.path == "/metrics") {
			t.Errorf("%s: metrics in the answer: %v", tc.name, got)
		}
	}
}
