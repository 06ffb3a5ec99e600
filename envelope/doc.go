package envelope

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RenderCodesDoc renders the registry as the markdown of docs/codes.md.
func RenderCodesDoc() string {
	var b strings.Builder
	b.WriteString("# Stable codes\n\n")
	b.WriteString("Every code airlock emits, rendered from the registry in `envelope/codes.go`\n")
	b.WriteString("(`UPDATE_GOLDEN=1 go test ./envelope` regenerates this file; a test fails when they differ).\n")
	b.WriteString("Codes never change meaning. Branch on codes, never on messages.\n")
	sections := []struct {
		kind  Kind
		title string
		intro string
	}{
		{KindReason, "Incomplete reasons", "In `incomplete_reasons`. Any one of them makes `complete` false: the answer cannot support claims about the unreturned part of the scope."},
		{KindWarning, "Warnings", "In `warnings`. About trust, freshness or interpretation; they never make an answer incomplete."},
		{KindProblem, "Problems", "In `problem` when `status` is `error` (MCP `isError: true`). See [errors.md](errors.md) for bodies."},
		{KindBlocker, "Blockers", "In a selection's `committable_reasons`, beside the scan's incomplete reasons: why a reviewable selection cannot be committed."},
		{KindFieldError, "Field errors", "The `code` of an entry in a problem's `errors[]`."},
	}
	for _, s := range sections {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", s.title, s.intro)
		switch s.kind {
		case KindReason:
			b.WriteString("| code | meaning | continuation | retry later helps | recovery |\n| --- | --- | --- | --- | --- |\n")
		case KindProblem:
			b.WriteString("| code | status | retryable | meaning | recovery |\n| --- | --- | --- | --- | --- |\n")
		default:
			b.WriteString("| code | meaning | recovery |\n| --- | --- | --- |\n")
		}
		for _, c := range Codes() {
			if c.Kind != s.kind {
				continue
			}
			switch s.kind {
			case KindReason:
				fmt.Fprintf(&b, "| `%s` | %s | `%s` | %v | %s |\n", c.Code, c.Meaning, c.Continuation, c.Retryable, c.Recovery)
			case KindProblem:
				fmt.Fprintf(&b, "| `%s` | %d | %v | %s | %s |\n", c.Code, c.Status, c.Retryable, c.Meaning, c.Recovery)
			default:
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Code, c.Meaning, c.Recovery)
			}
		}
	}
	return b.String()
}

// exampleRequestID is the request id shown in the documentation's examples.
const exampleRequestID = "0193a4f2-7c1e-7d3a-9b2f-5e8c1a2b3c4d"

// ExampleProblem returns a representative body of a problem code, as the
// documentation shows it.
func ExampleProblem(code ProblemCode) *Problem {
	p := NewProblem(code, "")
	switch code {
	case ProblemInvalidArguments:
		p = InvalidArguments([]FieldError{
			NewFieldError("filter.colour", FieldUnknownFilter, map[string]any{"status": "past_due"}),
			NewFieldError("max_items", FieldOverCap, 1000),
		})
	case ProblemUpstreamRejected:
		p.Errors = []FieldError{NewFieldError("filter.owner", FieldUpstreamRejected, nil)}
	case ProblemUpstreamRateLimited, ProblemUpstreamUnavailable:
		p.SetRetryAfter(30)
	case ProblemNotCommittable:
		p.Errors = []FieldError{{Field: "selection_id", Code: FieldCode(BlockerAmbiguous), Message: mustLookup(BlockerAmbiguous).Message}}
	}
	switch code {
	case ProblemSelectionNotFound, ProblemSelectionExpired, ProblemSelectionStale, ProblemDigestMismatch, ProblemActionMismatch,
		ProblemNotCommittable, ProblemAlreadyCommitted:
		p.StateChanged = StateNone
	case ProblemUpstreamTimeout:
		p.StateChanged = StateUnknown
	}
	return p.WithRequest(exampleRequestID)
}

// RenderErrorsDoc renders docs/errors.md: every problem code with its
// status, retryable, next_action template and an example body.
func RenderErrorsDoc() string {
	var b strings.Builder
	b.WriteString("# Problems\n\n")
	b.WriteString("When a call fails as a whole, the envelope has `status: \"error\"`, `complete: false`, MCP\n")
	b.WriteString("`isError: true`, and a `problem`: an RFC 9457 problem with airlock's members `code`\n")
	b.WriteString("(stable), `retryable` (always present), `retry_after_seconds`, `next_action` (from the fixed\n")
	b.WriteString("template below, never from caller or upstream text), `request_id` (also sent upstream as\n")
	b.WriteString("`X-Request-Id` and logged), `errors[]` (every invalid field at once, up to 20: the `detail` says when there were more) and, for writes,\n")
	b.WriteString("`state_changed` (`none`, `partial`, `unknown`). A problem's `type` is the URN\n")
	b.WriteString("`urn:airlock:problem:` followed by its code in lower case (the heading of its section\n")
	b.WriteString("below): an identifier to compare, not an address to fetch. Rendered from `envelope/codes.go`\n")
	b.WriteString("(`UPDATE_GOLDEN=1 go test ./envelope` regenerates it); a test fails when they differ.\n\n")
	b.WriteString("A problem airlock answered from memory, without calling the upstream (an identical call failed\n")
	b.WriteString("moments ago), says so in `detail` and carries `remembered_until`: until that time (RFC 3339) an\n")
	b.WriteString("identical call gets the same answer. A failure the upstream's state decides (401, 403, 404, a\n")
	b.WriteString("login page) is remembered for 10 s, a rejected request for 60 s, a transient failure for the\n")
	b.WriteString("wait it named; a call with another credential is never answered from memory.\n\n")
	b.WriteString("Per target, an operation's results carry the same problems (with `state_changed`).\n")
	b.WriteString("The field-error codes of `errors[]` are in [codes.md](codes.md).\n")
	for _, c := range Codes() {
		if c.Kind != KindProblem {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", strings.ToLower(c.Code))
		fmt.Fprintf(&b, "`%s`: %s. HTTP status %d, retryable: %v.\n\n", c.Code, c.Meaning, c.Status, c.Retryable)
		fmt.Fprintf(&b, "- recovery: %s\n- next_action template: %s\n\n", c.Recovery, c.NextAction)
		body, _ := json.MarshalIndent(ExampleProblem(ProblemCode(c.Code)), "", "  ")
		fmt.Fprintf(&b, "```json\n%s\n```\n", body)
	}
	return b.String()
}
