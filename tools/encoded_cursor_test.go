package tools

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/redact/leaktest"
)

// cursorAPIConfig reads tooltest's CursorAPI at base as resource
// "items" (tooltest.CursorAPIConfig).
func cursorAPIConfig(base string, fields ...string) harnessOpt {
	return withConfig(func(string) []byte { return tooltest.CursorAPIConfig(base, "1s", fields...) })
}

// storeLeaks fails when the store's files reveal key in any form
// leaktest reads.
func (h *harness) storeLeaks(key string) { tooltest.StoreLeaks(h.t, h.dbPath, key) }

// replica connects h to another replica: a Deps of its own over the same
// store, with secret (nil: the keys the store keeps).
func replica(t *testing.T, h *harness, secret []byte) {
	t.Helper()
	h.otherProcess(secret)
}

// TestSealedNextLink_ContinuesOnAnotherReplicaAndTheStoreCannotDecodeIt:
// a scan cut by its page budget keeps the upstream's next link, whose
// cursor is base64 of a query holding the key, in the store; the stored
// document reveals the key in no form, and another replica (its own
// deps over the same store) continues the scan through the stored link
// unchanged, to the last item, without the upstream refusing a cursor.
func TestSealedNextLink_ContinuesOnAnotherReplicaAndTheStoreCannotDecodeIt(t *testing.T) {
	t.Parallel()
	api, base := tooltest.NewCursorAPI(t, tooltest.CursorAPIKey, 23)
	h := newHarness(t, cursorAPIConfig(base), withEnv(tooltest.CursorAPIEnv))
	args := map[string]any{"resource": "items", "max_pages": 2}
	r := h.call("search_all", args)
	if r.env.Complete || r.env.Continuation.Cursor == "" || len(r.ids()) != 2*tooltest.CursorAPIPage {
		t.Fatalf("want two pages and a cursor, got %s", r.raw)
	}
	h.storeLeaks(tooltest.CursorAPIKey)
	ids := r.ids()
	for call := 1; r.env.Continuation.Cursor != ""; call++ {
		replica(t, h, nil)
		args["cursor"] = r.env.Continuation.Cursor
		r = h.call("search_all", args)
		if r.env.Status == envelope.StatusError || hasReasonCode(r.env, envelope.CursorExpired) {
			t.Fatalf("call %d: %s", call, r.raw)
		}
		ids = append(ids, r.ids()...)
		h.storeLeaks(tooltest.CursorAPIKey)
	}
	if !r.env.Complete || len(ids) != 23 || ids[22] != "it-022" {
		t.Fatalf("delivered %d items (%v), complete %v: %s", len(ids), ids, r.env.Complete, r.raw)
	}
	if n := api.RefusedCursors(); n > 0 {
		t.Fatalf("the upstream refused %d cursors airlock sent back", n)
	}
}

// TestSealedNextLink_UnderAnotherKeyIsAnExpiredContinuation: a replica
// whose key does not open the stored continuation answers as for an
// expired one (CURSOR_EXPIRED, restart) and sends the upstream nothing of
// it.
func TestSealedNextLink_UnderAnotherKeyIsAnExpiredContinuation(t *testing.T) {
	t.Parallel()
	api, base := tooltest.NewCursorAPI(t, tooltest.CursorAPIKey, 23)
	h := newHarness(t, cursorAPIConfig(base), withEnv(tooltest.CursorAPIEnv))
	args := map[string]any{"resource": "items", "max_pages": 1}
	r := h.call("search_all", args)
	if r.env.Continuation.Cursor == "" {
		t.Fatalf("no cursor: %s", r.raw)
	}
	before := api.Requests()
	replica(t, h, []byte("another replica's secret, not this one's: 0123456789"))
	args["cursor"] = r.env.Continuation.Cursor
	r = h.call("search_all", args)
	if r.env.Complete || !hasReasonCode(r.env, envelope.CursorExpired) || r.env.Continuation.Kind != envelope.ContinueRestart {
		t.Fatalf("want CURSOR_EXPIRED with a restart, got %s", r.raw)
	}
	after := api.Requests()
	if after != before || api.RefusedCursors() > 0 {
		t.Fatalf("the upstream was called %d times with what did not open", after-before)
	}
}

// TestContinuationURLs_AreLoggedWithoutTheirQueryAtEveryLevel: while
// airlock follows next links whose cursor holds the key, and one page
// times out, nothing it logs at debug level (every request, the retry
// library's lines, the timed-out page's error) holds a query, the cursor
// or the key in any form; the path of each request is there.
func TestContinuationURLs_AreLoggedWithoutTheirQueryAtEveryLevel(t *testing.T) {
	t.Parallel()
	api, base := tooltest.NewCursorAPI(t, tooltest.CursorAPIKey, 23)
	api.Slow = 2
	h := newHarness(t, cursorAPIConfig(base), withEnv(tooltest.CursorAPIEnv))
	r := h.call("search_all", map[string]any{"resource": "items"})
	if r.env.Complete {
		t.Fatalf("a page timed out, yet: %s", r.raw)
	}
	logs := h.logs.Bytes()
	if hits := leaktest.Hits(logs, tooltest.CursorAPIKey); len(hits) > 0 {
		t.Fatalf("the logs reveal the key (%v):\n%s", hits, logs)
	}
	levels := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(logs), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("a log line is not JSON: %s", line)
		}
		if bytes.Contains(line, []byte("/v1/items?")) || bytes.Contains(line, []byte("cursor=")) || bytes.Contains(line, []byte(api.CursorOf(1)[:16])) {
			t.Fatalf("a logged URL kept its query: %s", line)
		}
		if bytes.Contains(line, []byte("/v1/items")) {
			levels[rec["level"].(string)]++
		}
	}
	if levels["DEBUG"] < 3 || levels["ERROR"] == 0 {
		t.Fatalf("the requests' path is logged %v times by level, want every request at DEBUG and the timeout at ERROR:\n%s", levels, logs)
	}
}
