package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkListToolsCompile runs listtools.mjs: the official TypeScript
// SDK's listTools() against `airlock serve --demo` over stdio, which
// compiles every tool's outputSchema with the SDK's Ajv. compile-ms is
// listTools' median less the raw tools/list round trip's (seven fresh
// processes), first-listtools-ms the first one's whole listTools,
// list-bytes the result's size. AIRLOCK_BENCH_PEER names a peer's command
// line to measure the same way in the same run (peer-compile-ms,
// peer-list-bytes), e.g. "openapi-mcp ../cmd/airlock/testdata/demo-openapi.yaml".
func BenchmarkListToolsCompile(b *testing.B) {
	node := requireNodeFor(b, "listTools benchmark")
	bin := buildAirlock(b)
	type figures struct {
		Bytes       float64 `json:"bytes"`
		Raw         float64 `json:"raw_ms"`
		ListTools   float64 `json:"listtools_ms"`
		Compile     float64 `json:"compile_ms"`
		FirstListed float64 `json:"first_listtools_ms"`
	}
	measure := func(command ...string) figures {
		out, err := exec.CommandContext(b.Context(), node, append([]string{"listtools.mjs"}, command...)...).Output()
		if err != nil {
			b.Fatalf("listtools.mjs %s: %v", strings.Join(command, " "), err)
		}
		var f figures
		if err := json.Unmarshal(out, &f); err != nil {
			b.Fatalf("listtools.mjs printed %q: %v", out, err)
		}
		return f
	}
	store := filepath.Join(b.TempDir(), "airlock.db")
	var ours, peer figures
	for b.Loop() {
		ours = measure(bin, "serve", "--demo", "--store", store)
		if cmdline := strings.Fields(os.Getenv("AIRLOCK_BENCH_PEER")); len(cmdline) > 0 {
			peer = measure(cmdline...)
		}
	}
	b.ReportMetric(ours.Compile, "compile-ms")
	b.ReportMetric(ours.ListTools, "listtools-ms")
	b.ReportMetric(ours.FirstListed, "first-listtools-ms")
	b.ReportMetric(ours.Bytes, "list-bytes")
	if peer.Bytes > 0 {
		b.ReportMetric(peer.Compile, "peer-compile-ms")
		b.ReportMetric(peer.Bytes, "peer-list-bytes")
	}
}
