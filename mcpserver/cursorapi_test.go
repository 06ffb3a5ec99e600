package mcpserver

import (
	"testing"

	"github.com/airlock-mcp/airlock/internal/tooltest"
)

// cursorAPIConfig reads tooltest's CursorAPI at base as resource
// "items" (tooltest.CursorAPIConfig).
func cursorAPIConfig(base string, fields ...string) harnessOpt {
	return withConfig(func(string) []byte { return tooltest.CursorAPIConfig(base, "150ms", fields...) })
}

// storeLeaks fails when the store's files reveal key in any form
// leaktest reads.
func (h *harness) storeLeaks(key string) { tooltest.StoreLeaks(h.t, h.dbPath, key) }

// replica connects h to another replica: a tools.Deps of its own over the same
// store, with secret (nil: the keys the store keeps).
func replica(t *testing.T, h *harness, secret []byte) {
	t.Helper()
	h.otherProcess(secret)
}
