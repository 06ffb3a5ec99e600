// Package tools holds airlock's six tools: their arguments and data, their
// schemas, their handlers and what they share (budgets, cursors, argument
// checks, the memory of failed calls). A tool is a Spec; a call of it is a
// Call, which says what the client sent and can take, in words of its own.
//
// Every tool answers with the envelope. What the model should read is a tool
// result (a problem when it failed); a Go error means a bug in airlock. No
// handler may echo caller or upstream text into a next_action.
//
// The package never serves: it imports no MCP SDK, no net/http server, no
// metrics or tracing library, so that a program embedding the tools links
// none of them. Package mcpserver puts the tools on an MCP server.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

// Hint is one MCP annotation, chosen on purpose: Yes or No. Its zero value,
// Unset, is refused when the tool is registered.
type Hint int8

// The values of a Hint.
const (
	Unset Hint = iota
	Yes
	No
)

// Bool reports whether the hint is Yes.
func (h Hint) Bool() bool { return h == Yes }

// Hints are a tool's four MCP annotations, each named where it is set
// (Hints{ReadOnly: Yes, …}), so that none can be swapped with another.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld Hint
}

// TaskSupport says when a call of a tool may run as a task, for a client
// that accepts tasks.
type TaskSupport int8

// The values of TaskSupport.
const (
	// NoTasks: every call answers in the call.
	NoTasks TaskSupport = iota
	// AlwaysTask: every call may run as a task.
	AlwaysTask
	// TaskWhenLong: a call whose deadline_ms is over TaskSearchDeadline
	// runs as a task; a shorter one answers in the call.
	TaskWhenLong
)

// The scopes that choose tools. A token with ScopeRead is offered the read
// tools; ScopeWrite adds preview_selection and commit_bulk_action (and
// includes the read tools).
const (
	ScopeRead  = "airlock:read"
	ScopeWrite = "airlock:write"
)

// Traits are what is known of a tool without a configuration: its name,
// its annotations, and how callers may reach it. The catalog holds them.
type Traits struct {
	Name  string
	Hints Hints
	// Scope is the OAuth scope a token needs to call the tool.
	Scope string
	// WritePath says the tool exists only to change the upstream: a
	// read-only server, or a configuration without an action, never
	// offers it.
	WritePath bool
	// Writes declares that the tool changes something outside airlock.
	Writes bool
	// Tasks says when a call may run as a task.
	Tasks TaskSupport
}

// Spec is one tool: its traits, its definition and its handler.
type Spec struct {
	Traits
	Title       string
	Description string
	Input       map[string]any // JSON Schema of the arguments
	// Data is the JSON Schema of the envelope's data, as exact as airlock
	// holds it (clients are listed advertisedData of it).
	Data map[string]any
	// Problems are the problem codes the tool can return besides those
	// every tool can (INVALID_ARGUMENTS, INTERNAL_ERROR and the upstream
	// failures answered from memory or a cooldown). They narrow the output
	// schema; what each means is in docs/errors.md and in the problem.
	Problems []envelope.ProblemCode
	// TextDefaults are the members of the tool's data that its text
	// mirror leaves out when they hold their defaults (see envelope.Text).
	TextDefaults []envelope.TextDefault
	Handler      func(ctx context.Context, call *Call) *envelope.Envelope
}

// Call is one invocation of a tool as the edge that received it (an MCP
// server, a task, a test) hands it over: what the client sent and what it
// can take, in words of its own. The handler reads it and may set Ask.
type Call struct {
	// RequestID correlates logs, upstream requests and the problem.
	RequestID string
	// Raw are the arguments, a JSON object.
	Raw json.RawMessage
	// Client names the client, as it introduced itself, for records of
	// who asked.
	Client string
	// Principal is who the transport authenticated.
	Principal selection.Principal
	// CanAsk says the client can be asked for input: it declared that it
	// shows forms, and its transport carries the request.
	CanAsk bool
	// Answer is the client's answer to the input request an earlier call
	// of the same tool set in Ask; nil on a first call.
	Answer *InputAnswer
	// Ask, when the handler sets it, is answered instead of the envelope:
	// the tool asks the client for input first, and the client calls again
	// with its Answer.
	Ask *InputRequest
	// Progress, when set, is told where the call's work stands, every
	// DefaultProgressInterval or so until the handler returns (the client
	// asked for progress).
	Progress func(Progress)
	// Task says the call runs for a task: a commit answers as soon as its
	// operation exists, and the task follows it.
	Task bool
	// Apps says the client renders airlock's approval view (it declared
	// MCP Apps): a selection's approval is asked there, not in a form.
	Apps bool
	// View, when the handler sets it, goes beside the answer for the
	// client's approval view (the result's _meta), never into it.
	View *AppView
}

// InputRequest asks the client's user for input through a form.
type InputRequest struct {
	// Key names the request; the answer carries it back.
	Key string
	// Message is what the user reads.
	Message string
	// Schema is the JSON Schema of the form.
	Schema map[string]any
	// State is opaque to the client, signed by airlock, and echoed with
	// the answer.
	State string
}

// The actions of an answer: the user submitted the form, declined it, or
// dismissed it.
const (
	AnswerAccept  = "accept"
	AnswerDecline = "decline"
	AnswerCancel  = "cancel"
)

// InputAnswer is the client's answer to an InputRequest.
type InputAnswer struct {
	// State is the request's state, as the client echoed it.
	State string
	// Key names the request answered ("" when the client sent none).
	Key string
	// Action is AnswerAccept, AnswerDecline or AnswerCancel ("" when
	// the client sent no answer).
	Action string
	// Content is the form's content, when accepted.
	Content map[string]any
}

// Progress is where a call's work stands.
type Progress struct {
	// Progress increases with every report: the work done (items
	// scanned, targets with an outcome), plus a fraction below one for each
	// report in which the work did not move.
	Progress float64
	// Total is how much work there is, when known.
	Total   *int
	Message string
}

// commonProblems can come from any tool.
var commonProblems = []envelope.ProblemCode{envelope.ProblemInvalidArguments, envelope.ProblemInternal}

// AllProblems is every problem code the tool can return, sorted.
func (s Spec) AllProblems() []envelope.ProblemCode {
	out := append(append([]envelope.ProblemCode(nil), commonProblems...), s.Problems...)
	slices.Sort(out)
	return slices.Compact(out)
}

// InputSchema is the JSON Schema of the arguments as clients list it.
func (s Spec) InputSchema() json.RawMessage {
	b, err := json.Marshal(s.Input)
	if err != nil {
		panic("tools: input schema of " + s.Name + ": " + err.Error())
	}
	return b
}

// OutputSchema is the JSON Schema of the tool's results as clients list it:
// the envelope around the tool's data, compacted (see listedOutput).
func (s Spec) OutputSchema() json.RawMessage {
	return listedOutput(s.Data, s.AllProblems()...)
}

// Check enforces the annotation rules, as a server registering the tool
// does: every hint set on purpose, a tool that writes not read-only, a
// read-only tool not destructive, a destructive tool one that writes.
func (s Spec) Check() error {
	h := s.Hints
	switch {
	case h.ReadOnly == Unset || h.Destructive == Unset || h.Idempotent == Unset || h.OpenWorld == Unset:
		return fmt.Errorf("tool %q: annotations not set; set each of the four hints to Yes or No", s.Name)
	case s.Writes && h.ReadOnly == Yes:
		return fmt.Errorf("tool %q writes but is annotated read-only", s.Name)
	case h.ReadOnly == Yes && h.Destructive == Yes:
		return fmt.Errorf("tool %q is read-only and destructive", s.Name)
	case !s.Writes && h.Destructive == Yes:
		return fmt.Errorf("tool %q does not write but is annotated destructive", s.Name)
	case s.Handler == nil || s.Input == nil:
		return fmt.Errorf("tool %q: missing handler or input schema", s.Name)
	}
	return nil
}

// Run runs the tool's handler for call, with the call's tool and request
// id in the context of what logs on its behalf.
func (s Spec) Run(ctx context.Context, call *Call) *envelope.Envelope {
	return s.Handler(withCall(ctx, s.Name, call.RequestID), call)
}

// RunsAsTask reports whether a call with these arguments may run as a task
// (for a client that accepts tasks).
func (s Spec) RunsAsTask(raw json.RawMessage) bool {
	switch s.Tasks {
	case AlwaysTask:
		return true
	case TaskWhenLong:
		return longCall(raw)
	}
	return false
}

// Instructions are sent to clients at initialization: the rules an agent
// must follow to read airlock's answers correctly.
const Instructions = `airlock answers every call with an envelope. Rules:
- Treat an empty or short list as proof of absence only when complete is true.
- When complete is false, read incomplete_reasons and follow continuation (next_cursor, retry_after, restart, narrow_query); never invent a cursor.
- A partial answer may support a read-only, bounded investigation, never a bulk change.
- Surface incomplete_reasons to the user before asking to act on a result.
- Writes go preview_selection -> show the manifest, effect and exclusions to the user -> commit_bulk_action with the selection_id, digest and the same action. Never approve on the user's behalf.
- On error, problem.next_action says what to do. A text answer omits members at their defaults: empty lists, continuation none, status (from complete), total_relation eq (when complete).`
