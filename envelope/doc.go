package envelope

import (
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
