package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
)

// One way into a tool. Every call of a tool, whichever way it came (a
// tools/call through mcp-go, a tools/call the task service takes, the
// answer a task waits for, a read task's background run), takes the same
// steps: newCall builds it, observe tells the observers, exec runs it
// (the only place that recovers from a tool's panic), and render turns its
// answer into the tool result that leaves airlock (the only place that
// does). The ways in differ only in where the call's client, capabilities
// and answer come from, and in what they do with an answer that asks for
// input.

// newCall is a call of a tool with raw arguments, from client (as it
// introduced itself), by who, under a new request id.
func newCall(raw json.RawMessage, client string, who selection.Principal) *tools.Call {
	return &tools.Call{RequestID: newRequestID(), Raw: raw, Client: client, Principal: who}
}

// observation is the observers' view of one call; it ends once, whichever
// end comes first.
type observation struct {
	tool  string
	start time.Time
	end   func(tools.Outcome)
}

// observe starts the observers' view of a call of tool: the context it
// returns is the call's from then on (a span an observer opens is the
// parent of what the call does).
func (s *Server) observe(ctx context.Context, tool string) (context.Context, *observation) {
	ends := make([]func(tools.Outcome), 0, len(s.observers))
	for _, o := range s.observers {
		var end func(tools.Outcome)
		ctx, end = o.StartCall(ctx, tool)
		ends = append(ends, end)
	}
	return ctx, &observation{tool: tool, start: time.Now(), end: func(out tools.Outcome) {
		for _, end := range slices.Backward(ends) {
			end(out)
		}
	}}
}

// answered ends the observation with the call's answer.
func (o *observation) answered(env *envelope.Envelope) {
	o.ended(tools.OutcomeOf(o.tool, env, time.Since(o.start)))
}

// became ends the observation of a call that answered without an envelope
// (tools.StatusInputRequired, tools.StatusTask).
func (o *observation) became(status string) {
	o.ended(tools.Outcome{Tool: o.tool, Status: status, Duration: time.Since(o.start)})
}

func (o *observation) ended(out tools.Outcome) {
	if end := o.end; end != nil {
		o.end = nil
		end(out)
	}
}

// logFor is the logger of a call of spec.
func (s *Server) logFor(spec tools.Spec, call *tools.Call) *slog.Logger {
	return s.d.Logger.With("tool", spec.Name, "request_id", call.RequestID)
}

// exec runs a call of spec: an identical call's remembered failure answers
// it; else the tool runs, a panic answering INTERNAL_ERROR (its cause
// logged on log, the process serving on); the answer is finished and
// remembered unless the tool asked for input (call.Ask), which the way in
// answers.
func (s *Server) exec(ctx context.Context, spec tools.Spec, call *tools.Call, log *slog.Logger) *envelope.Envelope {
	if env := s.recall(spec, call, log); env != nil {
		return env
	}
	env := func() (env *envelope.Envelope) {
		defer func() {
			if p := recover(); p != nil {
				env = panicked(log, call.RequestID, p)
			}
		}()
		return spec.Run(ctx, call)
	}()
	if call.Ask == nil {
		s.finish(spec, call, env, log)
	}
	return env
}

// recall answers a call from the memory of failed calls (nil: it has no
// answer for it).
func (s *Server) recall(spec tools.Spec, call *tools.Call, log *slog.Logger) *envelope.Envelope {
	env := s.d.Memory.Recall(spec, call.Raw, call.RequestID)
	if env != nil {
		env.Finish()
		log.Info("tool call answered from memory", "status", env.Status, "reasons", tools.ReasonCodes(env))
	}
	return env
}

// finish completes an answer: the request id on its problem, its derived
// members, the memory of failed calls, the log line.
func (s *Server) finish(spec tools.Spec, call *tools.Call, env *envelope.Envelope, log *slog.Logger) {
	if env.Problem != nil && env.Problem.RequestID == "" {
		env.Problem.WithRequest(call.RequestID)
	}
	env.Finish()
	s.d.Memory.Remember(spec, call.Raw, env)
	log.Info("tool call", "status", env.Status, "complete", env.Complete, "reasons", tools.ReasonCodes(env))
}

// panicked turns a panic inside a tool's run into the INTERNAL_ERROR
// problem under requestID, and logs the panic and its stack on log: the
// process goes on serving, the caller learns nothing of the cause.
func panicked(log *slog.Logger, requestID string, p any) *envelope.Envelope {
	log.Error("tool panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	env := envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemInternal, "").WithRequest(requestID))
	env.Finish()
	return env
}

// render is a call's answer as the tool result that leaves airlock:
// finished, the secrets removed from its bytes, its text without the
// members at their defaults (spec.TextDefaults), and the approval view's
// data when the tool shows one (view, nil for none).
func (s *Server) render(spec tools.Spec, env *envelope.Envelope, view *tools.AppView) *mcp.CallToolResult {
	return withViewMeta(redactedResult(env, s.d.Redactor, spec.TextDefaults...), view, s.d.Redactor)
}
