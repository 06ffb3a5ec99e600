package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/httpserve"
)

// TestServe_ServesProbesAndMetrics: serve --http answers the probes on its
// own address, and --metrics serves the Prometheus metrics (and the probes)
// on a second one, counting the calls made.
func TestServe_ServesProbesAndMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process; skipped with -short")
	}
	s := newReplicaSetup(t, storeKinds[0], nil)
	metrics := freePort(t)
	srv := startChildEnv(t, s.config, filepath.Join(t.TempDir(), "airlock.db"), nil, "--metrics", metrics)
	base := strings.TrimSuffix(srv.url, "/mcp")
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, u := range []string{base + "/healthz", base + "/readyz", "http://" + metrics + "/healthz", "http://" + metrics + "/readyz"} {
		if code, body := get(u); code != http.StatusOK {
			t.Fatalf("%s: %d %s", u, code, body)
		}
	}
	c := connect(t, srv.url)
	defer c.Close()
	callData(t, c, "search_all", map[string]any{"resource": "projects", "max_items": 2})
	code, body := get("http://" + metrics + "/metrics")
	for _, want := range []string{`airlock_tool_calls_total{status="partial",tool="search_all"} 1`, `airlock_scan_pages_total{resource="projects"}`,
		`airlock_upstream_requests_total{retry="false",status="200",upstream="demo"}`, "go_goroutines"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("/metrics (%d) lacks %s:\n%s", code, want, body)
		}
	}
}

// TestServe_MetricsListenerIsGuardedLikeMCP: the metrics listener answers
// a foreign Host (DNS rebinding) and a foreign Origin 403 as /mcp does,
// and, with AIRLOCK_METRICS_TOKEN set, serves /metrics only to a request
// that carries it; Prometheus scrapes with the token, and the probes
// answer without one.
func TestServe_MetricsListenerIsGuardedLikeMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process; skipped with -short")
	}
	const token = "scrape-7f3e-token-of-the-metrics-listener"
	s := newReplicaSetup(t, storeKinds[0], nil)
	metrics := freePort(t)
	startChildEnv(t, s.config, filepath.Join(t.TempDir(), "airlock.db"), []string{"AIRLOCK_METRICS_TOKEN=" + token}, "--metrics", metrics)
	get := func(path string, header map[string]string, host string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, "http://"+metrics+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	bearer := map[string]string{"Authorization": "Bearer " + token}
	for _, tc := range []struct {
		name   string
		header map[string]string
		host   string
		want   int
	}{
		{"a foreign Host (DNS rebinding), with the token", bearer, "metrics.attacker.example:80", http.StatusForbidden},
		{"a foreign Origin, with the token", map[string]string{"Authorization": "Bearer " + token, "Origin": "https://attacker.example"}, "", http.StatusForbidden},
		{"no token", nil, "", http.StatusUnauthorized},
		{"a wrong token", map[string]string{"Authorization": "Bearer not-" + token}, "", http.StatusUnauthorized},
		{"the token", bearer, "", http.StatusOK},
	} {
		code, body := get("/metrics", tc.header, tc.host)
		if code != tc.want {
			t.Errorf("%s: /metrics answered %d, want %d", tc.name, code, tc.want)
		}
		if tc.want != http.StatusOK && strings.Contains(body, "airlock_") {
			t.Errorf("%s: refused, yet the answer holds metrics:\n%s", tc.name, body)
		}
		if tc.want == http.StatusOK && !strings.Contains(body, "go_goroutines") {
			t.Errorf("%s: the scrape lacks the metrics:\n%s", tc.name, body)
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := get(p, nil, ""); code != http.StatusOK {
			t.Errorf("%s without a token: %d %s", p, code, body)
		}
	}
}

// TestServe_RefusesPublicMetricsAddressWithoutToken: --metrics on a
// non-loopback address starts nothing unless a token guards it
// (AIRLOCK_METRICS_TOKEN, or OAuth), as --http is refused without one.
func TestServe_RefusesPublicMetricsAddressWithoutToken(t *testing.T) {
	t.Setenv("AIRLOCK_METRICS_TOKEN", "")
	t.Setenv("AIRLOCK_HTTP_TOKEN", "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out, errb bytes.Buffer
	code := run([]string{"serve", "--demo", "--http", "127.0.0.1:0", "--metrics", "0.0.0.0:0"}, nil, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "AIRLOCK_METRICS_TOKEN") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestServe_FreshMetricsListEveryFamily: before any call, the metrics
// listener of a server built for the demo configuration exposes every
// airlock family, at zero, for the demo's resources and every tool, so
// that a dashboard on a fresh replica reads 0, not no data.
func TestServe_FreshMetricsListEveryFamily(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	cfg, err := config.Parse(fixtures.DemoConfig("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := newOperability(t.Context(), slog.New(slog.DiscardHandler), cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpserve.MetricsHandler(ops.metrics.Handler(), httpserve.Options{}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	for _, family := range []string{"airlock_tool_calls_total", "airlock_tool_call_duration_seconds", "airlock_answers_total",
		"airlock_upstream_requests_total", "airlock_upstream_request_duration_seconds", "airlock_scan_pages_total", "airlock_scan_items_total",
		"airlock_target_outcomes_total", "airlock_journal_write_duration_seconds", "airlock_journal_write_errors_total",
		"airlock_lease_takeovers_total", "airlock_approval_wait_seconds"} {
		if !strings.Contains(body, "\n"+family) {
			t.Errorf("a fresh /metrics lacks %s", family)
		}
	}
	if families := strings.Count(body, "# TYPE airlock_"); families != 12 {
		t.Errorf("a fresh /metrics has %d airlock families, this test knows 12: add the new one above", families)
	}
	want := []string{`airlock_tool_calls_total{status="complete",tool="describe_resources"} 0`, `airlock_upstream_requests_total{retry="false",status="200",upstream="demo"} 0`}
	for name := range cfg.Resources {
		want = append(want, `airlock_scan_pages_total{resource="`+name+`"} 0`)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("a fresh /metrics lacks %s", w)
		}
	}
}
