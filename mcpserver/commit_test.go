package mcpserver

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

var pauseAction = map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}

// seedPreview is the seed article's example: past_due subscriptions in eu,
// except disputed and legal_hold.
func seedPreview(extra map[string]any) map[string]any {
	a := map[string]any{
		"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"},
		"exclude": []any{
			map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"},
			map[string]any{"field": "tags", "op": "contains", "value": "legal_hold", "reason": "legal hold"},
		},
		"action": pauseAction,
	}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

func commitArgsFor(p result, mode string, extra map[string]any) map[string]any {
	a := map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": pauseAction, "mode": mode}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

// members lists every member id of a selection through get_selection.
func (h *harness) members(selID any) []string {
	h.t.Helper()
	var ids []string
	args := map[string]any{"selection_id": selID, "page_size": 37}
	for {
		r := h.call("get_selection", args)
		if r.env.Problem != nil {
			h.t.Fatalf("get_selection: %+v", r.env.Problem)
		}
		ids = append(ids, r.ids()...)
		if r.env.Complete {
			return ids
		}
		args["cursor"] = r.env.Continuation.Cursor
	}
}

// operation waits for the operation to finish and returns it with every
// page of its results in data.results.
func (h *harness) operation(id any) result {
	h.t.Helper()
	for i := 0; i < 200; i++ {
		r := h.call("get_operation", map[string]any{"operation_id": id, "page_size": 500})
		if r.data["status"] != selection.OpRunning {
			all := r.data["results"].([]any)
			for next := r; next.env.Continuation.Kind == envelope.ContinueNextCursor; {
				next = h.call("get_operation", map[string]any{"operation_id": id, "page_size": 500, "cursor": next.env.Continuation.Cursor})
				all = append(all, next.data["results"].([]any)...)
			}
			r.data["results"] = all
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatal("the operation did not finish")
	return result{}
}

func counts(r result) map[selection.Outcome]int {
	out := map[selection.Outcome]int{}
	for k, v := range r.data["counts"].(map[string]any) {
		out[selection.Outcome(k)] = int(v.(float64))
	}
	return out
}

func outcomes(r result) map[string]selection.Outcome {
	out := map[string]selection.Outcome{}
	for _, t := range r.data["results"].([]any) {
		m := t.(map[string]any)
		out[m["id"].(string)] = selection.Outcome(m["outcome"].(string))
	}
	return out
}

func TestCommit_SendsProgressWhenAsked(t *testing.T) {
	t.Parallel()
	// Beats every interval: shorter than the commit takes.
	h := newHarness(t, withProgressInterval(20*time.Millisecond))
	p := h.call("preview_selection", seedPreview(nil))
	h.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{Latency: 5 * time.Millisecond})
	var mu sync.Mutex
	var progress []float64
	h.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields["progress"].(float64))
			mu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "commit_bulk_action"
	req.Params.Arguments = commitArgsFor(p, "execute", nil)
	req.Params.Meta = &mcp.Meta{ProgressToken: "commit-1"}
	if _, err := h.client.CallTool(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) < 2 || !slices.IsSorted(progress) {
		t.Fatalf("want increasing progress notifications, got %v", progress)
	}
}
