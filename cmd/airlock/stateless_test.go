package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/mcpserver"
	"github.com/airlock-mcp/airlock/selection"
)

// The tests here put replicas of airlock on one PostgreSQL database behind
// a plain round-robin load balancer, and drive them with the Go SDK's
// client at protocol 2026-07-28, which carries no session: every request
// may reach any replica.

// testSecret is the secret every replica of a test shares.
const testSecret = "stateless-replicas-share-this-secret-0123456789"

// served is one request the balancer routed.
type served struct {
	backend   int
	method    string
	name      string // the tool of a tools/call
	answering bool   // a tools/call carrying the user's answers
	taskID    string // of a task method
}

// roundRobin is a plain round-robin load balancer: each request goes to
// the next live backend, whatever it carries (no session affinity). A
// backend taken out (as a health check would after a crash) gets nothing.
type roundRobin struct {
	mu      sync.Mutex
	proxies []*httputil.ReverseProxy
	alive   []bool
	next    int
	log     []served
}

func newRoundRobin(t *testing.T, urls ...string) (*roundRobin, string) {
	t.Helper()
	rr := &roundRobin{}
	for _, u := range urls {
		target, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		target.Path = ""
		p := httputil.NewSingleHostReverseProxy(target)
		p.FlushInterval = -1
		rr.proxies = append(rr.proxies, p)
		rr.alive = append(rr.alive, true)
	}
	srv := httptest.NewServer(rr)
	t.Cleanup(srv.Close)
	return rr, srv.URL + "/mcp"
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var s served
	if r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name           string          `json:"name"`
				TaskID         string          `json:"taskId"`
				InputResponses json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		s = served{method: msg.Method, name: msg.Params.Name, taskID: msg.Params.TaskID, answering: len(msg.Params.InputResponses) > 2}
	}
	rr.mu.Lock()
	for !rr.alive[rr.next%len(rr.alive)] {
		rr.next++
	}
	s.backend = rr.next % len(rr.alive)
	rr.next++
	rr.log = append(rr.log, s)
	p := rr.proxies[s.backend]
	rr.mu.Unlock()
	p.ServeHTTP(w, r)
}

// takeOut stops routing to a backend.
func (rr *roundRobin) takeOut(i int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.alive[i] = false
}

// find returns the requests routed so far that match.
func (rr *roundRobin) find(match func(served) bool) []served {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	var out []served
	for _, s := range rr.log {
		if match(s) {
			out = append(out, s)
		}
	}
	return out
}

// last returns the backend of the last request routed.
func (rr *roundRobin) last() int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.log[len(rr.log)-1].backend
}

// startReplicas starts n servers on the setup's store with one secret.
func startReplicas(t *testing.T, s *replicaSetup, n int) []*child {
	t.Helper()
	var out []*child
	for range n {
		out = append(out, startChildEnv(t, s.config, s.store, []string{envLeaseTTL + "=" + testLease.String(), envSecret + "=" + testSecret}))
	}
	return out
}

// connectModern connects the Go SDK's client and checks it speaks
// 2026-07-28: no session, no initialize handshake.
func connectModern(t *testing.T, url string) *client.Client {
	t.Helper()
	c := connect(t, url)
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("the client speaks %q, not 2026-07-28", v)
	}
	if c.GetSessionId() != "" {
		t.Fatalf("a client of 2026-07-28 holds a session: %q", c.GetSessionId())
	}
	return c
}

// rawRPC sends requests of protocol 2026-07-28 through the client's own
// transport, with the _meta and headers the client adds. It is how a
// client that accepts tasks sends them: mcp-go v1.2.1's CallTool cannot
// read a task (it wants content) and its GetTask drops a finished task's
// result.
type rawRPC struct {
	t    testing.TB
	tr   transport.Interface
	next atomic.Int64
}

func (r *rawRPC) send(method string, params map[string]any) (map[string]any, *mcp.JSONRPCErrorDetails) {
	r.t.Helper()
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{},
			Extensions: map[string]any{mcpserver.TasksExtension: map[string]any{}}},
		mcp.MetaKeyClientInfo: mcp.Implementation{Name: "stateless-test", Version: "1"},
	}
	raw, _ := json.Marshal(params)
	header := http.Header{}
	for k, v := range mcp.StandardHeaders(mcp.ProtocolVersion20260728, mcp.MCPMethod(method), raw) {
		header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := r.tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(r.next.Add(1)), Method: method, Params: params, Header: header})
	if err != nil {
		r.t.Fatalf("%s: %v", method, err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	var m map[string]any
	_ = json.Unmarshal(resp.Result, &m)
	return m, nil
}

func (r *rawRPC) must(method string, params map[string]any) map[string]any {
	r.t.Helper()
	m, e := r.send(method, params)
	if e != nil {
		r.t.Fatalf("%s: error %d %s", method, e.Code, e.Message)
	}
	return m
}

// waitTask polls a task until it is terminal.
func (r *rawRPC) waitTask(id any, timeout time.Duration) map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m := r.must("tasks/get", map[string]any{"taskId": id})
		switch m["status"] {
		case "completed", "failed", "cancelled":
			return m
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("task %v still %v after %s", id, m["status"], timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var pausePastDueUS = map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "us"},
	"action": map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}}

// TestStateless_RoundRobinReplicasOnPostgres: three replicas on one
// PostgreSQL database and one secret, behind a round-robin balancer,
// driven by the Go SDK's client at 2026-07-28. Every tool works; search_all,
// get_selection and get_operation cursors continue on another replica than
// the one that issued them; the user's answer to an approval reaches
// another replica than the one that asked, as a retried call and as a
// task's tasks/update; a replica killed mid-commit is taken over, and the
// commit's task answers from the survivors; every target is written once.
func TestStateless_RoundRobinReplicasOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes; skipped with -short")
	}
	s := newReplicaSetup(t, storeKinds[1], map[string]fixtures.WriteFaults{fixtures.DatasetSubscriptions: {Latency: 30 * time.Millisecond}})
	replicas := startReplicas(t, s, 3)
	rr, url := newRoundRobin(t, replicas[0].url, replicas[1].url, replicas[2].url)
	c := connectModern(t, url)
	defer c.Close()

	if d := callData(t, c, "describe_resources", map[string]any{}); len(d["resources"].([]any)) == 0 {
		t.Fatal("describe_resources lists nothing")
	}
	// search_all: a continuation cursor continues on the next replica.
	search := map[string]any{"resource": "projects", "max_items": 3, "max_pages": 1}
	var ids []string
	for step := 0; ; step++ {
		var env struct {
			Continuation struct{ Cursor string } `json:"continuation"`
			Data         struct{ Items []map[string]any }
		}
		_ = json.Unmarshal([]byte(callTool(t, c, "search_all", search)), &env)
		for _, it := range env.Data.Items {
			ids = append(ids, fmt.Sprint(it["id"]))
		}
		if env.Continuation.Cursor == "" || step == 3 {
			break
		}
		search["cursor"] = env.Continuation.Cursor
	}
	if len(ids) < 10 || len(unique(ids)) != len(ids) {
		t.Fatalf("search_all through the cursor over replicas: %d items, %d distinct", len(ids), len(unique(ids)))
	}
	if calls := rr.find(func(x served) bool { return x.name == "search_all" }); len(calls) < 2 || calls[0].backend == calls[1].backend {
		t.Fatalf("the continuation was not served by another replica: %+v", calls)
	}

	// preview, then get_selection's cursor on another replica.
	p := callData(t, c, "preview_selection", pausePastDueEU)
	page := map[string]any{"selection_id": p["selection_id"], "page_size": 3}
	var sp struct{ Continuation struct{ Cursor string } }
	_ = json.Unmarshal([]byte(callTool(t, c, "get_selection", page)), &sp)
	b1 := rr.last()
	if sp.Continuation.Cursor == "" {
		t.Fatal("the manifest fits one page")
	}
	page["cursor"] = sp.Continuation.Cursor
	if second := callData(t, c, "get_selection", page); second["selection_id"] != p["selection_id"] || rr.last() == b1 {
		t.Fatalf("get_selection's cursor did not continue on another replica: %v", second)
	}

	// The commit asks the user (MRTR); the answer is a retried call that
	// lands on another replica.
	op := callData(t, c, "commit_bulk_action", commitArgs(p, pausePastDueEU["action"]))
	opID := op["operation_id"].(string)
	commits := rr.find(func(x served) bool { return x.name == "commit_bulk_action" })
	if len(commits) != 2 || commits[0].answering || !commits[1].answering || commits[0].backend == commits[1].backend {
		t.Fatalf("the approval's answer did not reach another replica than the one that asked: %+v", commits)
	}
	holder := commits[1].backend
	replicas[holder].kill()
	rr.takeOut(holder)
	st := s.inspect(t)
	atKill, err := st.Operation(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	outcomes, status := waitFinished(t, c, opID)
	final, _ := st.Operation(context.Background(), opID)
	if status != selection.OpCompleted || (atKill.Status == selection.OpRunning && final.Lease.Epoch <= atKill.Lease.Epoch) {
		t.Fatalf("after the kill the operation ended %s at epoch %d (was %s at epoch %d)", status, final.Lease.Epoch, atKill.Status, atKill.Lease.Epoch)
	}
	if atKill.Status != selection.OpRunning {
		t.Logf("the operation had finished before the kill: no takeover was needed")
	}
	for id, o := range outcomes {
		if o != selection.TargetSucceeded || s.api.Applied(fixtures.DatasetSubscriptions, id) != 1 {
			t.Fatalf("%s: %s, applied %d times", id, o, s.api.Applied(fixtures.DatasetSubscriptions, id))
		}
	}
	// get_operation's cursor on another replica.
	opPage := map[string]any{"operation_id": opID, "page_size": 2}
	o1 := callData(t, c, "get_operation", opPage)
	b1 = rr.last()
	opPage["cursor"] = o1["results_cursor"]
	o2 := callData(t, c, "get_operation", opPage)
	if rr.last() == b1 || o2["operation_id"] != opID || fmt.Sprint(o1["results"]) == fmt.Sprint(o2["results"]) {
		t.Fatalf("get_operation's cursor did not continue on another replica")
	}

	// A commit as a task: approval as input_required, its answer on
	// another replica, the operation's holder killed, the task answered by
	// the survivor.
	rpc := &rawRPC{t: t, tr: c.GetTransport()}
	p2 := callData(t, c, "preview_selection", pausePastDueUS)
	task := rpc.must("tools/call", map[string]any{"name": "commit_bulk_action", "arguments": commitArgs(p2, pausePastDueUS["action"])})
	if task["resultType"] != "task" {
		t.Fatalf("a client that accepts tasks got no task: %v", task)
	}
	id := task["taskId"]
	created := rr.last()
	t.Logf("the sync commit's operation was %s at the kill; the task answered %s", atKill.Status, task["status"])
	if task["status"] == string(mcp.TaskStatusInputRequired) {
		rpc.must("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"airlock_approval": map[string]any{
			"action": "accept", "content": map[string]any{"approve": true, "acknowledge": true}}}})
		if rr.last() == created {
			t.Fatal("tasks/update reached the replica that made the task")
		}
	}
	runner := rr.last()
	for {
		m := rpc.must("tasks/get", map[string]any{"taskId": id})
		if m["status"] == "working" && strings.Contains(fmt.Sprint(m["statusMessage"]), "op_") {
			break
		}
		if m["status"] != "working" && m["status"] != "input_required" {
			t.Fatalf("the task ended before the kill: %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
	replicas[runner].kill()
	rr.takeOut(runner)
	done := rpc.waitTask(id, 90*time.Second)
	if done["status"] != "completed" {
		t.Fatalf("the task after its replica was killed: %v", done)
	}
	res := done["result"].(map[string]any)["structuredContent"].(map[string]any)
	data := res["data"].(map[string]any)
	if data["status"] != selection.OpCompleted {
		t.Fatalf("the task's operation: %v", res)
	}
	for id, n := range s.api.AppliedAll(fixtures.DatasetSubscriptions) {
		if n != 1 {
			t.Errorf("%s applied %d times", id, n)
		}
	}
}

func unique(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}
