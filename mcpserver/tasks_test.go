package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
)

// taskRPC sends raw requests of protocol 2026-07-28 through the harness
// client's transport, with the _meta and headers the client itself would
// add: mcp-go's Client.CallTool cannot read a CreateTaskResult (it wants
// content) and Client.GetTask drops a finished task's result, so the task
// requests go out as the client would send them and come back unparsed.
type taskRPC struct {
	t    testing.TB
	tr   transport.Interface
	caps mcp.ClientCapabilities
	next atomic.Int64
}

func (h *harness) taskRPC() *taskRPC {
	if h.client.ProtocolVersion() != mcp.ProtocolVersion20260728 {
		h.t.Fatalf("the client speaks %q, not 2026-07-28", h.client.ProtocolVersion())
	}
	caps := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}
	if h.tasksClient {
		caps.Extensions = map[string]any{TasksExtension: map[string]any{}}
	}
	return &taskRPC{t: h.t, tr: h.client.GetTransport(), caps: caps}
}

// send returns the result, or the JSON-RPC error.
func (r *taskRPC) send(method string, params map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
	r.t.Helper()
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: r.caps,
		mcp.MetaKeyClientInfo:         mcp.Implementation{Name: "airlock-task-test", Version: "1"},
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
		// The transport turns an HTTP 400 into an error; its text holds
		// the JSON-RPC error.
		var e mcp.JSONRPCErrorDetails
		if i := strings.Index(err.Error(), `{"`); i >= 0 {
			var m struct {
				Error mcp.JSONRPCErrorDetails `json:"error"`
			}
			if json.Unmarshal([]byte(err.Error()[i:]), &m) == nil && m.Error.Code != 0 {
				return nil, &m.Error
			}
		}
		r.t.Fatalf("%s: %v", method, err)
		return nil, &e
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	return resp.Result, nil
}

func (r *taskRPC) call(tool string, args map[string]any) map[string]any {
	r.t.Helper()
	res, e := r.send("tools/call", map[string]any{"name": tool, "arguments": args})
	if e != nil {
		r.t.Fatalf("%s: error %d %s", tool, e.Code, e.Message)
	}
	var m map[string]any
	_ = json.Unmarshal(res, &m)
	return m
}

func (r *taskRPC) get(id any) map[string]any {
	r.t.Helper()
	res, e := r.send("tasks/get", map[string]any{"taskId": id})
	if e != nil {
		r.t.Fatalf("tasks/get: error %d %s", e.Code, e.Message)
	}
	var m map[string]any
	_ = json.Unmarshal(res, &m)
	return m
}

// wait polls a task until its status is one of want.
func (r *taskRPC) wait(id any, want ...string) map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := r.get(id)
		for _, w := range want {
			if m["status"] == w {
				return m
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("task %v is %v after 60 s, want %v: %v", id, m["status"], want, m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// structured returns a task result's structured content, without the
// member that differs between two identical answers (coverage.elapsed_ms).
func structured(t testing.TB, result any) map[string]any {
	t.Helper()
	m, _ := result.(map[string]any)
	sc, _ := m["structuredContent"].(map[string]any)
	if sc == nil {
		t.Fatalf("a result without structured content: %v", result)
	}
	if cov, ok := sc["coverage"].(map[string]any); ok {
		delete(cov, "elapsed_ms")
	}
	return sc
}

func asMap(t testing.TB, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTasks_CommitNeedingApprovalIsAnInputRequiredTaskBoundToTheSelection:
// a client that accepts tasks commits a selection whose policy asks the
// user: the answer is a task in input_required whose request names the
// selection and its digest; tasks/update carries the user's approval, the
// operation runs, and the completed task's result is the envelope
// commit_bulk_action answers for that operation (a repeated call returns it,
// replayed).
func TestTasks_CommitNeedingApprovalIsAnInputRequiredTaskBoundToTheSelection(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTasks(true))
	rpc := h.taskRPC()
	p := h.call("preview_selection", seedPreview(nil))
	created := rpc.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if created["resultType"] != "task" || created["status"] != string(mcp.TaskStatusInputRequired) {
		t.Fatalf("the commit did not answer with a task waiting for input: %v", created)
	}
	id := created["taskId"]
	if !strings.HasPrefix(fmt.Sprint(id), "task_") || created["pollIntervalMs"] == nil || created["createdAt"] == nil {
		t.Fatalf("a task misses members: %v", created)
	}
	got := rpc.get(id)
	reqs, _ := got["inputRequests"].(map[string]any)
	ask, _ := reqs[tools.ApprovalKey].(map[string]any)
	params, _ := ask["params"].(map[string]any)
	msg, _ := params["message"].(string)
	if got["status"] != string(mcp.TaskStatusInputRequired) || ask["method"] != string(mcp.MethodElicitationCreate) ||
		!strings.Contains(msg, fmt.Sprint(p.data["selection_id"])) || !strings.Contains(msg, fmt.Sprint(p.data["digest"])) {
		t.Fatalf("tasks/get does not show the approval request for this selection: %v", got)
	}
	if len(h.api.Writes()) != 0 {
		t.Fatal("a write went out before the approval")
	}
	if _, e := rpc.send("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		tools.ApprovalKey: map[string]any{"action": "accept", "content": map[string]any{"approve": true, "acknowledge": true}}}}); e != nil {
		t.Fatalf("tasks/update: %v", e)
	}
	done := rpc.wait(id, "completed", "failed", "cancelled")
	if done["status"] != "completed" {
		t.Fatalf("the task ended %v", done)
	}
	env := structured(t, done["result"])
	data, _ := env["data"].(map[string]any)
	if env["status"] != "complete" || data["status"] != selection.OpCompleted {
		t.Fatalf("the task's result is not a completed operation: %v", env)
	}
	aps, _ := h.deps.Store.Approvals(context.Background(), fmt.Sprint(p.data["selection_id"]))
	if len(aps) != 1 || aps[0].Channel != selection.ChannelClient || aps[0].Digest != p.data["digest"] || aps[0].UsedBy != data["operation_id"] {
		t.Fatalf("the approval is not the client's, bound to the digest and spent by the operation: %+v", aps)
	}
	// The same call, made now without a task, answers that operation with
	// the same envelope (replayed).
	again := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	want := map[string]any{}
	_ = json.Unmarshal(again.raw, &want)
	want["data"].(map[string]any)["replayed"] = false
	if !reflect.DeepEqual(env, want) {
		t.Fatalf("the task's result\n%v\nis not the envelope the call answers\n%v", env, want)
	}
	// A second answer to the same request changes nothing.
	if _, e := rpc.send("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		tools.ApprovalKey: map[string]any{"action": "accept", "content": map[string]any{"approve": true, "acknowledge": true}}}}); e != nil {
		t.Fatalf("tasks/update: %v", e)
	}
	if after := rpc.get(id); !reflect.DeepEqual(structured(t, after["result"]), env) {
		t.Fatalf("a second answer changed the task: %v", after)
	}
}

// TestTasks_DeclinedApprovalCompletesTheTaskWithTheProblem: the user
// declines: nothing is written and the task completes with the problem the
// call would have answered.
func TestTasks_DeclinedApprovalCompletesTheTaskWithTheProblem(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTasks(true))
	rpc := h.taskRPC()
	p := h.call("preview_selection", seedPreview(nil))
	id := rpc.call("commit_bulk_action", commitArgsFor(p, "execute", nil))["taskId"]
	if _, e := rpc.send("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		tools.ApprovalKey: map[string]any{"action": "decline"}}}); e != nil {
		t.Fatalf("tasks/update: %v", e)
	}
	done := rpc.wait(id, "completed")
	env := structured(t, done["result"])
	prob, _ := env["problem"].(map[string]any)
	if r, _ := done["result"].(map[string]any); r["isError"] != true || prob["code"] != string(envelope.ProblemApprovalDeclined) {
		t.Fatalf("a declined approval: %v", done)
	}
	if len(h.api.Writes()) != 0 {
		t.Fatal("a declined commit wrote")
	}
}

// TestTasks_CancelStopsSendingAndEveryTargetStaysTruthful: a task's
// commit is cancelled mid-run: it stops sending, the task says cancelled,
// and through get_operation every target is pending (never sent) or has the
// outcome its answer showed; nothing is written after.
func TestTasks_CancelStopsSendingAndEveryTargetStaysTruthful(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTasks(true))
	// The fourth write and those after it wait until the cancellation has
	// been asked: however slow the machine, targets are still unsent when
	// it arrives, and the writes in flight answer only after it.
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release) // a test that fails early holds no write
	h.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{HoldAfter: 3, Hold: hold})
	rpc := h.taskRPC()
	p := h.call("preview_selection", seedPreview(nil))
	created := rpc.call("commit_bulk_action", commitArgsFor(p, "dry_run", nil))
	if created["status"] != string(mcp.TaskStatusWorking) {
		t.Fatalf("a dry run's task: %v", created)
	}
	id := created["taskId"]
	_ = id
	h.approveAsOperator(p.data["selection_id"])
	created = rpc.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if created["status"] != string(mcp.TaskStatusWorking) {
		t.Fatalf("an approved commit's task: %v", created)
	}
	id = created["taskId"]
	for len(h.api.Writes()) < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, e := rpc.send("tasks/cancel", map[string]any{"taskId": id}); e != nil {
		t.Fatalf("tasks/cancel: %v", e)
	}
	release()
	done := rpc.wait(id, "cancelled", "completed")
	if done["status"] != "cancelled" || !strings.Contains(fmt.Sprint(done["statusMessage"]), "pending (never sent)") {
		t.Fatalf("the cancelled task: %v", done)
	}
	h.deps.Engine.Wait()
	writes := len(h.api.Writes())
	opID := strings.Fields(fmt.Sprint(done["statusMessage"]))[1]
	op := h.call("get_operation", map[string]any{"operation_id": opID, "page_size": 500})
	if op.data["status"] != selection.OpStopped {
		t.Fatalf("the operation is %v", op.data["status"])
	}
	pending := 0
	for _, x := range op.data["results"].([]any) {
		tg := x.(map[string]any)
		id := fmt.Sprint(tg["id"])
		switch tg["outcome"] {
		case "pending":
			pending++
			if h.api.Applied(fixtures.DatasetSubscriptions, id) != 0 {
				t.Fatalf("%s is pending but was applied", id)
			}
		case "succeeded":
			if h.api.Applied(fixtures.DatasetSubscriptions, id) != 1 {
				t.Fatalf("%s succeeded but was applied %d times", id, h.api.Applied(fixtures.DatasetSubscriptions, id))
			}
		case "unknown":
		default:
			t.Fatalf("%s is %v after a cancellation", id, tg["outcome"])
		}
	}
	if pending == 0 {
		t.Fatal("no target was left pending: the cancellation did not stop the run")
	}
	time.Sleep(100 * time.Millisecond)
	if len(h.api.Writes()) != writes {
		t.Fatal("writes went out after the cancelled operation stopped")
	}
}

// TestTasks_LongSearchAndPreviewAreTasksWithTheCallsEnvelope: a search_all
// with a long deadline and a preview_selection answer with tasks whose
// results are the envelopes the calls answer; a short search_all answers
// at once.
func TestTasks_LongSearchAndPreviewAreTasksWithTheCallsEnvelope(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTasks(true))
	rpc := h.taskRPC()
	short := rpc.call("search_all", map[string]any{"resource": "subscriptions", "max_items": 5})
	if short["resultType"] == "task" || short["structuredContent"] == nil {
		t.Fatalf("a short search answered with a task: %v", short)
	}
	args := map[string]any{"resource": "subscriptions", "filter": map[string]any{"region": "eu"}, "max_items": 5, "deadline_ms": 60000}
	created := rpc.call("search_all", args)
	if created["resultType"] != "task" {
		t.Fatalf("a long search did not answer with a task: %v", created)
	}
	done := rpc.wait(created["taskId"], "completed")
	want := h.call("search_all", args)
	var wm map[string]any
	_ = json.Unmarshal(want.raw, &wm)
	delete(wm["coverage"].(map[string]any), "elapsed_ms")
	got := structured(t, done["result"])
	// The continuation cursor names each call's own frozen scan.
	delete(got["continuation"].(map[string]any), "cursor")
	delete(wm["continuation"].(map[string]any), "cursor")
	if !reflect.DeepEqual(got, wm) {
		t.Fatalf("the task's result\n%v\nis not the call's envelope\n%v", got, wm)
	}

	created = rpc.call("preview_selection", seedPreview(nil))
	if created["resultType"] != "task" {
		t.Fatalf("a preview did not answer with a task: %v", created)
	}
	env := structured(t, rpc.wait(created["taskId"], "completed")["result"])
	sel := env["data"].(map[string]any)["selection_id"]
	if g := h.call("get_selection", map[string]any{"selection_id": sel, "page_size": 1}); g.env.Problem != nil {
		t.Fatalf("the task's selection: %+v", g.env.Problem)
	}
}

// TestTasks_ReadTaskRunsAgainWhenItsRunnerStops: the process running a
// read task stops (its background ends without a result); the next
// tasks/get after three missed heartbeats, on another process sharing the
// store, runs the call again and the task completes there.
func TestTasks_ReadTaskRunsAgainWhenItsRunnerStops(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTasks(true))
	h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Latency: 200 * time.Millisecond})
	first, stop := context.WithCancel(context.Background())
	h.srv.tasks.Background = first
	rpc := h.taskRPC()
	created := rpc.call("preview_selection", seedPreview(nil))
	id := fmt.Sprint(created["taskId"])
	stop() // the first runner's process stops
	// Another process on the same store answers the task's tasks/get.
	otherSrv, err := NewServer(h.build(), Options{Tasks: &TaskOptions{Beat: h.tasks.Beat}})
	if err != nil {
		t.Fatal(err)
	}
	other := otherSrv.tasks
	time.Sleep(4 * other.beat())
	h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{})
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := other.view(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if v.status == mcp.TaskStatusCompleted {
			env := structured(t, asMap(t, v.result))
			if env["data"].(map[string]any)["selection_id"] == nil {
				t.Fatalf("the re-run's result: %v", env)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task is %s 30 s after its runner stopped", v.status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, _ := h.deps.Store.Meta(context.Background(), taskAttemptKey(id, 2)); len(n) == 0 {
		t.Fatal("the task did not run a second attempt")
	}
}

// TestTasks_ClientsThatDoNotOptInSeeNoChange: with tasks served, a client
// that does not declare the extension gets the commit's result in the call,
// as before, the tools it lists are exactly the golden definitions, and the
// task methods refuse it with MISSING_REQUIRED_CLIENT_CAPABILITY.
func TestTasks_ClientsThatDoNotOptInSeeNoChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTasks(false))
	p := h.call("preview_selection", seedPreview(nil))
	if p.data["selection_id"] == nil {
		t.Fatalf("preview: %v", p.env.Problem)
	}
	r := h.call("commit_bulk_action", commitArgsFor(p, "dry_run", map[string]any{"wait_ms": 30000}))
	if r.data["operation_id"] == nil || r.data["status"] != selection.OpCompleted {
		t.Fatalf("the commit did not answer in the call: %v %v", r.data, r.env.Problem)
	}
	// The tools listed are those of a server without tasks, byte for byte.
	plain := newHarness(t)
	listed := func(h *harness) string {
		list, err := h.client.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(list.Tools)
		return string(b)
	}
	if got, want := listed(h), listed(plain); got != want {
		t.Fatalf("with tasks served, tools/list is\n%s\nwithout\n%s", got, want)
	}
	if strings.Contains(listed(h), "taskSupport") {
		t.Fatal("a tool declares task support")
	}
	rpc := h.taskRPC()
	if _, e := rpc.send("tasks/get", map[string]any{"taskId": "task_x"}); e == nil || e.Code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY {
		t.Fatalf("tasks/get from a client without the extension: %v", e)
	}
}

// TestTasks_UnknownTaskIsInvalidParams: a task id no process made.
func TestTasks_UnknownTaskIsInvalidParams(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTasks(true))
	rpc := h.taskRPC()
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		if _, e := rpc.send(m, map[string]any{"taskId": "task_00000000-0000-4000-8000-000000000000"}); e == nil || e.Code != mcp.INVALID_PARAMS {
			t.Fatalf("%s of an unknown task: %v", m, e)
		}
	}
}

// panickingStore panics in CreateSelection once armed: a bug deep in a
// task's background run.
type panickingStore struct {
	selection.Store
	armed atomic.Bool
}

func (s *panickingStore) CreateSelection(ctx context.Context, sel *selection.Selection) error {
	// zq7x is no hex: it cannot appear by chance in a request id.
	if s.armed.Load() {
		panic("store driver bug: assignment to entry in nil map zq7x")
	}
	return s.Store.CreateSelection(ctx, sel)
}

// TestTasks_APanicInABackgroundRunIsAnInternalErrorResult: a read task
// whose run panics does not end the process: the task completes with the
// INTERNAL_ERROR problem a call's panic answers, under a request id whose
// log line holds the cause, and nothing of the cause reaches the client.
func TestTasks_APanicInABackgroundRunIsAnInternalErrorResult(t *testing.T) {
	t.Parallel()
	ps := &panickingStore{}
	h := newHarness(t, withTasks(true), withStore(func(s selection.Store) selection.Store { ps.Store = s; return ps }))
	rpc := h.taskRPC()
	ps.armed.Store(true)
	created := rpc.call("preview_selection", seedPreview(nil))
	if created["resultType"] != "task" {
		t.Fatalf("the preview did not answer with a task: %v", created)
	}
	done := rpc.wait(created["taskId"], "completed", "failed")
	res, _ := json.Marshal(done["result"])
	if strings.Contains(string(res), "zq7x") || strings.Contains(string(res), "nil map") {
		t.Fatalf("the task's result tells the cause: %s", res)
	}
	env := structured(t, done["result"])
	p, _ := env["problem"].(map[string]any)
	if p["code"] != string(envelope.ProblemInternal) || p["request_id"] == nil {
		t.Fatalf("the task's result is not INTERNAL_ERROR with a request id: %v", env)
	}
	var logged bool
	for _, line := range strings.Split(string(h.logs.Bytes()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["request_id"] == p["request_id"] && strings.Contains(fmt.Sprint(rec["panic"]), "nil map zq7x") {
			logged = true
		}
	}
	if !logged {
		t.Fatalf("no log line holds the panic under request %v", p["request_id"])
	}
	// The process still serves.
	if r := h.call("describe_resources", map[string]any{}); r.env.Problem != nil {
		t.Fatalf("after the panic: %+v", r.env.Problem)
	}
}

// TestTasks_ExpireAfterTheirTTLAndAreDeletedFromTheStore: a task reports
// its TTL: the default, or the one the client asked for up to the
// maximum. Past it, tasks/get finds no task, and the store holds none of
// its keys, whether the task was asked for again or not (a new task sweeps
// the expired ones).
func TestTasks_ExpireAfterTheirTTLAndAreDeletedFromTheStore(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := newHarness(t, withTasks(true), withClock(clock))
	rpc := h.taskRPC()
	p := h.call("preview_selection", seedPreview(nil))
	// A commit whose selection needs the user's approval: a task waiting
	// for input, with no operation behind it yet.
	commit := func(task map[string]any) map[string]any {
		t.Helper()
		params := map[string]any{"name": "commit_bulk_action", "arguments": commitArgsFor(p, "execute", nil)}
		if task != nil {
			params["task"] = task
		}
		res, e := rpc.send("tools/call", params)
		if e != nil {
			t.Fatalf("tools/call: %d %s", e.Code, e.Message)
		}
		m := asMap(t, res)
		if m["resultType"] != "task" {
			t.Fatalf("the commit did not answer with a task: %v", m)
		}
		return m
	}
	ttl := func(m map[string]any) time.Duration {
		f, ok := m["ttlMs"].(float64)
		if !ok {
			t.Fatalf("the task reports no TTL: %v", m)
		}
		return time.Duration(f) * time.Millisecond
	}
	byDefault, asked, tooLong := commit(nil), commit(map[string]any{"ttl": 90_000}), commit(map[string]any{"ttl": (48 * time.Hour).Milliseconds()})
	if ttl(byDefault) != DefaultTaskTTL || ttl(asked) != 90*time.Second || ttl(tooLong) != MaxTaskTTL {
		t.Fatalf("TTLs %v, %v, %v; want %v, 90s, %v", ttl(byDefault), ttl(asked), ttl(tooLong), DefaultTaskTTL, MaxTaskTTL)
	}
	if got := ttl(rpc.get(asked["taskId"])); got != 90*time.Second {
		t.Fatalf("tasks/get reports a TTL of %v", got)
	}
	gone := func(id any) bool {
		t.Helper()
		keys, err := h.deps.Store.MetaKeys(context.Background(), taskKey(fmt.Sprint(id)), taskKey(fmt.Sprint(id))+"0", 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(keys) == 0
	}
	clock.Advance(90*time.Second + time.Millisecond)
	if _, e := rpc.send("tasks/get", map[string]any{"taskId": asked["taskId"]}); e == nil || e.Code != mcp.INVALID_PARAMS {
		t.Fatalf("tasks/get past the TTL: %v", e)
	}
	if !gone(asked["taskId"]) {
		t.Fatal("a task past its TTL is still in the store")
	}
	if rpc.get(byDefault["taskId"])["status"] == nil || gone(byDefault["taskId"]) {
		t.Fatal("a task within its TTL is gone")
	}
	// Past the default TTL, nobody asks for the task again: the next task
	// made sweeps it.
	clock.Advance(DefaultTaskTTL)
	p = h.call("preview_selection", seedPreview(nil)) // the first expired too
	commit(nil)
	if !gone(byDefault["taskId"]) {
		t.Fatal("a task past its TTL, never asked for again, is still in the store after the next task was made")
	}
	if gone(tooLong["taskId"]) {
		t.Fatal("the task with the maximum TTL is gone before it")
	}
}

// TestTasks_AStoppedOperationsTaskIsNeverCompleted: a commit's task agrees
// with get_operation: an operation that stopped with targets never sent
// is not a completed task but a failed one, whose error carries the
// operation's envelope.
func TestTasks_AStoppedOperationsTaskIsNeverCompleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTasks(true))
	rpc := h.taskRPC()
	p := h.call("preview_selection", seedPreview(nil))
	h.approveAsOperator(p.data["selection_id"])
	h.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{FailAll: 401})
	created := rpc.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
	if created["resultType"] != "task" {
		t.Fatalf("the commit did not answer with a task: %v", created)
	}
	id := fmt.Sprint(created["taskId"])
	h.deps.Engine.Wait()
	opID, err := h.deps.Store.Meta(context.Background(), taskOperationKey(id))
	if err != nil {
		t.Fatal(err)
	}
	op := h.call("get_operation", map[string]any{"operation_id": string(opID)})
	if op.data["status"] != selection.OpStopped || op.env.Complete {
		t.Fatalf("the operation: %v", op.data["status"])
	}
	task := rpc.get(id)
	if task["status"] != string(mcp.TaskStatusFailed) || !strings.Contains(fmt.Sprint(task["statusMessage"]), "stopped") {
		t.Fatalf("a stopped operation's task is %v (%v); get_operation says %v", task["status"], task["statusMessage"], op.data["status"])
	}
	e, _ := task["error"].(map[string]any)
	data := structured(t, e["data"])
	if d, _ := data["data"].(map[string]any); d["status"] != selection.OpStopped || data["complete"] != false {
		t.Fatalf("the failed task's error does not carry the operation's envelope: %v", e)
	}
}

// TestTasks_ServedOnStdioAsOnStreamableHTTP: the task service is the
// protocol's, not a transport's. Over stdio as over streamable HTTP, a
// client that declares the extension gets a commit's task waiting for its
// approval, tasks/update carries the answer and the task completes with the
// operation's envelope; a long search is a task whose result is the
// envelope the call answers; a client that did not declare the extension
// is refused the task methods.
func TestTasks_ServedOnStdioAsOnStreamableHTTP(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"http", "stdio"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, withTasks(true), withTransport(tr, ""))
			rpc := h.taskRPC()
			p := h.call("preview_selection", seedPreview(nil))
			created := rpc.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
			if created["resultType"] != "task" || created["status"] != string(mcp.TaskStatusInputRequired) {
				t.Fatalf("the commit did not answer with a task waiting for input: %v", created)
			}
			id := created["taskId"]
			if _, e := rpc.send("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
				tools.ApprovalKey: map[string]any{"action": "accept", "content": map[string]any{"approve": true, "acknowledge": true}}}}); e != nil {
				t.Fatalf("tasks/update: %v", e)
			}
			done := rpc.wait(id, "completed", "failed", "cancelled")
			env := structured(t, done["result"])
			if data, _ := env["data"].(map[string]any); done["status"] != "completed" || data["status"] != selection.OpCompleted {
				t.Fatalf("the task ended %v: %v", done["status"], env)
			}
			if n := len(h.api.Writes()); n == 0 {
				t.Fatal("the approved commit wrote nothing")
			}

			args := map[string]any{"resource": "subscriptions", "filter": map[string]any{"region": "eu"}, "max_items": 5, "deadline_ms": 60000}
			search := rpc.call("search_all", args)
			if search["resultType"] != "task" {
				t.Fatalf("a long search did not answer with a task: %v", search)
			}
			got := structured(t, rpc.wait(search["taskId"], "completed")["result"])
			var want map[string]any
			_ = json.Unmarshal(h.call("search_all", args).raw, &want)
			delete(want["coverage"].(map[string]any), "elapsed_ms")
			delete(got["continuation"].(map[string]any), "cursor")
			delete(want["continuation"].(map[string]any), "cursor")
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("the task's result\n%v\nis not the call's envelope\n%v", got, want)
			}

			plain := h.taskRPC()
			plain.caps.Extensions = nil
			if _, e := plain.send("tasks/get", map[string]any{"taskId": id}); e == nil || e.Code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY {
				t.Fatalf("tasks/get from a client without the extension: %v", e)
			}
		})
	}
}
