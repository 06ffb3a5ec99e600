package tools

import (
	"time"

	"github.com/airlock-mcp/airlock/envelope"
)

// Statuses of a call besides the envelope's (complete, partial, error).
const (
	// StatusInputRequired: the tool asked the client for input first.
	StatusInputRequired = "input_required"
	// StatusTask: the call became a task, which answers later.
	StatusTask = "task"
)

// Outcome is how a tool call ended, as its observers (metrics, traces)
// read it: from the typed envelope, never from the result's JSON.
type Outcome struct {
	Tool string
	// Status is the envelope's (complete, partial, error),
	// StatusInputRequired or StatusTask.
	Status string
	// Complete is the envelope's decision field; nil without an envelope.
	Complete *bool
	// Reasons are the codes of the envelope's incomplete reasons, then
	// of its problem.
	Reasons []string
	// Envelope is the answer; nil for StatusInputRequired and StatusTask.
	Envelope *envelope.Envelope
	// Duration is the time the call took to answer.
	Duration time.Duration
}

// OutcomeOf is the outcome of a call of tool answered with env (finished),
// after d.
func OutcomeOf(tool string, env *envelope.Envelope, d time.Duration) Outcome {
	return Outcome{Tool: tool, Status: string(env.Status), Complete: envelope.Ptr(env.Complete), Reasons: ReasonCodes(env), Envelope: env, Duration: d}
}

// ReasonCodes are the codes of env's incomplete reasons, then of its
// problem.
func ReasonCodes(env *envelope.Envelope) []string {
	var out []string
	for _, r := range env.IncompleteReasons {
		out = append(out, string(r.Code))
	}
	if env.Problem != nil {
		out = append(out, string(env.Problem.Code))
	}
	return out
}
