package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
)

// The measurements of docs/benchmarks.md ("Replicas"): gated, as they take
// minutes and a PostgreSQL server. They report figures with t.Log and
// assert only correctness (no error, no double write), never a timing.
//
//	AIRLOCK_TEST_HEAVY=1 AIRLOCK_TEST_POSTGRES=postgres://… AIRLOCK_LOAD_DURATION=60s \
//	  go test -run 'TestLoad|TestTask10k' -v ./cmd/airlock

func heavyPostgres(t *testing.T) string {
	t.Helper()
	if os.Getenv("AIRLOCK_TEST_HEAVY") != "1" {
		t.Skip("a measurement: set AIRLOCK_TEST_HEAVY=1 (and AIRLOCK_TEST_POSTGRES) to run it")
	}
	return pgtest.Database(t)
}

// rssKB reads a process's resident set size.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// heapFigures reads what a replica's Go heap holds from its metrics: in
// use (spans with live objects), free (held for reuse, still resident),
// released (returned to the system), all in MB.
func heapFigures(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return "unread: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	get := func(name string) float64 {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == name {
				v, _ := strconv.ParseFloat(f[1], 64)
				return v / (1 << 20)
			}
		}
		return -1
	}
	inuse, idle, released := get("go_memstats_heap_inuse_bytes"), get("go_memstats_heap_idle_bytes"), get("go_memstats_heap_released_bytes")
	return fmt.Sprintf("%.0f MB in use, %.0f MB free, %.0f MB released", inuse, idle-released, released)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// TestLoad_FiftyClientsSearchThroughRoundRobinToTwoReplicas: 50 clients of
// 2026-07-28, each its own connection, call search_all as fast as they get
// answers through a round-robin balancer to two replicas on PostgreSQL,
// for AIRLOCK_LOAD_DURATION (10 s unless set; the documented figures are
// for 60 s). No call may fail. It reports p50 and p99, and each replica's
// RSS before, at the end of, and 30 s after the load.
func TestLoad_FiftyClientsSearchThroughRoundRobinToTwoReplicas(t *testing.T) {
	store := heavyPostgres(t)
	duration := 10 * time.Second
	if v := os.Getenv("AIRLOCK_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("AIRLOCK_LOAD_DURATION=%q: %v", v, err)
		}
		duration = d
	}
	api := &fixtures.Server{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	config := filepath.Join(t.TempDir(), "airlock.yaml")
	if err := os.WriteFile(config, fixtures.DemoConfig(srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &replicaSetup{api: api, config: config, store: store}
	// Each replica also serves its metrics, for what its heap holds.
	var replicas []*child
	var metricsAt []string
	for range 2 {
		addr := freePort(t)
		replicas = append(replicas, startChildEnv(t, s.config, s.store, []string{envLeaseTTL + "=" + testLease.String(), envSecret + "=" + testSecret},
			"--metrics", addr))
		metricsAt = append(metricsAt, "http://"+addr+"/metrics")
	}
	heap := func() []string {
		var out []string
		for _, u := range metricsAt {
			out = append(out, heapFigures(t, u))
		}
		return out
	}
	_, url := newRoundRobin(t, replicas[0].url, replicas[1].url)

	clients := 50
	if raceEnabled {
		// The race detector slows the replicas several times over: CI
		// checks correctness with fewer clients; the figures come from a
		// build without it.
		clients = 10
	}
	if v := os.Getenv("AIRLOCK_LOAD_CLIENTS"); v != "" {
		clients, _ = strconv.Atoi(v)
	}
	cs := make([]*client.Client, clients)
	for i := range cs {
		cs[i] = connectModern(t, url)
		defer cs[i].Close()
	}
	// The queries: a whole-scope scan with a filter, counts only, a page
	// of items, a grouped count.
	queries := []map[string]any{
		{"resource": "subscriptions", "filter": map[string]any{"status": "past_due"}, "max_items": 20},
		{"resource": "subscriptions", "filter": map[string]any{"region": "eu"}, "max_items": 0},
		{"resource": "projects", "max_items": 10},
		{"resource": "subscriptions", "max_items": 0, "group_by": []any{"status"}},
	}
	// Warm up, then the baseline.
	for i, q := range queries {
		callTool(t, cs[i%len(cs)], "search_all", q)
	}
	time.Sleep(2 * time.Second)
	base := []int{rssKB(t, replicas[0].cmd.Process.Pid), rssKB(t, replicas[1].cmd.Process.Pid)}
	baseHeap := heap()

	var mu sync.Mutex
	var lat []time.Duration
	complete, reasons := 0, map[string]int{}
	var errs atomic.Int64
	peak := []int{0, 0}
	stop := time.Now().Add(duration)
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				for i, r := range replicas {
					if kb := rssKB(t, r.cmd.Process.Pid); kb > peak[i] {
						peak[i] = kb
					}
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				req := mcp.CallToolRequest{}
				req.Params.Name = "search_all"
				req.Params.Arguments = queries[(i+n)%len(queries)]
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				start := time.Now()
				res, err := c.CallTool(ctx, req)
				took := time.Since(start)
				cancel()
				if err != nil || res.IsError {
					if errs.Add(1) <= 5 {
						t.Errorf("a call failed: %v %v", err, res)
					}
					continue
				}
				var env struct {
					Complete bool `json:"complete"`
					Reasons  []struct {
						Code string `json:"code"`
					} `json:"incomplete_reasons"`
				}
				b, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(b, &env)
				mu.Lock()
				lat = append(lat, took)
				if env.Complete {
					complete++
				}
				for _, r := range env.Reasons {
					reasons[r.Code]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	<-sampled // peak is the sampler's until it returns
	atEnd := []int{rssKB(t, replicas[0].cmd.Process.Pid), rssKB(t, replicas[1].cmd.Process.Pid)}
	endHeap := heap()
	for _, c := range cs {
		c.Close()
	}
	time.Sleep(30 * time.Second)
	after := []int{rssKB(t, replicas[0].cmd.Process.Pid), rssKB(t, replicas[1].cmd.Process.Pid)}
	afterHeap := heap()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("%d clients, %s: %d calls (%.0f/s), %d errors; p50 %s, p99 %s, max %s",
		clients, duration, len(lat), float64(len(lat))/duration.Seconds(), errs.Load(),
		percentile(lat, .5).Round(time.Millisecond), percentile(lat, .99).Round(time.Millisecond), percentile(lat, 1).Round(time.Millisecond))
	t.Logf("%d answers complete; incomplete reasons: %v (a scan cut by its 15 s default deadline_ms is partial, with TIME_BUDGET_EXCEEDED)", complete, reasons)
	for i := range replicas {
		t.Logf("replica %d RSS: %d MB before, %d MB peak, %d MB at the end, %d MB 30 s after the clients left (%+.0f%%)", i, base[i]/1024, peak[i]/1024,
			atEnd[i]/1024, after[i]/1024, 100*float64(after[i]-base[i])/float64(base[i]))
		t.Logf("replica %d heap before: %s; at the end: %s; 30 s after: %s", i, baseHeap[i], endHeap[i], afterHeap[i])
	}
	if errs.Load() != 0 {
		t.Fatalf("%d calls failed", errs.Load())
	}
}

// task10kActions is pause_collection with max_targets raised and no
// approval, for a 10,000-target commit.
const task10kActions = `actions:
  pause_collection:
    resource: subscriptions
    request:
      method: POST
      path: "/v1/subscriptions/{{id}}/pause"
      body: {reason: "{{params.reason}}", expected_version: "{{version}}"}
    params:
      type: object
      required: [reason]
      properties:
        reason: {type: string, minLength: 8, maxLength: 200}
      additionalProperties: false
    precondition:
      - {field: status, op: eq, value: past_due}
      - {field: collection_paused, op: eq, value: false}
    conditional: version
    effect:
      - {field: collection_paused, to: true}
    idempotency_header: Idempotency-Key
    max_targets: 20000
    timeout: 2s
`

// TestTask10k_ClientLeavesMidwayAndFollowsTheTaskOnAnotherReplica: a
// commit of 10,000 targets runs as a task on one replica; midway its client
// disconnects, and a new client follows the task through the other
// replica until it completes. Every target applied upstream is journaled
// succeeded, and none was applied twice.
func TestTask10k_ClientLeavesMidwayAndFollowsTheTaskOnAnotherReplica(t *testing.T) {
	store := heavyPostgres(t)
	const n = 10_000
	api := &fixtures.Server{}
	api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, func(i int, r fixtures.Record) {
		r["status"], r["amount_due"] = "past_due", 500+(i%50)*450
	}))
	api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{MaxPageSize: 1000})
	api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{Latency: 2 * time.Millisecond})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cfg := fixtures.Config(srv.URL, fixtures.Resource{Name: "subscriptions", Dataset: fixtures.DatasetSubscriptions,
		Dialect: fixtures.DialectCursor, PageSize: 1000, Extra: `version_field: version
get: {path: "/v1/subscriptions/{{id}}"}
review_fields: [id, customer_name, region, status, amount_due, currency, tags, collection_paused]
review_groups: [status, region, currency]`})
	config := filepath.Join(t.TempDir(), "airlock.yaml")
	if err := os.WriteFile(config, append(cfg, task10kActions...), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &replicaSetup{api: api, config: config, store: store}
	replicas := startReplicas(t, s, 2)
	_, url := newRoundRobin(t, replicas[0].url, replicas[1].url)
	c := connectModern(t, url)
	rpc := &rawRPC{t: t, tr: c.GetTransport()}
	action := map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}
	start := time.Now()
	preview := rpc.must("tools/call", map[string]any{"name": "preview_selection", "arguments": map[string]any{
		"resource": "subscriptions", "filter": map[string]any{"status": "past_due"}, "action": action, "deadline_ms": 120000}})
	pdone := rpc.waitTask(preview["taskId"], 5*time.Minute)
	p := pdone["result"].(map[string]any)["structuredContent"].(map[string]any)["data"].(map[string]any)
	if p["committable"] != true || p["counts"].(map[string]any)["members"].(float64) != n {
		t.Fatalf("the preview: %v", p)
	}
	previewed := time.Since(start)
	start = time.Now()
	task := rpc.must("tools/call", map[string]any{"name": "commit_bulk_action", "arguments": map[string]any{
		"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": action, "mode": "execute"}})
	if task["status"] != "working" {
		t.Fatalf("the commit's task: %v", task)
	}
	id := task["taskId"]
	var opID string
	for {
		m := rpc.must("tasks/get", map[string]any{"taskId": id})
		var settled, total int
		if _, err := fmt.Sscanf(fmt.Sprint(m["statusMessage"]), "operation %s %d of %d", &opID, &settled, &total); err == nil {
			opID = strings.TrimSuffix(opID, ":")
		}
		if m["status"] != "working" {
			t.Fatalf("the task ended before the client left: %v", m)
		}
		if settled >= n/2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	midway := time.Since(start)
	c.Close()
	// A new client, straight to the replica the last poll did not reach.
	c2 := connectModern(t, replicas[1].url)
	defer c2.Close()
	rpc2 := &rawRPC{t: t, tr: c2.GetTransport()}
	done := rpc2.waitTask(id, 10*time.Minute)
	took := time.Since(start)
	if done["status"] != "completed" {
		t.Fatalf("the task: %v", done)
	}
	st := s.inspect(t)
	journal := targetsOf(t, st, opID)
	succeeded := 0
	for _, x := range journal {
		if x.Outcome == selection.TargetSucceeded {
			succeeded++
		}
	}
	applied := api.AppliedAll(fixtures.DatasetSubscriptions)
	twice := 0
	for _, k := range applied {
		if k > 1 {
			twice++
		}
	}
	t.Logf("preview of %d as a task: %s; commit as a task: %s (%.0f targets/s), client switched replicas at %s", n, previewed.Round(time.Millisecond),
		took.Round(time.Millisecond), float64(n)/took.Seconds(), midway.Round(time.Millisecond))
	t.Logf("targets journaled succeeded: %d; applied upstream: %d; applied twice: %d", succeeded, len(applied), twice)
	if succeeded != n || len(applied) != n || twice != 0 {
		t.Fatalf("journaled %d succeeded, applied %d, twice %d: want %d, %d, 0", succeeded, len(applied), twice, n, n)
	}
}
