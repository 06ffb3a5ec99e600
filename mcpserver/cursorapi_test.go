package mcpserver

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/redact/leaktest"
)

// cursorAPIConfig reads cursorAPI at base as resource "items", with its
// key from CURSOR_API_KEY in the query; fields are YAML lines declaring
// more fields.
func cursorAPIConfig(base string, fields ...string) harnessOpt {
	return withConfig(func(string) []byte {
		return fmt.Appendf(nil, `environment: test
upstreams:
  api:
    base_url: %q
    credential: {env: CURSOR_API_KEY, query: api_key}
    timeout: 150ms
    retries: 0
    backoff: {min: 1ms, max: 5ms}
resources:
  items:
    upstream: api
    list: {path: /v1/items, items: results}
    pagination: {dialect: next_url, next: next, page_size_param: limit, page_size: %d}
    id_field: id
    fields:
      id: {type: string}
      name: {type: string}
%s`, base, tooltest.CursorAPIPage, strings.Join(fields, ""))
	})
}

// storeLeaks fails when the store's files reveal key in any form
// leaktest reads.
func (h *harness) storeLeaks(key string) {
	h.t.Helper()
	for _, f := range []string{h.dbPath, h.dbPath + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if hits := leaktest.Hits(b, key); len(hits) > 0 {
			h.t.Fatalf("the store reveals the key (%v)", hits)
		}
	}
}

// replica connects h to another replica: a tools.Deps of its own over the same
// store, with secret (nil: the keys the store keeps).
func replica(t *testing.T, h *harness, secret []byte) {
	t.Helper()
	h.otherProcess(secret)
}
