package tools

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
)

// producedHere are the registered codes whose only producing tests live in
// this package since the tool-behaviour suites moved here from mcpserver:
// mcpserver's suite leaves them to this one (its producedByTools holds the
// same list), and this suite fails when one of them was produced by no
// result its tests saw.
var producedHere = []string{
	"ACTION_MISMATCH", "ALREADY_COMMITTED", "ANSWERED_FROM_MEMORY", "APPROVAL_CANCELLED", "APPROVAL_EXPIRED", "APPROVAL_MISMATCH",
	"CLAIM_UNAVAILABLE", "COMPENSATION_UNAVAILABLE", "CONFLICTING_EVIDENCE", "CONTRACT_VIOLATION", "CURSOR_EXPIRED",
	"DECLARATION_CONTRADICTED", "DEFAULT_SCOPE_APPLIED", "DEPRECATED_FIELD", "END_NOT_PROVEN", "ESTIMATED_TOTAL", "FIELD_DRIFT",
	"INCONSISTENT_SNAPSHOT", "NULL_LIKE_VALUES", "OPERATION_RUNNING", "PARTIAL_FIELD_SET", "SEARCH_MATCHES_UNVERIFIED",
	"SELECTION_NOT_COMMITTABLE", "SELECTION_STALE", "SIGNAL_UNREADABLE", "STALE_INDEX", "TIME_BUDGET_EXCEEDED",
	"UNKNOWN_ENUM_VALUE", "UPSTREAM_BAD_RESPONSE", "UPSTREAM_CLAIM_UNVERIFIED", "UPSTREAM_CONFLICT", "UPSTREAM_CONNECTION_FAILED",
	"UPSTREAM_CONTRACT_VIOLATION", "UPSTREAM_FORBIDDEN", "UPSTREAM_GRAPHQL_ERRORS", "UPSTREAM_NOT_FOUND",
	"UPSTREAM_REPORTED_INCOMPLETE", "UPSTREAM_RESPONSE_TOO_LARGE", "UPSTREAM_UNAVAILABLE", "UPSTREAM_WRITE_UNCONFIRMED",
	"VALUE_NORMALIZED",
}

// TestMain fails the suite when a code of producedHere was produced by no
// tool result in a test (when the whole suite ran: with -run or -short it
// cannot know), and when one of them is not a registered code at all.
func TestMain(m *testing.M) {
	code := m.Run()
	if run := flag.Lookup("test.run"); code == 0 && run != nil && run.Value.String() == "" && !testing.Short() {
		registered := map[string]bool{}
		for _, c := range envelope.Codes() {
			registered[c.Code] = true
		}
		var missing []string
		for _, c := range producedHere {
			if !produced[c] || !registered[c] {
				missing = append(missing, c)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no test produced these codes in a tool result: %v\n", missing)
			code = 1
		}
	}
	os.Exit(code)
}
