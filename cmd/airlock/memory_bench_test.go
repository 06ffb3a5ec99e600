package main

// Benchmarks of what a running airlock costs in memory and start-up time,
// measured on real processes (docs/benchmarks.md, "Memory and start-up"):
// the benchmark's own heap never counts. Each builds the real binary (and,
// for start-up, a minimal mcp-go server to compare with) in the same run.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
)

// buildBinary builds the package at pkg (relative to this directory) for
// the benchmark and returns the executable's path.
func buildBinary(tb testing.TB, pkg string) string {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		tb.Skipf("no go command to build %s: %v", pkg, err)
	}
	dir := tb.TempDir()
	name := filepath.Base(pkg)
	if pkg == "." {
		name = "airlock"
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(goBin, "build", "-o", out, pkg)
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	return out
}

// stdioChild is a server process spoken to over stdio, one JSON-RPC
// message per line.
type stdioChild struct {
	tb    testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	id    int
	start time.Time
}

func startStdio(tb testing.TB, bin string, env []string, args ...string) *stdioChild {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	c := &stdioChild{tb: tb, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), start: time.Now()}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.stop)
	return c
}

func (c *stdioChild) stop() {
	if c.cmd.ProcessState != nil {
		return
	}
	c.in.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// call sends a request and returns its result (failing on an error).
func (c *stdioChild) call(method string, params any) json.RawMessage {
	c.tb.Helper()
	c.id++
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(msg, '\n')); err != nil {
		c.tb.Fatalf("%s: %v", method, err)
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			c.tb.Fatalf("%s: no answer: %v", method, err)
		}
		var ans struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &ans) != nil || ans.ID == nil || *ans.ID != c.id {
			continue // a notification
		}
		if ans.Error != nil {
			c.tb.Fatalf("%s: %s", method, ans.Error)
		}
		return ans.Result
	}
}

func (c *stdioChild) notify(method string) {
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	c.in.Write(append(msg, '\n'))
}

// ready initializes the session and lists the tools; it returns the time
// from the process's start to the tools/list answer.
func (c *stdioChild) ready() time.Duration {
	c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench", "version": "1"}})
	c.notify("notifications/initialized")
	c.call("tools/list", map[string]any{})
	return time.Since(c.start)
}

// rssMB is the child's resident set after d without a call.
func (c *stdioChild) rssMB(d time.Duration) float64 {
	c.tb.Helper()
	time.Sleep(d)
	return procRSSMB(c.tb, c.cmd.Process.Pid)
}

// settled is one second; quiet is past the quiet period after which the
// server hands freed memory back (releaseQuiet).
const (
	settled = time.Second
	quiet   = releaseQuiet + time.Second
)

func procRSSMB(tb testing.TB, pid int) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			return float64(kb) / 1024
		}
	}
	tb.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// searchAll calls search_all and returns its structured content.
func (c *stdioChild) searchAll(args map[string]any) map[string]any {
	c.tb.Helper()
	res := c.call("tools/call", map[string]any{"name": "search_all", "arguments": args})
	var r struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError {
		c.tb.Fatalf("search_all %v: %v %.300s", args, err, res)
	}
	return r.StructuredContent
}

// scanFixture serves n synthetic subscriptions in pages of up to 1000 and
// returns the configuration of a resource reading them (cursor dialect).
func scanFixture(tb testing.TB, n int) string {
	api := &fixtures.Server{}
	api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, nil))
	api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{MaxPageSize: 1000})
	srv := httptest.NewServer(api)
	tb.Cleanup(srv.Close)
	cfg := fixtures.Config(srv.URL, fixtures.Resource{Name: "subscriptions", Dataset: fixtures.DatasetSubscriptions,
		Dialect: fixtures.DialectCursor, PageSize: 1000})
	path := filepath.Join(tb.TempDir(), "airlock.yaml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// serveEnv is a server's environment with its default store under state.
func serveEnv(state string) []string {
	return []string{fixtures.DemoTokenEnv + "=" + fixtures.DefaultToken, "XDG_STATE_HOME=" + state, "AIRLOCK_STORE="}
}

// BenchmarkScanMemory reports airlock's resident set around a full scan
// of 100,000 records (100 pages of 1000), in a real server process over
// stdio with its default SQLite store: idle-rss-MB after start-up;
// items-rss-MB one second after a scan that keeps its items for delivery
// (max_items 1000, as an agent listing them does), items-quiet-rss-MB once
// the server has been quiet long enough to hand freed memory back;
// delivered-rss-MB after ten more calls that follow the cursor; and
// counts-rss-MB, counts-quiet-rss-MB for a counts-only scan (max_items 0)
// in another process.
func BenchmarkScanMemory(b *testing.B) {
	const n = 100_000
	bin := buildBinary(b, ".")
	config := scanFixture(b, n)
	scan := func(maxItems int) map[string]any {
		return map[string]any{"resource": "subscriptions", "max_items": maxItems, "max_pages": 200, "deadline_ms": 120000}
	}
	var idle, items, itemsQuiet, delivered, counts, countsQuiet []float64
	for b.Loop() {
		c := startStdio(b, bin, serveEnv(b.TempDir()), "serve", "--config", config)
		c.ready()
		idle = append(idle, c.rssMB(settled))
		args := scan(1000)
		sc := c.searchAll(args)
		if cov := sc["coverage"].(map[string]any); cov["items_scanned"].(float64) != n {
			b.Fatalf("the scan read %v items, want %d", cov["items_scanned"], n)
		}
		items = append(items, c.rssMB(settled))
		itemsQuiet = append(itemsQuiet, c.rssMB(quiet-settled))
		for range 10 {
			cont, _ := sc["continuation"].(map[string]any)
			cur, _ := cont["cursor"].(string)
			if cur == "" {
				b.Fatalf("no cursor to follow: %v", cont)
			}
			args["cursor"] = cur
			sc = c.searchAll(args)
		}
		delivered = append(delivered, c.rssMB(settled))
		c.stop()

		c = startStdio(b, bin, serveEnv(b.TempDir()), "serve", "--config", config)
		c.ready()
		if sc := c.searchAll(scan(0)); sc["complete"] != true {
			b.Fatalf("the counts-only scan is not complete: %v", sc["incomplete_reasons"])
		}
		counts = append(counts, c.rssMB(settled))
		countsQuiet = append(countsQuiet, c.rssMB(quiet-settled))
		c.stop()
	}
	b.ReportMetric(median(idle), "idle-rss-MB")
	b.ReportMetric(median(items), "items-rss-MB")
	b.ReportMetric(median(itemsQuiet), "items-quiet-rss-MB")
	b.ReportMetric(median(delivered), "delivered-rss-MB")
	b.ReportMetric(median(counts), "counts-rss-MB")
	b.ReportMetric(median(countsQuiet), "counts-quiet-rss-MB")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkStartup reports start-up to the first tools/list answer and the
// resident set one second after it, for airlock (serve over stdio with the
// demo configuration and its default SQLite store, created by a first
// start that is not counted) and for the smallest mcp-go server
// (testdata/peer), both built in this run and started alternately, five
// times each per iteration: startup-ratio is airlock's median over the
// peer's; idle-rss-MB and peer-idle-rss-MB are the medians of the
// resident sets.
//
// AIRLOCK_BENCH_PEER, when set, names another peer as a command line (its
// words split on spaces), e.g. an OpenAPI-to-MCP server with the demo API's
// document: "openapi-mcp cmd/airlock/testdata/demo-openapi.yaml" (a path
// relative to the repository is taken from its root).
func BenchmarkStartup(b *testing.B) {
	bin := buildBinary(b, ".")
	peer, peerArgs := buildBinary(b, "./testdata/peer"), []string(nil)
	if cmdline := strings.Fields(os.Getenv("AIRLOCK_BENCH_PEER")); len(cmdline) > 0 {
		peer, peerArgs = cmdline[0], cmdline[1:]
		for i, a := range peerArgs {
			if _, err := os.Stat(filepath.Join("..", "..", a)); err == nil && !filepath.IsAbs(a) {
				peerArgs[i] = filepath.Join("..", "..", a)
			}
		}
		b.Logf("peer: %s %s", peer, strings.Join(peerArgs, " "))
	}
	config := filepath.Join(b.TempDir(), "airlock.yaml")
	if err := os.WriteFile(config, fixtures.DemoConfig("http://127.0.0.1:9"), 0o600); err != nil {
		b.Fatal(err)
	}
	env := serveEnv(b.TempDir())
	first := startStdio(b, bin, env, "serve", "--config", config)
	first.ready()
	first.stop()
	var ours, theirs, ourRSS, theirRSS []float64
	for b.Loop() {
		for range 5 {
			c := startStdio(b, bin, env, "serve", "--config", config)
			ours = append(ours, float64(c.ready().Microseconds())/1000)
			ourRSS = append(ourRSS, c.rssMB(settled))
			c.stop()
			p := startStdio(b, peer, nil, peerArgs...)
			theirs = append(theirs, float64(p.ready().Microseconds())/1000)
			theirRSS = append(theirRSS, p.rssMB(settled))
			p.stop()
		}
	}
	b.ReportMetric(median(ours)/median(theirs), "startup-ratio")
	b.ReportMetric(median(ours), "startup-ms")
	b.ReportMetric(median(theirs), "peer-startup-ms")
	b.ReportMetric(median(ourRSS), "idle-rss-MB")
	b.ReportMetric(median(theirRSS), "peer-idle-rss-MB")
}
