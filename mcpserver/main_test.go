package mcpserver

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/testparallel"
	"github.com/airlock-mcp/airlock/tools"
)

var (
	producedMu sync.Mutex
	produced   = map[string]bool{}
)

// recordProblems notes every stable code a result carries: the call's
// problem, its incomplete reasons and warnings, and the per-target problems
// of an operation.
func recordProblems(raw []byte) {
	type coded struct {
		Code string `json:"code"`
	}
	var env struct {
		Reasons  []coded `json:"incomplete_reasons"`
		Warnings []coded `json:"warnings"`
		Problem  *struct {
			Code string `json:"code"`
		} `json:"problem"`
		Data struct {
			Results []struct {
				Problem *struct {
					Code string `json:"code"`
				} `json:"problem"`
			} `json:"results"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &env) != nil {
		return
	}
	producedMu.Lock()
	defer producedMu.Unlock()
	if env.Problem != nil {
		produced[env.Problem.Code] = true
	}
	for _, c := range append(env.Reasons, env.Warnings...) {
		produced[c.Code] = true
	}
	for _, r := range env.Data.Results {
		if r.Problem != nil {
			produced[r.Problem.Code] = true
		}
	}
}

// producedElsewhere are the codes no tool returns, only an operator's
// channel (the review page, airlock approve): the review package's tests
// require them.
var producedElsewhere = map[string]bool{string(envelope.ProblemReviewAccessDenied): true, string(envelope.ProblemReviewFormInvalid): true, string(envelope.ProblemApprovalDecided): true}

// producedByTools are the codes whose only producing tests moved to the
// tools package with the tool-behaviour suites: its TestMain requires them
// (its producedHere holds the same list).
var producedByTools = map[string]bool{
	"ACTION_MISMATCH": true, "ALREADY_COMMITTED": true, "ANSWERED_FROM_MEMORY": true, "APPROVAL_CANCELLED": true,
	"APPROVAL_EXPIRED": true, "APPROVAL_MISMATCH": true, "CLAIM_UNAVAILABLE": true, "COMPENSATION_UNAVAILABLE": true,
	"CONFLICTING_EVIDENCE": true, "CONTRACT_VIOLATION": true, "CURSOR_EXPIRED": true, "DECLARATION_CONTRADICTED": true,
	"DEFAULT_SCOPE_APPLIED": true, "DEPRECATED_FIELD": true, "END_NOT_PROVEN": true, "ESTIMATED_TOTAL": true, "FIELD_DRIFT": true,
	"INCONSISTENT_SNAPSHOT": true, "NULL_LIKE_VALUES": true, "OPERATION_RUNNING": true, "PARTIAL_FIELD_SET": true,
	"SEARCH_MATCHES_UNVERIFIED": true, "SELECTION_NOT_COMMITTABLE": true, "SELECTION_STALE": true, "SIGNAL_UNREADABLE": true,
	"STALE_INDEX": true, "TIME_BUDGET_EXCEEDED": true, "UNKNOWN_ENUM_VALUE": true, "UPSTREAM_BAD_RESPONSE": true,
	"UPSTREAM_CLAIM_UNVERIFIED": true, "UPSTREAM_CONFLICT": true, "UPSTREAM_CONNECTION_FAILED": true,
	"UPSTREAM_CONTRACT_VIOLATION": true, "UPSTREAM_FORBIDDEN": true, "UPSTREAM_GRAPHQL_ERRORS": true, "UPSTREAM_NOT_FOUND": true,
	"UPSTREAM_REPORTED_INCOMPLETE": true, "UPSTREAM_RESPONSE_TOO_LARGE": true, "UPSTREAM_UNAVAILABLE": true,
	"UPSTREAM_WRITE_UNCONFIRMED": true, "VALUE_NORMALIZED": true,
}

// TestMain fails the suite when a registered problem, reason or warning code
// was produced by no tool result in a test (when the whole suite ran: with
// -run or -short it cannot know). Its tests wait on servers and stores as
// much as they compute: more run at once than there are CPUs.
func TestMain(m *testing.M) {
	testparallel.Set(4)
	code := m.Run()
	if run := flag.Lookup("test.run"); code == 0 && run != nil && run.Value.String() == "" && !testing.Short() {
		var missing []string
		for _, c := range envelope.Codes() {
			if (c.Kind == envelope.KindProblem || c.Kind == envelope.KindReason || c.Kind == envelope.KindWarning) && !produced[c.Code] && !producedElsewhere[c.Code] && !producedByTools[c.Code] {
				missing = append(missing, c.Code)
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

// bareDeps are the tools without a configuration or a store: their specs
// and schemas.
func bareDeps() *tools.Deps {
	d, err := tools.New(context.Background(), tools.Config{})
	if err != nil {
		panic(err)
	}
	return d
}

// validators caches compiled output schemas by their text: tests build
// many servers with the same tools, and every harness's server advertises
// the same few.
var validators sync.Map

func outputValidator(name string, schema []byte) (*envelope.Validator, error) {
	key := name + "\x00" + string(schema)
	if v, ok := validators.Load(key); ok {
		return v.(*envelope.Validator), nil
	}
	v, err := envelope.CompileSchema(name, schema)
	if err != nil {
		return nil, err
	}
	validators.Store(key, v)
	return v, nil
}

// bareServer is a server of bareDeps.
func bareServer() *Server {
	s, err := NewServer(bareDeps(), Options{})
	if err != nil {
		panic(err)
	}
	return s
}
