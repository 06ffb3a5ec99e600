package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
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
