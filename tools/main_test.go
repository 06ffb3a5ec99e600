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
	"CLAIM_UNAVAILABLE", "CONFLICTING_EVIDENCE", "DECLARATION_CONTRADICTED", "END_NOT_PROVEN", "FIELD_DRIFT", "NULL_LIKE_VALUES",
	"SEARCH_MATCHES_UNVERIFIED", "SIGNAL_UNREADABLE", "TIME_BUDGET_EXCEEDED", "UPSTREAM_CLAIM_UNVERIFIED", "UPSTREAM_GRAPHQL_ERRORS",
	"UPSTREAM_REPORTED_INCOMPLETE",
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
