package mcpserver

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/testparallel"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/tools"
)

// producedElsewhere are the codes no tool returns, only an operator's
// channel (the review page, airlock approve): the review package's tests
// require them.
var producedElsewhere = map[string]bool{string(envelope.ProblemReviewAccessDenied): true, string(envelope.ProblemReviewFormInvalid): true, string(envelope.ProblemApprovalDecided): true}

// TestMain fails the suite when a registered problem, reason or warning code
// was produced by no tool result in a test (when the whole suite ran: with
// -run or -short it cannot know). Its tests wait on servers and stores as
// much as they compute: more run at once than there are CPUs.
func TestMain(m *testing.M) {
	testparallel.Set(4)
	code := m.Run()
	if run := flag.Lookup("test.run"); code == 0 && run != nil && run.Value.String() == "" && !testing.Short() {
		producedByTools := map[string]bool{}
		for _, c := range tooltest.ProducedByTools {
			producedByTools[c] = true
		}
		var missing []string
		for _, c := range envelope.Codes() {
			if (c.Kind == envelope.KindProblem || c.Kind == envelope.KindReason || c.Kind == envelope.KindWarning) && !tooltest.Produced(c.Code) && !producedElsewhere[c.Code] && !producedByTools[c.Code] {
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

// bareServer is a server of bareDeps.
func bareServer() *Server {
	s, err := NewServer(bareDeps(), Options{})
	if err != nil {
		panic(err)
	}
	return s
}
