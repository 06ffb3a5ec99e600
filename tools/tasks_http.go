package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/selection"
)

// Middleware serves the task methods (tasks/get, tasks/update,
// tasks/cancel) in front of the streamable HTTP handler next, and turns a
// tools/call of a task tool into a task when the client declared the
// extension. Request bodies reach it already bounded (see bound).
func (t *Tasks) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "the request body could not be read", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name           string             `json:"name"`
				TaskID         string             `json:"taskId"`
				InputResponses mcp.InputResponses `json:"inputResponses"`
				Meta           json.RawMessage    `json:"_meta"`
				// Task is the task the client asks for (mcp.TaskParams):
				// its ttl in milliseconds.
				Task *mcp.TaskParams `json:"task"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil || len(msg.ID) == 0 || string(msg.ID) == "null" {
			next.ServeHTTP(w, r)
			return
		}
		opted := acceptsTasks(msg.Params.Meta)
		switch msg.Method {
		case "tasks/get", "tasks/update", "tasks/cancel":
			if !opted {
				writeRPCError(w, msg.ID, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability",
					map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
				return
			}
			t.serveMethod(r.Context(), w, msg.ID, msg.Method, msg.Params.TaskID, msg.Params.InputResponses, msg.Params.Meta)
			return
		case "tools/call":
			if !opted || !taskTools[msg.Params.Name] {
				break
			}
			slot := &taskSlot{}
			if msg.Params.Task != nil {
				slot.ttl = msg.Params.Task.TTL
			}
			rec := &taskRecorder{header: http.Header{}}
			next.ServeHTTP(rec, r.WithContext(withTaskSlot(r.Context(), slot)))
			if v := slot.made(); v != nil && v.status != "" {
				writeRPCResult(w, msg.ID, t.wire(v, "task"))
				return
			}
			rec.copyTo(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// acceptsTasks reports whether a request of protocol 2026-07-28 declares
// the Tasks extension in its capabilities.
func acceptsTasks(meta json.RawMessage) bool {
	var m struct {
		Version string `json:"io.modelcontextprotocol/protocolVersion"`
		Caps    struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"io.modelcontextprotocol/clientCapabilities"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil || !mcp.IsModernProtocol(m.Version) {
		return false
	}
	_, ok := m.Caps.Extensions[TasksExtension]
	return ok
}

func (t *Tasks) serveMethod(ctx context.Context, w http.ResponseWriter, id json.RawMessage, method, taskID string, answers mcp.InputResponses, meta json.RawMessage) {
	if taskID == "" {
		writeRPCError(w, id, mcp.INVALID_PARAMS, "params.taskId is required", nil)
		return
	}
	err := t.owned(ctx, taskID)
	switch {
	case err != nil:
	case method == "tasks/get":
		var v *taskView
		if v, err = t.view(ctx, taskID); err == nil {
			writeRPCResult(w, id, t.wire(v, "complete"))
			return
		}
	case method == "tasks/cancel":
		if err = t.cancel(ctx, taskID, newRequestID()); err == nil {
			writeRPCResult(w, id, map[string]any{"resultType": "complete"})
			return
		}
	case method == "tasks/update":
		if err = t.update(ctx, taskID, answers, meta); err == nil {
			writeRPCResult(w, id, map[string]any{"resultType": "complete"})
			return
		}
	}
	if errors.Is(err, errTaskNotFound) {
		writeRPCError(w, id, mcp.INVALID_PARAMS, "Failed to retrieve task: Task not found", nil)
		return
	}
	t.d.Logger.Error("task request failed", "method", method, "err", err)
	writeRPCError(w, id, mcp.INTERNAL_ERROR, "internal error", nil)
}

// update delivers the answers to a task's approval: the commit runs again
// with them, through the server, as a client's retried call would (the
// answer is bound to the selection and action by the signed request state).
// Answers to a task that waits for none are ignored.
func (t *Tasks) update(ctx context.Context, id string, answers mcp.InputResponses, meta json.RawMessage) error {
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
	if v.status != mcp.TaskStatusInputRequired || len(answers) == 0 {
		return nil
	}
	for key := range answers {
		if _, ok := rec.InputRequests[key]; !ok {
			delete(answers, key)
		}
	}
	if len(answers) == 0 {
		return nil
	}
	params := map[string]any{"name": rec.Tool, "arguments": rec.Args, "inputResponses": answers, "requestState": rec.RequestState}
	if len(meta) > 0 {
		params["_meta"] = meta
	}
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "task-update-" + id, "method": "tools/call", "params": params})
	if err != nil {
		return err
	}
	slot := &taskSlot{update: rec}
	t.srv.HandleMessage(withTaskSlot(ctx, slot), msg)
	return nil
}

// taskRecorder keeps a response to pass it on, or to replace it with a task.
type taskRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *taskRecorder) Header() http.Header { return r.header }
func (r *taskRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *taskRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *taskRecorder) Flush() {}

func (r *taskRecorder) copyTo(w http.ResponseWriter) {
	for k, vs := range r.header {
		w.Header()[k] = vs
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}

func writeRPCResult(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func writeRPCError(w http.ResponseWriter, id json.RawMessage, code int, message string, data any) {
	e := map[string]any{"code": code, "message": message}
	if data != nil {
		e["data"] = data
	}
	status := http.StatusOK
	switch code {
	case mcp.INVALID_PARAMS, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY:
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}
