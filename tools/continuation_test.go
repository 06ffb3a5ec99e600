package tools

import (
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
)

// TestPreviewManifestCursor_ContinuesInGetSelection follows the path an
// agent takes: the manifest cursor preview_selection hands out is given,
// as it is, to get_selection, whose own cursors are followed until none is
// left. Every member arrives once, and the first page is not repeated.
func TestPreviewManifestCursor_ContinuesInGetSelection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(map[string]any{"page_size": 7}))
	if p.env.Problem != nil {
		t.Fatalf("preview: %+v", p.env.Problem)
	}
	manifest := p.data["manifest"].(map[string]any)
	cursor, _ := manifest["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("the preview's manifest has no next_cursor: %v", manifest)
	}
	seen := map[string]int{}
	for _, it := range manifest["items"].([]any) {
		seen[it.(map[string]any)["id"].(string)]++
	}
	for hop := 0; cursor != ""; hop++ {
		if hop > 500 {
			t.Fatal("get_selection never ended")
		}
		g := h.call("get_selection", map[string]any{"selection_id": p.data["selection_id"], "cursor": cursor})
		if g.env.Problem != nil {
			t.Fatalf("get_selection refused the cursor %s handed out: %+v %+v", map[bool]string{true: "preview_selection", false: "get_selection"}[hop == 0], g.env.Problem, g.env.Problem.Errors)
		}
		for _, id := range g.ids() {
			seen[id]++
		}
		cursor = ""
		if g.env.Continuation.Kind == envelope.ContinueNextCursor {
			cursor = g.env.Continuation.Cursor
		}
	}
	members := h.members(p.data["selection_id"])
	if len(seen) != len(members) {
		t.Fatalf("followed cursors delivered %d members, the selection has %d", len(seen), len(members))
	}
	for _, id := range members {
		if seen[id] != 1 {
			t.Fatalf("member %s delivered %d times", id, seen[id])
		}
	}
}
