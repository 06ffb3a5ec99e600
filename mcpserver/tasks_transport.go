package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/jsonrpc"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
)

// The task service is a protocol-level service: serve reads each JSON-RPC
// request before the MCP server does, on every transport that carries
// protocol 2026-07-28 (stdio: ServeStdio; streamable HTTP:
// NewHTTPHandler), and answers the ones that are its own.

// serve answers msg when it is the task service's: a task method
// (tasks/get, tasks/update, tasks/cancel) of a client that declares the
// Tasks extension (any other client is refused with
// MISSING_REQUIRED_CLIENT_CAPABILITY), or a tools/call of such a client
// that runs as a task (see tools.Spec.RunsAsTask). who is the principal
// the transport authenticated. It returns the JSON-RPC response and the
// HTTP status it goes with; handled false means the MCP server answers.
func (t *tasks) serve(ctx context.Context, msg *jsonrpc.Message, who selection.Principal) (resp []byte, status int, handled bool) {
	if !msg.HasID() {
		return nil, 0, false
	}
	opted := acceptsTasks(msg.Params.Meta)
	switch msg.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		if !opted {
			return jsonRPCError(msg.ID, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability",
				map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
		}
		resp, status = t.method(ctx, msg, who)
		return resp, status, true
	case "tools/call":
		if !t.takes(msg, who) {
			return nil, 0, false
		}
		resp, status = t.call(ctx, msg, t.s.specs[msg.Params.Name], who)
		return resp, status, true
	}
	return nil, 0, false
}

// takes reports whether serve answers msg.
func (t *tasks) takes(msg *jsonrpc.Message, who selection.Principal) bool {
	if !msg.HasID() {
		return false
	}
	switch msg.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		return true
	case "tools/call":
		spec, ok := t.s.specs[msg.Params.Name]
		return ok && acceptsTasks(msg.Params.Meta) && tools.MayCall(who, spec.Name) && spec.RunsAsTask(arguments(msg))
	}
	return false
}

// acceptsTasks reports whether a request of protocol 2026-07-28 declares
// the Tasks extension in its capabilities.
func acceptsTasks(meta jsonrpc.Meta) bool {
	if !mcp.IsModernProtocol(meta.ProtocolVersion) || meta.ClientCapabilities == nil {
		return false
	}
	_, ok := meta.ClientCapabilities.Extensions[TasksExtension]
	return ok
}

// arguments are a tools/call's arguments ({} when it sent none).
func arguments(msg *jsonrpc.Message) json.RawMessage {
	if len(msg.Params.Arguments) == 0 || string(msg.Params.Arguments) == "null" {
		return json.RawMessage("{}")
	}
	return msg.Params.Arguments
}

// callOf is the tools.Call of a request of protocol 2026-07-28: its client,
// capabilities and answer come with the request.
func callOf(msg *jsonrpc.Message, raw json.RawMessage, who selection.Principal) *tools.Call {
	meta := msg.Params.Meta
	client := "mcp client"
	if meta.ClientInfo != nil {
		client = clientName(meta.ClientInfo.Name, meta.ClientInfo.Version)
	}
	call := newCall(raw, client, who)
	call.Task = true
	call.CanAsk = meta.ClientCapabilities != nil && meta.ClientCapabilities.Elicitation != nil
	var answers mcp.InputResponses
	if len(msg.Params.InputResponses) > 0 {
		_ = json.Unmarshal(msg.Params.InputResponses, &answers)
	}
	call.Answer = answerFromParams(mcp.MultiRoundTripParams{InputResponses: answers, RequestState: msg.Params.RequestState})
	return call
}

// call runs a tools/call as a task: a tool that writes returns as soon as
// its operation exists (or asks for approval), any other runs in the
// background. A call refused before a task exists is answered as the MCP
// server would have.
func (t *tasks) call(ctx context.Context, msg *jsonrpc.Message, spec tools.Spec, who selection.Principal) ([]byte, int) {
	ctx, obs := t.s.observe(ctx, spec.Name)
	call := callOf(msg, arguments(msg), who)
	var ttl *int64
	if msg.Params.Task != nil {
		ttl = msg.Params.Task.TTL
	}
	var v *taskView
	var env *envelope.Envelope
	switch {
	case spec.Writes:
		v, env = t.commit(ctx, spec, call, ttl, nil)
	default:
		if env = t.s.recall(spec, call, t.s.logFor(spec, call)); env == nil {
			v, env = t.startRead(ctx, spec, call, ttl)
		}
	}
	if v != nil && v.status != "" {
		obs.became(tools.StatusTask)
		return jsonRPCResult(msg.ID, t.wire(v, "task"))
	}
	obs.answered(env)
	return jsonRPCResult(msg.ID, completeResult(t.s.render(spec, env, nil), t.s.version))
}

// completeResult is a tool result as the MCP server answers a request of
// protocol 2026-07-28: a complete result that names airlock at version.
func completeResult(res *mcp.CallToolResult, version string) *mcp.CallToolResult {
	res.ResultType = mcp.ResultTypeComplete
	res.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: "airlock", Version: version})
	return res
}

// method serves tasks/get, tasks/update and tasks/cancel for who, who must
// own the task.
func (t *tasks) method(ctx context.Context, msg *jsonrpc.Message, who selection.Principal) ([]byte, int) {
	id := msg.Params.TaskID
	if id == "" {
		resp, status, _ := jsonRPCError(msg.ID, mcp.INVALID_PARAMS, "params.taskId is required", nil)
		return resp, status
	}
	err := t.owned(ctx, id, who)
	switch {
	case err != nil:
	case msg.Method == "tasks/get":
		var v *taskView
		if v, err = t.view(ctx, id); err == nil {
			return jsonRPCResult(msg.ID, t.wire(v, "complete"))
		}
	case msg.Method == "tasks/cancel":
		if err = t.cancel(ctx, id, newRequestID()); err == nil {
			return jsonRPCResult(msg.ID, map[string]any{"resultType": "complete"})
		}
	case msg.Method == "tasks/update":
		if err = t.update(ctx, msg, who); err == nil {
			return jsonRPCResult(msg.ID, map[string]any{"resultType": "complete"})
		}
	}
	if errors.Is(err, errTaskNotFound) {
		resp, status, _ := jsonRPCError(msg.ID, mcp.INVALID_PARAMS, "Failed to retrieve task: Task not found", nil)
		return resp, status
	}
	t.d.Logger.Error("task request failed", "method", msg.Method, "err", err)
	resp, status, _ := jsonRPCError(msg.ID, mcp.INTERNAL_ERROR, "internal error", nil)
	return resp, status
}

// update delivers the answers to a task's approval: the commit runs again
// with them, as a client's retried call would (the answer is bound to the
// selection and action by the signed request state). Answers to a task
// that waits for none are ignored.
func (t *tasks) update(ctx context.Context, msg *jsonrpc.Message, who selection.Principal) error {
	id := msg.Params.TaskID
	rec, err := t.record(ctx, id)
	if errors.Is(err, selection.ErrNotFound) {
		return errTaskNotFound
	}
	if err != nil {
		return err
	}
	v, err := t.view(ctx, id)
	if err != nil {
		return err
	}
	var answers mcp.InputResponses
	if len(msg.Params.InputResponses) > 0 {
		_ = json.Unmarshal(msg.Params.InputResponses, &answers)
	}
	if v.status != mcp.TaskStatusInputRequired || len(answers) == 0 {
		return nil
	}
	for key := range answers {
		if _, ok := rec.InputRequests[key]; !ok {
			delete(answers, key)
		}
	}
	spec, ok := t.s.specs[rec.Tool]
	if len(answers) == 0 || !ok {
		return nil
	}
	ctx, obs := t.s.observe(ctx, spec.Name)
	call := callOf(msg, rec.Args, who)
	call.Answer = answerFromParams(mcp.MultiRoundTripParams{InputResponses: answers, RequestState: rec.RequestState})
	if v, env := t.commit(ctx, spec, call, nil, rec); v != nil && v.status != "" {
		obs.became(tools.StatusTask)
	} else {
		obs.answered(env)
	}
	return nil
}

func jsonRPCResult(id json.RawMessage, result any) ([]byte, int) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	if err != nil {
		resp, status, _ := jsonRPCError(id, mcp.INTERNAL_ERROR, "internal error", nil)
		return resp, status
	}
	return b, http.StatusOK
}

// jsonRPCError is a JSON-RPC error response, with the HTTP status a refusal of
// the request's params or capabilities goes with (400; else 200).
func jsonRPCError(id json.RawMessage, code int, message string, data any) ([]byte, int, bool) {
	e := map[string]any{"code": code, "message": message}
	if data != nil {
		e["data"] = data
	}
	status := http.StatusOK
	switch code {
	case mcp.INVALID_PARAMS, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY:
		status = http.StatusBadRequest
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	return b, status, true
}
