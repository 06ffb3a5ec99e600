package tools

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/airlock-mcp/airlock/internal/testparallel"
	"github.com/airlock-mcp/airlock/internal/tooltest"
)

// TestMain fails the suite when a code of tooltest.ProducedByTools (the
// codes whose only producing tests live in this package) was produced by no
// tool result in a test (when the whole suite ran: with -run or -short it
// cannot know), and when one of them is not a registered code at all. Its
// tests wait on fixture servers, stores and operations as much as they
// compute: more run at once than there are CPUs.
func TestMain(m *testing.M) {
	testparallel.Set(4)
	code := m.Run()
	if run := flag.Lookup("test.run"); code == 0 && run != nil && run.Value.String() == "" && !testing.Short() {
		if missing := tooltest.Unproduced(tooltest.ProducedByTools); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no test produced these codes in a tool result: %v\n", missing)
			code = 1
		}
	}
	os.Exit(code)
}
