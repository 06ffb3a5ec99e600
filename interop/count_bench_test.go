package interop

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
)

// BenchmarkClaimedCountPeer runs count.mjs: "how many of 100,000
// subscriptions are past_due?" (14,285, one in seven; 143 pages of 100)
// asked through the official TypeScript SDK's callTool over stdio, of
// airlock's search_all with count "claimed" (the upstream's stated total,
// read from the first page) and, when AIRLOCK_BENCH_PEER names a peer, of
// the peer's list operation, whose first page states the same total. Both
// read the same upstream (a local fixtures server, no added latency), in
// one node process with warm clients, called alternately, 15 times each;
// then airlock's verified count (every page), which must equal the claim,
// the peer's total and what the claim's continuation proves.
//
// claimed-ratio is airlock's claimed median over the peer's; claimed-ms,
// peer-ms, verified-ms are medians; claimed-bytes and peer-bytes the
// answer's text. The peer's command line is AIRLOCK_BENCH_PEER (its words
// split on spaces), to which the path of an OpenAPI document describing
// the upstream's list (path /x/offset/subscriptions; status, offset,
// limit; its servers' url the fixture's) is appended; its credential is in
// BEARER_TOKEN, which jedisct1/openapi-mcp reads, e.g.
// AIRLOCK_BENCH_PEER=/path/to/openapi-mcp.
func BenchmarkClaimedCountPeer(b *testing.B) {
	node := requireNodeFor(b, "claimed count benchmark")
	bin := buildAirlock(b)
	api := &fixtures.Server{}
	// Held as a list, as an API's index would be, so that filtering it is
	// not a synthetic collection's generation of every record per request.
	api.SetCollection(fixtures.DatasetSubscriptions, fixtures.NewCollection(fixtures.SyntheticSubscriptions(100_000, func(i int, r fixtures.Record) {
		if i%7 == 0 {
			r["status"] = "past_due"
		} else {
			r["status"] = "active"
		}
	}).All()))
	srv := httptest.NewServer(api)
	b.Cleanup(srv.Close)
	dir := b.TempDir()
	config := filepath.Join(dir, "airlock.yaml")
	cfg := fixtures.Config(srv.URL, fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectOffset, PageSize: 100})
	if err := os.WriteFile(config, cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	doc := filepath.Join(dir, "openapi.yaml")
	openapi := fmt.Sprintf(`openapi: 3.0.3
info: {title: subscriptions, version: "1"}
servers: [{url: %q}]
paths:
  /x/offset/subscriptions:
    get:
      operationId: listSubscriptions
      description: A page of subscriptions; total is the number matching the query.
      parameters:
        - {name: status, in: query, schema: {type: string}}
        - {name: offset, in: query, schema: {type: integer}}
        - {name: limit, in: query, schema: {type: integer}}
      responses: {"200": {description: "a page: items, total, offset, limit"}}
`, srv.URL)
	if err := os.WriteFile(doc, []byte(openapi), 0o600); err != nil {
		b.Fatal(err)
	}
	type side struct {
		Command   string         `json:"command"`
		Args      []string       `json:"args"`
		Tool      string         `json:"tool,omitempty"`
		Arguments map[string]any `json:"arguments"`
	}
	spec := map[string]any{
		"airlock": side{Command: bin, Args: []string{"serve", "--config", config},
			Arguments: map[string]any{"resource": "subs", "max_items": 0, "filter": map[string]any{"status": "past_due"}}},
		"runs":        15,
		"verify_runs": 3,
	}
	if cmdline := strings.Fields(os.Getenv("AIRLOCK_BENCH_PEER")); len(cmdline) > 0 {
		spec["peer"] = side{Command: cmdline[0], Args: append(cmdline[1:], doc), Tool: "listSubscriptions",
			Arguments: map[string]any{"status": "past_due", "limit": 100}}
	}
	specPath := filepath.Join(dir, "spec.json")
	raw, _ := json.Marshal(spec)
	if err := os.WriteFile(specPath, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	var f struct {
		Claimed       float64   `json:"claimed_ms"`
		Peer          float64   `json:"peer_ms"`
		Verified      float64   `json:"verified_ms"`
		ClaimedRuns   []float64 `json:"claimed_runs"`
		PeerRuns      []float64 `json:"peer_runs"`
		ClaimedTotal  int       `json:"claimed_total"`
		PeerTotal     int       `json:"peer_total"`
		VerifiedTotal int       `json:"verified_total"`
		FollowedTotal int       `json:"followed_total"`
		ClaimedBytes  float64   `json:"claimed_bytes"`
		PeerBytes     float64   `json:"peer_bytes"`
	}
	for b.Loop() {
		cmd := exec.CommandContext(b.Context(), node, "count.mjs", specPath)
		cmd.Env = append(os.Environ(), fixtures.DemoTokenEnv+"="+fixtures.DefaultToken, "BEARER_TOKEN="+fixtures.DefaultToken,
			"XDG_STATE_HOME="+b.TempDir(), "AIRLOCK_STORE=")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("count.mjs: %v", err)
		}
		if err := json.Unmarshal(out, &f); err != nil {
			b.Fatalf("count.mjs printed %q: %v", out, err)
		}
		const want = 14_285
		if f.ClaimedTotal != want || f.VerifiedTotal != want || f.FollowedTotal != want {
			b.Fatalf("claimed %d, verified %d, the claim's continuation %d; want %d", f.ClaimedTotal, f.VerifiedTotal, f.FollowedTotal, want)
		}
		if spec["peer"] != nil && f.PeerTotal != want {
			b.Fatalf("the peer's answer states a total of %d, want %d", f.PeerTotal, want)
		}
	}
	b.ReportMetric(f.Claimed, "claimed-ms")
	b.ReportMetric(f.Verified, "verified-ms")
	b.ReportMetric(f.ClaimedBytes, "claimed-bytes")
	if f.Peer > 0 {
		b.ReportMetric(f.Peer, "peer-ms")
		b.ReportMetric(f.Claimed/f.Peer, "claimed-ratio")
		b.ReportMetric(f.PeerBytes, "peer-bytes")
		b.Logf("claimed runs %v; peer runs %v", f.ClaimedRuns, f.PeerRuns)
	}
}
