// Package tools holds airlock's MCP tools (schemas and handlers) and the
// server assembly on mcp-go: stdio, streamable HTTP and SSE.
//
// Every tool answers with the envelope. What the model should read is a tool
// result (isError with a problem when it failed); a Go error from a handler
// means a bug in airlock. No handler may echo caller or upstream text into a
// next_action.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/selection"
)

// Hints are a tool's four MCP annotations. Build them with NewHints so that
// every one is chosen on purpose.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
	set                                          bool
}

// NewHints sets all four annotations.
func NewHints(readOnly, destructive, idempotent, openWorld bool) Hints {
	return Hints{ReadOnly: readOnly, Destructive: destructive, Idempotent: idempotent, OpenWorld: openWorld, set: true}
}

// Spec is one tool: its definition and handler.
type Spec struct {
	Name        string
	Title       string
	Description string
	Input       map[string]any // JSON Schema of the arguments
	// Data is the JSON Schema of the envelope's data, as exact as airlock
	// holds it (clients are listed advertisedData of it).
	Data  map[string]any
	Hints Hints
	// Problems are the problem codes the tool can return besides those
	// every tool can (INVALID_ARGUMENTS, INTERNAL_ERROR and the upstream
	// failures answered from memory or a cooldown). They narrow the output
	// schema; what each means is in docs/errors.md and in the problem.
	Problems []envelope.ProblemCode
	// TextDefaults are the members of the tool's data that its text
	// mirror leaves out when they hold their defaults (see envelope.Text).
	TextDefaults []envelope.TextDefault
	// Writes declares that the tool changes something outside airlock.
	Writes  bool
	Handler func(ctx context.Context, call *Call) *envelope.Envelope
}

// Call is one invocation: the raw arguments and the request id that
// correlates logs, upstream requests and the problem.
type Call struct {
	RequestID string
	Raw       json.RawMessage
	Request   mcp.CallToolRequest
	// Client names the MCP client (from its initialize), for records of
	// who asked.
	Client string
	// Principal is who the transport authenticated (see PrincipalFrom).
	Principal selection.Principal
	// InputRequired, when a handler sets it, is returned instead of the
	// envelope: the tool asks the client for input (an approval) first.
	InputRequired *mcp.CallToolResult
}

// commonProblems can come from any tool.
var commonProblems = []envelope.ProblemCode{envelope.ProblemInvalidArguments, envelope.ProblemInternal}

// AllProblems is every problem code the tool can return, sorted.
func (s Spec) AllProblems() []envelope.ProblemCode {
	seen := map[envelope.ProblemCode]bool{}
	var out []envelope.ProblemCode
	for _, c := range append(append([]envelope.ProblemCode(nil), commonProblems...), s.Problems...) {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// Tool returns the MCP tool definition.
func (s Spec) Tool() mcp.Tool {
	in, _ := json.Marshal(s.Input)
	t := mcp.NewTool(s.Name,
		mcp.WithDescription(s.Description),
		mcp.WithRawInputSchema(in),
		mcp.WithRawOutputSchema(listedOutput(s.Data, s.AllProblems()...)),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			Title:           s.Title,
			ReadOnlyHint:    mcp.ToBoolPtr(s.Hints.ReadOnly),
			DestructiveHint: mcp.ToBoolPtr(s.Hints.Destructive),
			IdempotentHint:  mcp.ToBoolPtr(s.Hints.Idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(s.Hints.OpenWorld),
		}),
	)
	t.InputSchema = mcp.ToolInputSchema{}
	t.Title = s.Title
	return t
}

// check enforces the annotation rules at registration.
func (s Spec) check() error {
	switch {
	case !s.Hints.set:
		return fmt.Errorf("tool %q: annotations not set; use NewHints", s.Name)
	case s.Writes && s.Hints.ReadOnly:
		return fmt.Errorf("tool %q writes but is annotated read-only", s.Name)
	case s.Hints.ReadOnly && s.Hints.Destructive:
		return fmt.Errorf("tool %q is read-only and destructive", s.Name)
	case !s.Writes && s.Hints.Destructive:
		return fmt.Errorf("tool %q does not write but is annotated destructive", s.Name)
	case s.Handler == nil || s.Input == nil:
		return fmt.Errorf("tool %q: missing handler or input schema", s.Name)
	}
	return nil
}

// RegisterOptions are what every registered tool shares.
type RegisterOptions struct {
	Logger *slog.Logger
	// Memory, when set, answers repeats of failed calls from memory.
	Memory *ProblemMemory
	// Redactor, when set, removes its secrets from every result.
	Redactor *redact.Redactor
}

// Register adds the tools to the server after checking their annotations.
func Register(srv *server.MCPServer, opts RegisterOptions, specs ...Spec) error {
	for _, s := range specs {
		if err := s.check(); err != nil {
			return err
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	for _, s := range specs {
		srv.AddTool(s.Tool(), handler(s, opts))
	}
	return nil
}

// recoverTool turns a panic inside a tool's run (a call, or a task's
// background run) into the INTERNAL_ERROR problem under requestID, and
// logs the panic and its stack on log: the process goes on serving, the
// caller learns nothing of the cause. Defer it directly (recover works
// only there); answer receives the envelope.
func recoverTool(log *slog.Logger, requestID string, answer func(*envelope.Envelope)) {
	if p := recover(); p != nil {
		log.Error("tool panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		answer(envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemInternal, "").WithRequest(requestID)))
	}
}

func handler(s Spec, opts RegisterOptions) server.ToolHandlerFunc {
	mem, red := opts.Memory, opts.Redactor
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		call := &Call{RequestID: newRequestID(), Request: req, Client: clientInfo(ctx), Principal: PrincipalFrom(ctx)}
		raw, merr := rawArguments(req)
		call.Raw = raw
		log := opts.Logger.With("tool", s.Name, "request_id", call.RequestID)
		ctx = withCall(ctx, s.Name, call.RequestID)
		defer recoverTool(log, call.RequestID, func(env *envelope.Envelope) { res = Result(env) })
		if merr != nil {
			return Result(envelope.ErrorEnvelope(envelope.InvalidArguments([]envelope.FieldError{
				envelope.NewFieldError("arguments", envelope.FieldType, map[string]any{}),
			}).WithRequest(call.RequestID))), nil
		}
		if mem != nil {
			if env := mem.recall(s, call.Raw, call.RequestID); env != nil {
				log.Info("tool call answered from memory", "status", env.Status, "reasons", reasonCodes(env))
				return redactedResult(env, red, s.TextDefaults...), nil
			}
		}
		env := s.Handler(ctx, call)
		if call.InputRequired != nil && modernRequest(ctx) {
			log.Info("tool call asks the client for input")
			return redactedInput(call.InputRequired, red), nil
		}
		for round := 0; call.InputRequired != nil; round++ {
			// A client of an earlier protocol is asked here, and the
			// handler runs again with the answers, as a client of the
			// current protocol would call again.
			ask := redactedInput(call.InputRequired, red)
			call.InputRequired = nil
			answers, err := askClient(ctx, ask)
			if err == nil && round == maxInputRounds {
				err = errors.New("the tool asked for input too many times")
			}
			if err != nil {
				log.Warn("the client could not be asked for approval", "err", err)
				p := envelope.NewProblem(envelope.ProblemClientApprovalMissing,
					"The client declared that it can show approval requests, but the request was not delivered or not answered in time. Nothing was approved or written.")
				if errors.Is(err, errAnsweredElsewhere) {
					p = envelope.NewProblem(envelope.ProblemElicitationMisrouted, "")
				}
				p.StateChanged = envelope.StateNone
				env = envelope.ErrorEnvelope(p)
				break
			}
			log.Info("tool call asked the client for input")
			call.Request.Params.MultiRoundTripParams = mcp.MultiRoundTripParams{InputResponses: answers, RequestState: ask.RequestState}
			env = s.Handler(ctx, call)
		}
		if env.Problem != nil && env.Problem.RequestID == "" {
			env.Problem.WithRequest(call.RequestID)
		}
		env.Finish()
		if mem != nil {
			mem.remember(s, call.Raw, env)
		}
		log.Info("tool call", "status", env.Status, "complete", env.Complete, "reasons", reasonCodes(env))
		return redactedResult(env, red, s.TextDefaults...), nil
	}
}

// redactedResult renders the envelope as Result does, with the secrets
// removed from its bytes: the last step before a result leaves airlock.
func redactedResult(env *envelope.Envelope, red *redact.Redactor, data ...envelope.TextDefault) *mcp.CallToolResult {
	env.Finish()
	b := red.Bytes(env.Marshal())
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(envelope.Text(b, data...)))},
		StructuredContent: json.RawMessage(b),
		IsError:           env.Status == envelope.StatusError,
	}
}

// redactedInput removes the secrets from a request for input (an approval
// form built from a selection).
func redactedInput(res *mcp.CallToolResult, red *redact.Redactor) *mcp.CallToolResult {
	if red.Empty() {
		return res
	}
	b, err := json.Marshal(res)
	if err != nil {
		return res
	}
	clean := red.Bytes(b)
	if len(clean) == len(b) && string(clean) == string(b) {
		return res
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(clean, &out); err != nil {
		return Result(envelope.ErrorEnvelope(envelope.NewProblem(envelope.ProblemInternal, "")))
	}
	return &out
}

// clientInfo names the calling MCP client, as it introduced itself.
func clientInfo(ctx context.Context) string {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientInfo != nil && info.ClientInfo.Name != "" {
		return "mcp client " + envelope.SafeName(info.ClientInfo.Name) + " " + envelope.SafeName(info.ClientInfo.Version)
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		if info := s.GetClientInfo(); info.Name != "" {
			return "mcp client " + envelope.SafeName(info.Name) + " " + envelope.SafeName(info.Version)
		}
	}
	return "mcp client"
}

func reasonCodes(e *envelope.Envelope) []string {
	var out []string
	for _, r := range e.IncompleteReasons {
		out = append(out, string(r.Code))
	}
	if e.Problem != nil {
		out = append(out, string(e.Problem.Code))
	}
	return out
}

func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	switch a := req.GetRawArguments().(type) {
	case json.RawMessage:
		if len(a) == 0 {
			return json.RawMessage("{}"), nil
		}
		return a, nil
	case nil:
		return json.RawMessage("{}"), nil
	default:
		b, err := json.Marshal(a)
		return b, err
	}
}

func newRequestID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// Result renders an envelope as an MCP tool result: the whole envelope as
// structured content and, as text, the same JSON without the members that
// hold their defaults (envelope.Text); isError when it carries a problem.
func Result(env *envelope.Envelope) *mcp.CallToolResult {
	env.Finish()
	b := env.Marshal()
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(envelope.Text(b)))},
		StructuredContent: json.RawMessage(b),
		IsError:           env.Status == envelope.StatusError,
	}
}
