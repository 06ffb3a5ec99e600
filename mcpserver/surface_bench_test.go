package mcpserver

// Benchmarks of what airlock costs a model: the tool surface as a client
// lists it and the answers it reads. Token counts are bytes/4 (no tokenizer
// is served to this module): an o200k tokenizer counts JSON and English at
// about 4.4 bytes a token, so bytes/4 overstates them slightly. Run them
// with scripts/bench; docs/benchmarks.md explains every metric.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/tools"
)

// tokens estimates the tokens of b as bytes/4, rounded up.
func tokens(b []byte) float64 { return float64((len(b) + 3) / 4) }

// surfaceCost is what a tools/list answer, as the server sends it, costs:
// the part a model reads (names, descriptions, input schemas) and the
// whole result.
func surfaceCost(tb testing.TB, answer []byte) (visible, whole []byte) {
	var msg struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
		Raw map[string]json.RawMessage `json:"-"`
	}
	if err := json.Unmarshal(answer, &msg); err != nil || len(msg.Result.Tools) == 0 {
		tb.Fatalf("not a tools/list answer: %v %.200s", err, answer)
	}
	for _, t := range msg.Result.Tools {
		visible = append(visible, t.Name...)
		visible = append(visible, t.Description...)
		visible = append(visible, t.InputSchema...)
	}
	var whole2 struct {
		Result json.RawMessage `json:"result"`
	}
	_ = json.Unmarshal(answer, &whole2)
	return visible, whole2.Result
}

// listTools asks the server for tools/list as a client would and returns
// the answer's bytes as sent.
func listTools(tb testing.TB, d *tools.Deps) []byte {
	srv, err := NewServer(d, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	srv.MCP().HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`))
	b, err := json.Marshal(srv.MCP().HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkToolSurface reports the tokens of tools/list for the demo
// configuration: model-visible (names, descriptions, input schemas) and the
// whole answer (with annotations and output schemas). BENCH_SURFACE_OUT=file
// also writes the tools/list answer there.
func BenchmarkToolSurface(b *testing.B) {
	h := newHarness(b)
	var visible, whole []byte
	for b.Loop() {
		visible, whole = surfaceCost(b, listTools(b, h.deps))
	}
	if out := os.Getenv("BENCH_SURFACE_OUT"); out != "" {
		if err := os.WriteFile(out, whole, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(tokens(visible), "visible-tokens")
	b.ReportMetric(tokens(whole), "list-tokens")
	b.ReportMetric(float64(len(visible)), "visible-bytes")
	b.ReportMetric(float64(len(whole)), "list-bytes")
}

// BenchmarkEmptyAnswer reports the tokens of a complete empty answer: a
// search_all whose filter matches nothing in the whole scope, as the text
// content a model reads. BENCH_EMPTY_OUT=file also writes it there.
func BenchmarkEmptyAnswer(b *testing.B) {
	h := newHarness(b)
	var text []byte
	for b.Loop() {
		r := h.call("search_all", map[string]any{"resource": "projects", "filter": map[string]any{"owner": "no-such-team"}})
		if !r.env.Complete || r.totalMatched() != 0 {
			b.Fatalf("not a complete empty answer: %s", r.raw)
		}
		text = []byte(r.res.Content[0].(mcp.TextContent).Text)
	}
	if out := os.Getenv("BENCH_EMPTY_OUT"); out != "" {
		if err := os.WriteFile(out, text, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(tokens(text), "text-tokens")
	b.ReportMetric(float64(len(text)), "text-bytes")
}

// BenchmarkListIDs reports how many search_all calls list every matching id
// at default arguments: 100,000 records of which 14,285 match, once with
// the default fields and once with fields ["id"], following the cursor.
func BenchmarkListIDs(b *testing.B) {
	r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectOffset, PageSize: 100, Concurrency: 4}
	h := newHarness(b, withResources(r))
	recs := benchRecords(100000).All()
	matching := 0
	for i, rec := range recs {
		// One record in seven matches: 14,285 of 100,000.
		if i%7 == 6 {
			rec["status"] = "past_due"
			matching++
		} else {
			rec["status"] = "active"
		}
	}
	h.api.SetCollection(fixtures.DatasetSubscriptions, fixtures.NewCollection(recs))
	for _, c := range []struct {
		name   string
		fields []any
	}{{"default_fields", nil}, {"ids", []any{"id"}}} {
		b.Run(c.name, func(b *testing.B) {
			calls := 0
			for b.Loop() {
				calls = 0
				seen := 0
				args := map[string]any{"resource": "subs", "filter": map[string]any{"status": "past_due"}}
				if c.fields != nil {
					args["fields"] = c.fields
				}
				for {
					res := h.call("search_all", args)
					calls++
					seen += len(res.items())
					if res.env.Continuation.Kind != "next_cursor" {
						break
					}
					args["cursor"] = res.env.Continuation.Cursor
				}
				if seen != matching {
					b.Fatalf("listed %d ids, want %d", seen, matching)
				}
			}
			b.ReportMetric(float64(calls), "calls")
			b.ReportMetric(float64(matching), "ids")
		})
	}
}

// BenchmarkExactCount reports the upstream requests a counts-only
// search_all makes over 100,000 records when the upstream's total is exact
// and every filter is sent upstream.
func BenchmarkExactCount(b *testing.B) {
	r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectOffset, PageSize: 100, Concurrency: 4}
	h := newHarness(b, withConfig(func(u string) []byte {
		return bytes.Replace(fixtures.Config(u, r), []byte("total: total,"), []byte("total: total, total_exact: true,"), 1)
	}))
	h.api.SetCollection(fixtures.DatasetSubscriptions, benchRecords(100000))
	requests := 0
	for b.Loop() {
		h.api.ResetLog()
		res := h.call("search_all", map[string]any{"resource": "subs", "max_items": 0})
		if !res.env.Complete || res.totalMatched() != 100000 {
			b.Fatalf("not an exact count: %s", res.raw)
		}
		requests = len(h.api.Requests())
	}
	b.ReportMetric(float64(requests), "upstream-requests")
}

// BenchmarkClaimedCount compares, in the same run, a counts-only
// search_all over 100,000 records (a filter sent upstream, the offset
// dialect with a declared total that is not declared exact, pages of 100,
// one page at a time as by default) answered with count: claimed (the
// upstream's total from the first page) and verified (every matching
// record counted, as without count). ratio is verified wall time over
// claimed; verify-after-claim-ratio is the claim followed by its cursor
// over the verified call alone (what asking first costs an agent who then
// verifies).
func BenchmarkClaimedCount(b *testing.B) {
	r := fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectOffset, PageSize: 100}
	h := newHarness(b, withConfig(func(u string) []byte { return fixtures.Config(u, r) }))
	h.api.SetCollection(fixtures.DatasetSubscriptions, benchRecords(100000))
	args := func(count string) map[string]any {
		return map[string]any{"resource": "subs", "max_items": 0, "filter": map[string]any{"status": "past_due"}, "count": count}
	}
	// One call first, so that connecting and compiling schemas is no
	// iteration's share.
	h.call("search_all", args("claimed"))
	var claimed, verified, following time.Duration
	var claimRequests, verifyRequests, total int
	for b.Loop() {
		h.api.ResetLog()
		start := time.Now()
		claim := h.call("search_all", args("claimed"))
		claimed += time.Since(start)
		if claim.env.Complete || claim.data["total_relation"] != "claimed" {
			b.Fatalf("not a claim: %s", claim.raw)
		}
		claimRequests = len(h.api.Requests())

		h.api.ResetLog()
		start = time.Now()
		full := h.call("search_all", args("verified"))
		verified += time.Since(start)
		if !full.env.Complete || full.totalMatched() != claim.totalMatched() {
			b.Fatalf("the verified count %d differs from the claim %d: %s", full.totalMatched(), claim.totalMatched(), full.raw)
		}
		verifyRequests, total = len(h.api.Requests()), full.totalMatched()

		next := args("claimed")
		next["cursor"] = claim.env.Continuation.Cursor
		start = time.Now()
		if res := h.call("search_all", next); !res.env.Complete || res.totalMatched() != total {
			b.Fatalf("the claim's cursor did not verify it: %s", res.raw)
		}
		following += time.Since(start)
	}
	b.ReportMetric(float64(verified)/float64(claimed), "ratio")
	b.ReportMetric(float64(claimed+following)/float64(verified), "verify-after-claim-ratio")
	b.ReportMetric(benchMS(claimed)/float64(b.N), "claimed-ms")
	b.ReportMetric(benchMS(verified)/float64(b.N), "verified-ms")
	b.ReportMetric(float64(claimRequests), "claimed-requests")
	b.ReportMetric(float64(verifyRequests), "verified-requests")
	b.ReportMetric(float64(total), "matching")
}
