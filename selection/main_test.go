package selection_test

import (
	"os"
	"testing"

	"github.com/airlock-mcp/airlock/internal/testparallel"
)

// TestMain runs more tests at once than there are CPUs: most wait (on an
// upstream's latency, a re-read's backoff, a held write) far longer than
// they compute.
func TestMain(m *testing.M) {
	testparallel.Set(8)
	os.Exit(m.Run())
}
