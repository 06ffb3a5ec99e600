package selection

import (
	"errors"

	"github.com/airlock-mcp/airlock/envelope"
)

// Error is a refusal by the domain: a stable code (one of envelope's
// registered problem codes), the words a caller may read, and whether
// anything was written. Commit, Decide, MayRun, MayApprove and Compensate
// return it as their error; each edge renders it for its readers (the
// tools as an RFC 9457 problem with the same code, detail and next
// action), as a domain error becomes a status at a server's edge.
type Error struct {
	Code envelope.ProblemCode
	// Detail is built from fixed text and sanitized names only; empty
	// means the code's own meaning.
	Detail string
	// StateChanged says what the refusal left written, for a write:
	// envelope.StateNone or StateUnknown ("" when it says nothing).
	StateChanged string
	// Errors are the reasons behind the refusal, each as a field error.
	Errors []envelope.FieldError
	// Approval is the approval a commit needs, on the gate's refusals
	// (APPROVAL_REQUIRED, APPROVAL_EXPIRED): who must approve and why, as
	// the gate found it, so that no edge computes it again. Nil on every
	// other refusal.
	Approval *Requirement
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Detail
}

// ErrorCode returns the code of err's domain error, or "" when err holds
// none (nil included).
func ErrorCode(err error) envelope.ProblemCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// ApprovalOf returns the approval requirement err's refusal carries (see
// Error.Approval); nil when it carries none.
func ApprovalOf(err error) *Requirement {
	var e *Error
	if errors.As(err, &e) {
		return e.Approval
	}
	return nil
}

// problem is a refusal of a write: nothing was sent upstream.
func problem(code envelope.ProblemCode, detail string) *Error {
	return &Error{Code: code, Detail: detail, StateChanged: envelope.StateNone}
}

// refusal is a refusal that says nothing of state (nothing it refuses
// writes).
func refusal(code envelope.ProblemCode, detail string) *Error {
	return &Error{Code: code, Detail: detail}
}
