package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
)

// Long calls as tasks (the protocol's Tasks extension, 2026-07-28).
//
// A client of protocol 2026-07-28 that declares the extension
// io.modelcontextprotocol/tasks in a request's capabilities may receive a
// task instead of a result, on every transport (stdio, streamable HTTP),
// for a tool whose traits say so (tools.TaskSupport): commit_bulk_action
// and preview_selection always, search_all when its deadline_ms is over
// tools.TaskSearchDeadline. Every other client, and every other call, sees
// no change. The service reads each JSON-RPC message before the MCP server
// does (serve) and answers the task methods and the calls it makes tasks
// of itself, running the tools as a call through the MCP server would.
//
// A task is a view of durable state, never of one process's memory, so that
// tasks/get, tasks/update and tasks/cancel answer on any replica sharing the
// store, after a crash or a takeover:
//   - a commit's task is its operation: working while the operation runs,
//     then completed with the envelope commit_bulk_action would have
//     returned, or cancelled once a tasks/cancel stopped it (every target
//     still truthful: pending if never sent, unknown if sent unobserved);
//   - a commit that needs the user's approval is input_required, with the
//     approval request bound, as in a call, to the selection, its digest and
//     the action's digest; tasks/update carries the answer, and the commit
//     runs again with it, as a client's retried call would;
//   - a read task (preview_selection, search_all) runs in the background on
//     the process that accepted it, which keeps a heartbeat in the store and
//     stores the result there; when the heartbeat stops, the next tasks/get
//     on any process runs the call again (it reads, and writes only airlock
//     state) and the task answers from that run.
//
// A task of a tool that writes (tools.Traits.Writes) is a view of its
// operation; a task of any other runs the call in the background.
//
// A commit's task is completed only when its operation finished with every
// target settled: an operation that stopped, was interrupted or left
// targets unsettled is a failed task (cancelled, when a tasks/cancel
// stopped it), so that tasks/get never says more than get_operation.
//
// Every task has a TTL (ttlMs): DefaultTaskTTL, or the ttl the client asks
// for in the call's params.task, up to MaxTaskTTL. Past it the task is
// gone: tasks/get answers as for an unknown task, and its records are
// deleted from the store (when it is next asked for, and by the sweep each
// new task makes). A commit's operation outlives its task: get_operation
// still answers.
//
// A panic inside a task's background run is recovered as a call's is: the
// task completes with INTERNAL_ERROR, the cause logged.
//
// Tasks are recorded in the store's meta table under task/ID, and indexed
// by expiry under task-expiry/.

// TasksExtension identifies the protocol's Tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Defaults of the task runner.
const (
	DefaultTaskPollInterval = time.Second
	DefaultTaskBeat         = 2 * time.Second
	// DefaultTaskTTL is how long a task is kept from its creation when the
	// client asks for no TTL; MaxTaskTTL bounds the TTL a client may ask
	// for.
	DefaultTaskTTL = time.Hour
	MaxTaskTTL     = 24 * time.Hour
)

// taskSweepBatch bounds the expired tasks one sweep deletes.
const taskSweepBatch = 100

// TaskOptions configure the task service (Options.Tasks).
type TaskOptions struct {
	// PollInterval is the pollIntervalMs tasks suggest
	// (DefaultTaskPollInterval when zero).
	PollInterval time.Duration
	// Beat is how often a read task's runner writes its heartbeat
	// (DefaultTaskBeat when zero); a runner silent for three beats is
	// taken to be gone, and the task runs again.
	Beat time.Duration
	// Background bounds the read tasks this process runs (cancel it to
	// stop them); context.Background() when nil.
	Background context.Context
	// TTL is a task's TTL when the client asks for none (DefaultTaskTTL
	// when zero); MaxTTL bounds the one it asks for (MaxTaskTTL when
	// zero).
	TTL, MaxTTL time.Duration
}

// tasks serves tool calls as tasks.
type tasks struct {
	TaskOptions
	s      *Server
	d      *tools.Deps
	holder string
	mu     sync.Mutex
	runs   map[string]context.CancelFunc
}

func newTasks(s *Server, opts TaskOptions) *tasks {
	host, _ := os.Hostname()
	return &tasks{TaskOptions: opts, s: s, d: s.d, holder: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8]),
		runs: map[string]context.CancelFunc{}}
}

func (t *tasks) pollInterval() time.Duration {
	if t.PollInterval > 0 {
		return t.PollInterval
	}
	return DefaultTaskPollInterval
}

func (t *tasks) beat() time.Duration {
	if t.Beat > 0 {
		return t.Beat
	}
	return DefaultTaskBeat
}

// ttlFor is the TTL of a new task whose client asked for requested
// milliseconds (nil: none asked).
func (t *tasks) ttlFor(requested *int64) time.Duration {
	ttl, most := t.TTL, t.MaxTTL
	if ttl <= 0 {
		ttl = DefaultTaskTTL
	}
	if most <= 0 {
		most = MaxTaskTTL
	}
	if requested != nil && *requested > 0 {
		ttl = time.Duration(min(*requested, most.Milliseconds())) * time.Millisecond
	}
	return min(ttl, most)
}

func (t *tasks) background() context.Context {
	if t.Background != nil {
		return t.Background
	}
	return context.Background()
}

// taskRecord is what the store keeps of a task when it is made; what
// changes later (its operation, its result, a cancellation, a runner's
// heartbeat) is kept under keys of its own, each written once or by one
// runner.
type taskRecord struct {
	ID      string          `json:"id"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Client  string          `json:"client"`
	Created time.Time       `json:"created"`
	// Owner is the principal that made the task: only it may read,
	// answer or cancel it, and a read task runs again as it.
	Owner       selection.Principal `json:"owner"`
	OwnerGroups []string            `json:"owner_groups,omitempty"`
	OwnerScopes []string            `json:"owner_scopes,omitempty"`
	// InputRequests and RequestState are the approval a commit waits for.
	InputRequests mcp.InputRequests `json:"input_requests,omitempty"`
	RequestState  string            `json:"request_state,omitempty"`
	// TTLMs is how long the task is kept from Created (0, in a record made
	// before tasks had one: DefaultTaskTTL).
	TTLMs int64 `json:"ttl_ms,omitempty"`
}

// ttl is the task's TTL.
func (rec *taskRecord) ttl() time.Duration {
	if rec.TTLMs <= 0 {
		return DefaultTaskTTL
	}
	return time.Duration(rec.TTLMs) * time.Millisecond
}

// expires is when the task may be deleted.
func (rec *taskRecord) expires() time.Time { return rec.Created.Add(rec.ttl()) }

// taskExpiryPrefix indexes tasks by expiry: task-expiry/MS/ID, MS the
// expiry in Unix milliseconds, zero-padded so that byte order is time
// order.
const taskExpiryPrefix = "task-expiry/"

func taskExpiryKey(rec *taskRecord) string {
	return fmt.Sprintf("%s%020d/%s", taskExpiryPrefix, rec.expires().UnixMilli(), rec.ID)
}

func taskKey(id string) string               { return "task/" + id }
func taskOperationKey(id string) string      { return "task/" + id + "/operation" }
func taskResultKey(id string) string         { return "task/" + id + "/result" }
func taskCancelKey(id string) string         { return "task/" + id + "/cancel" }
func taskBeatKey(id string) string           { return "task/" + id + "/beat" }
func taskAttemptKey(id string, n int) string { return "task/" + id + "/attempt/" + strconv.Itoa(n) }

// commit runs a call of a tool that writes for a task: it returns as soon
// as its operation exists (or asks for approval), and the task is a view
// of that operation. rec is the task whose answer the call carries (nil:
// a new call). It returns the task made (nil: the call answered as it
// would outside a task, with env).
func (t *tasks) commit(ctx context.Context, spec tools.Spec, call *tools.Call, ttl *int64, rec *taskRecord) (*taskView, *envelope.Envelope) {
	env := t.s.exec(ctx, spec, call, t.s.logFor(spec, call))
	switch {
	case call.Ask != nil:
		ask := redactedAsk(call.Ask, t.d.Redactor)
		call.Ask = nil
		if rec != nil {
			// A second round of questions within one task: the first
			// answer did not settle it. The commit asks again in a call.
			return nil, env
		}
		rec = t.newRecord(spec.Name, call, ttl)
		rec.InputRequests, rec.RequestState = inputRequests(ask), ask.State
		if err := t.put(ctx, rec); err != nil {
			return nil, t.internal(ctx, spec, call, "record the task", err)
		}
		return t.inputView(rec), nil
	case env.Problem == nil:
		opID := tools.OperationID(env)
		if opID == "" {
			return nil, env
		}
		if rec == nil {
			rec = t.newRecord(spec.Name, call, ttl)
			if err := t.put(ctx, rec); err != nil {
				return nil, t.internal(ctx, spec, call, "record the task", err)
			}
		}
		if _, err := t.d.Store.SetMetaIfAbsent(ctx, taskOperationKey(rec.ID), []byte(opID)); err != nil {
			return nil, t.internal(ctx, spec, call, "record the task's operation", err)
		}
		v := baseView(rec)
		v.status, v.updated = mcp.TaskStatusWorking, t.d.Clock.Now()
		return v, nil
	case rec != nil:
		// The answer to the task's approval ended the commit (declined,
		// expired, replayed): that problem is the task's result.
		t.storeResult(ctx, rec.ID, spec, env)
		return &taskView{id: rec.ID}, env
	default:
		// Refused before anything was made: an ordinary answer.
		return nil, env
	}
}

// internal is the INTERNAL_ERROR answer of a task the store would not
// keep, its cause logged under the call's request id.
func (t *tasks) internal(ctx context.Context, spec tools.Spec, call *tools.Call, what string, err error) *envelope.Envelope {
	t.d.Logger.ErrorContext(ctx, "internal error", "tool", spec.Name, "request_id", call.RequestID, "what", what, "err", err)
	env := envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemInternal, "").WithRequest(call.RequestID))
	env.Finish()
	return env
}

func (t *tasks) newRecord(tool string, call *tools.Call, ttl *int64) *taskRecord {
	return &taskRecord{ID: "task_" + uuid.NewString(), Tool: tool, Args: json.RawMessage(t.d.Redactor.Bytes(call.Raw)),
		Client: call.Client, Created: t.d.Clock.Now().UTC(), Owner: call.Principal,
		OwnerGroups: call.Principal.Groups, OwnerScopes: call.Principal.Scopes, TTLMs: t.ttlFor(ttl).Milliseconds()}
}

// owner is the principal that made the task, with its groups and scopes.
func (rec *taskRecord) owner() selection.Principal {
	p := rec.Owner
	p.Groups, p.Scopes = rec.OwnerGroups, rec.OwnerScopes
	return p
}

// owned refuses a task another principal made as if it did not exist:
// a task id is no capability.
func (t *tasks) owned(ctx context.Context, id string, who selection.Principal) error {
	rec, err := t.record(ctx, id)
	if errors.Is(err, selection.ErrNotFound) {
		return errTaskNotFound
	}
	if err != nil {
		return err
	}
	if who.Subject != rec.Owner.Subject || who.ClientID != rec.Owner.ClientID {
		return errTaskNotFound
	}
	return nil
}

// put stores a new task: a task exists once tasks/get can find it, before
// its id is given out. Its expiry is indexed first, so that no task is
// stored that the sweep cannot find; then the expired tasks are swept.
func (t *tasks) put(ctx context.Context, rec *taskRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := t.d.Store.SetMeta(ctx, taskExpiryKey(rec), []byte(rec.ID)); err != nil {
		return err
	}
	if _, err = t.d.Store.SetMetaIfAbsent(ctx, taskKey(rec.ID), b); err != nil {
		return err
	}
	t.sweep(ctx)
	return nil
}

// record reads a task; a task past its TTL is deleted and not found.
func (t *tasks) record(ctx context.Context, id string) (*taskRecord, error) {
	b, err := t.d.Store.Meta(ctx, taskKey(id))
	if err != nil {
		return nil, err
	}
	var rec taskRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("task %q: %w", id, err)
	}
	if !t.d.Clock.Now().Before(rec.expires()) {
		if err := t.delete(ctx, rec.ID, taskExpiryKey(&rec)); err != nil {
			t.d.Logger.Warn("could not delete an expired task", "task_id", rec.ID, "err", err)
		}
		return nil, selection.ErrNotFound
	}
	return &rec, nil
}

// delete removes a task's records and its expiry index entry, and stops
// its run in this process.
func (t *tasks) delete(ctx context.Context, id, expiryKey string) error {
	t.mu.Lock()
	stop := t.runs[id]
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	if err := t.d.Store.DeleteMeta(ctx, taskKey(id)); err != nil {
		return err
	}
	return t.d.Store.DeleteMeta(ctx, expiryKey)
}

// sweep deletes tasks past their TTL (taskSweepBatch at most), found
// through the expiry index. A failure is logged: the next sweep tries
// again.
func (t *tasks) sweep(ctx context.Context) {
	to := fmt.Sprintf("%s%020d", taskExpiryPrefix, t.d.Clock.Now().UnixMilli()+1)
	keys, err := t.d.Store.MetaKeys(ctx, taskExpiryPrefix, to, taskSweepBatch)
	if err != nil {
		t.d.Logger.Warn("could not list expired tasks", "err", err)
		return
	}
	for _, k := range keys {
		id := k[strings.LastIndexByte(k, '/')+1:]
		if err := t.delete(ctx, id, k); err != nil {
			t.d.Logger.Warn("could not delete an expired task", "task_id", id, "err", err)
			return
		}
	}
	if len(keys) > 0 {
		t.d.Logger.Info("deleted expired tasks", "count", len(keys))
	}
}

// meta reads an optional meta value: nil when absent.
func (t *tasks) meta(ctx context.Context, key string) ([]byte, error) {
	b, err := t.d.Store.Meta(ctx, key)
	if errors.Is(err, selection.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// storeResult keeps a task's final result: the tool result, rendered and
// redacted as the call would have returned it. The first result stands.
func (t *tasks) storeResult(ctx context.Context, id string, s tools.Spec, env *envelope.Envelope) {
	if env.Problem != nil && env.Problem.RequestID == "" {
		env.Problem.WithRequest(newRequestID())
	}
	b, err := json.Marshal(t.s.render(s, env, nil))
	if err == nil {
		_, err = t.d.Store.SetMetaIfAbsent(ctx, taskResultKey(id), b)
	}
	if err != nil {
		t.d.Logger.Error("could not store a task's result", "task_id", id, "err", err)
	}
}

// startRead makes a read task and runs it in the background.
func (t *tasks) startRead(ctx context.Context, s tools.Spec, call *tools.Call, ttl *int64) (*taskView, *envelope.Envelope) {
	rec := t.newRecord(s.Name, call, ttl)
	if err := t.put(ctx, rec); err != nil {
		return nil, t.internal(ctx, s, call, "record the task", err)
	}
	if _, err := t.d.Store.SetMetaIfAbsent(ctx, taskAttemptKey(rec.ID, 1), []byte(t.holder)); err != nil {
		return nil, t.internal(ctx, s, call, "record the task's attempt", err)
	}
	t.beatOnce(ctx, rec.ID, 1)
	t.runRead(context.WithoutCancel(ctx), rec, 1, call.Raw)
	v := baseView(rec)
	v.status = mcp.TaskStatusWorking
	return v, nil
}

type taskBeat struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
}

func (t *tasks) beatOnce(ctx context.Context, id string, attempt int) {
	b, _ := json.Marshal(taskBeat{Attempt: attempt, At: t.d.Clock.Now()})
	if err := t.d.Store.SetMeta(ctx, taskBeatKey(id), b); err != nil {
		t.d.Logger.Warn("could not write a task's heartbeat", "task_id", id, "err", err)
	}
}

// runRead runs a read task's call in the background (attempt n): it keeps
// the heartbeat, stops when the task is cancelled, and stores the result.
func (t *tasks) runRead(base context.Context, rec *taskRecord, attempt int, raw json.RawMessage) {
	s, ok := t.s.specs[rec.Tool]
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(base)
	stopWithServer := context.AfterFunc(t.background(), cancel)
	t.mu.Lock()
	t.runs[rec.ID] = cancel
	t.mu.Unlock()
	go func() {
		defer func() {
			stopWithServer()
			cancel()
			t.mu.Lock()
			delete(t.runs, rec.ID)
			t.mu.Unlock()
			// exec recovers the tool's own panic; one in storing its
			// result must not end the process with every other call.
			if p := recover(); p != nil {
				t.d.Logger.Error("a task's background run panicked", "task_id", rec.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
		}()
		done := make(chan struct{})
		go func() {
			tick := t.d.Clock.NewTicker(t.beat())
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C():
					if c, _ := t.meta(ctx, taskCancelKey(rec.ID)); c != nil {
						cancel()
						return
					}
					if r, err := t.meta(ctx, taskKey(rec.ID)); err == nil && r == nil {
						// Deleted (past its TTL): nobody waits for it.
						cancel()
						return
					}
					t.beatOnce(ctx, rec.ID, attempt)
				}
			}
		}()
		call := newCall(raw, rec.Client, rec.owner())
		call.Task = true
		env := t.s.exec(ctx, s, call, t.s.logFor(s, call).With("task_id", rec.ID))
		close(done)
		if ctx.Err() != nil {
			// Cancelled, or this process is stopping: no result; a
			// stopping process's task runs again elsewhere.
			return
		}
		if r, err := t.meta(ctx, taskKey(rec.ID)); err == nil && r == nil {
			return // deleted meanwhile (past its TTL): its result would be an orphan
		}
		t.storeResult(context.WithoutCancel(ctx), rec.ID, s, env)
		t.d.Logger.Info("task finished", "task_id", rec.ID, "tool", rec.Tool, "status", env.Status)
	}()
}

// taskView is a task as tasks/get shows it.
type taskView struct {
	id               string
	status           mcp.TaskStatus
	message          string
	created, updated time.Time
	ttl              time.Duration
	result           json.RawMessage
	// failure is the JSON-RPC error of a failed task.
	failure       map[string]any
	inputRequests mcp.InputRequests
}

// baseView is the task's view before its state is read.
func baseView(rec *taskRecord) *taskView {
	return &taskView{id: rec.ID, created: rec.Created, updated: rec.Created, ttl: rec.ttl()}
}

func (t *tasks) inputView(rec *taskRecord) *taskView {
	v := baseView(rec)
	v.status, v.message, v.inputRequests = mcp.TaskStatusInputRequired, "waiting for the user's approval", rec.InputRequests
	return v
}

// wire renders a task as the extension's Task object (a DetailedTask on
// tasks/get; resultType task when it answers tools/call).
func (t *tasks) wire(v *taskView, resultType string) map[string]any {
	m := map[string]any{
		"resultType": resultType, "taskId": v.id, "status": v.status,
		"createdAt": v.created.UTC().Format(time.RFC3339), "lastUpdatedAt": v.updated.UTC().Format(time.RFC3339),
		"ttlMs": v.ttl.Milliseconds(), "pollIntervalMs": t.pollInterval().Milliseconds(),
	}
	if v.message != "" {
		m["statusMessage"] = v.message
	}
	if v.result != nil {
		m["result"] = v.result
	}
	if v.failure != nil {
		m["error"] = v.failure
	}
	if v.inputRequests != nil {
		m["inputRequests"] = v.inputRequests
	}
	return m
}

var errTaskNotFound = errors.New("task not found")

// view derives a task's state from the store.
func (t *tasks) view(ctx context.Context, id string) (*taskView, error) {
	rec, err := t.record(ctx, id)
	if errors.Is(err, selection.ErrNotFound) {
		return nil, errTaskNotFound
	}
	if err != nil {
		return nil, err
	}
	v := baseView(rec)
	cancelled, err := t.meta(ctx, taskCancelKey(id))
	if err != nil {
		return nil, err
	}
	opID, err := t.meta(ctx, taskOperationKey(id))
	if err != nil {
		return nil, err
	}
	if opID != nil {
		return t.operationView(ctx, v, rec.Tool, string(opID), cancelled != nil)
	}
	res, err := t.meta(ctx, taskResultKey(id))
	if err != nil {
		return nil, err
	}
	switch {
	case res != nil:
		v.status, v.result = mcp.TaskStatusCompleted, json.RawMessage(res)
		return v, nil
	case cancelled != nil:
		v.status, v.message = mcp.TaskStatusCancelled, "cancelled before it ran"
		return v, nil
	case rec.InputRequests != nil:
		return t.inputView(rec), nil
	}
	v.status = mcp.TaskStatusWorking
	if err := t.takeOverIfGone(ctx, rec); err != nil {
		return nil, err
	}
	return v, nil
}

// taskOperationStopped is the JSON-RPC error code of a failed commit task
// (in the range JSON-RPC leaves to implementations): its operation ended
// without a final outcome for every target.
const taskOperationStopped = -32000

// operationView is a commit task: its operation as it stands, saying no
// more than get_operation does. It is completed only when the operation
// finished with every target settled; stopped by tasks/cancel, cancelled;
// otherwise ended (stopped, interrupted, or with targets pending, in
// flight or unknown), failed, with the operation's envelope in its error.
func (t *tasks) operationView(ctx context.Context, v *taskView, tool, opID string, cancelled bool) (*taskView, error) {
	op, err := t.d.Engine.Operation(ctx, opID)
	if err != nil {
		return nil, err
	}
	v.updated = op.UpdatedAt
	unsettled := op.Counts[selection.TargetPending] + op.Counts[selection.TargetInFlight] + op.Counts[selection.TargetUnknown]
	settled := op.Total - op.Counts[selection.TargetPending] - op.Counts[selection.TargetInFlight]
	counts := fmt.Sprintf("%d succeeded, %d failed, %d skipped, %d unknown, %d pending (never sent); get_operation has every target",
		op.Counts[selection.TargetSucceeded], op.Counts[selection.TargetFailed], op.Counts[selection.TargetSkipped],
		op.Counts[selection.TargetUnknown], op.Counts[selection.TargetPending])
	switch {
	case op.Status == selection.OpRunning:
		v.status = mcp.TaskStatusWorking
		v.message = fmt.Sprintf("operation %s: %d of %d targets have an outcome", op.ID, settled, op.Total)
		return v, nil
	case cancelled && op.Status == selection.OpStopped:
		v.status = mcp.TaskStatusCancelled
		v.message = fmt.Sprintf("operation %s stopped: %s", op.ID, counts)
		return v, nil
	}
	s := t.s.specs[tool]
	env := t.d.OperationEnvelope(ctx, op)
	if env.Problem != nil {
		// The targets could not be read (logged): the task's state is
		// not known either.
		return nil, fmt.Errorf("operation %s: %s", op.ID, env.Problem.Code)
	}
	b, err := json.Marshal(t.s.render(s, env, nil))
	if err != nil {
		return nil, err
	}
	if (op.Status == selection.OpCompleted || op.Status == selection.OpCompletedWithFailures) && unsettled == 0 {
		v.status, v.result = mcp.TaskStatusCompleted, b
		return v, nil
	}
	ended := op.Status
	if ended == selection.OpCompleted || ended == selection.OpCompletedWithFailures {
		ended = "finished"
	}
	v.status = mcp.TaskStatusFailed
	v.message = fmt.Sprintf("operation %s %s with %d of %d targets without a final outcome: %s; resume it with commit_bulk_action resume: true",
		op.ID, ended, unsettled, op.Total, counts)
	v.failure = map[string]any{"code": taskOperationStopped, "message": "the operation ended without a final outcome for every target",
		"data": json.RawMessage(b)}
	return v, nil
}

// takeOverIfGone runs a read task again when its runner stopped beating
// (its process died or stopped): this process claims the next attempt, and
// of several processes asking at once one gets it.
func (t *tasks) takeOverIfGone(ctx context.Context, rec *taskRecord) error {
	b, err := t.meta(ctx, taskBeatKey(rec.ID))
	if err != nil {
		return err
	}
	last := taskBeat{Attempt: 1, At: rec.Created}
	if b != nil {
		if err := json.Unmarshal(b, &last); err != nil {
			return err
		}
	}
	if t.d.Clock.Now().Sub(last.At) < 3*t.beat() {
		return nil
	}
	next := last.Attempt + 1
	got, err := t.d.Store.SetMetaIfAbsent(ctx, taskAttemptKey(rec.ID, next), []byte(t.holder))
	if err != nil || string(got) != t.holder {
		return err
	}
	t.d.Logger.Warn("running a task again: its runner stopped beating", "task_id", rec.ID, "tool", rec.Tool, "attempt", next)
	t.beatOnce(ctx, rec.ID, next)
	t.runRead(t.background(), rec, next, rec.Args)
	return nil
}

// cancel asks a task to stop: a commit's operation stops sending (see
// selection.Engine.Cancel), a read task's runner stops, a task waiting for
// approval never runs.
func (t *tasks) cancel(ctx context.Context, id, requestID string) error {
	rec, err := t.record(ctx, id)
	if errors.Is(err, selection.ErrNotFound) {
		return errTaskNotFound
	}
	if err != nil {
		return err
	}
	if _, err := t.d.Store.SetMetaIfAbsent(ctx, taskCancelKey(id), []byte(t.d.Clock.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		return err
	}
	if opID, err := t.meta(ctx, taskOperationKey(id)); err != nil {
		return err
	} else if opID != nil {
		if _, err := t.d.Engine.Cancel(ctx, string(opID), rec.Client, requestID); err != nil {
			return err
		}
	}
	t.mu.Lock()
	stop := t.runs[id]
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	return nil
}
