package tools

import (
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
)

// checkProgress asserts the notifications a call with a progress token
// received: some while the first page was in flight (a client resetting its
// timeout on progress keeps the scan alive), then (when later pages took
// several intervals) the pages read, progress strictly increasing, and none
// after the result.
func checkProgress(t *testing.T, h *harness, token string, afterPage bool) {
	t.Helper()
	notes := h.progressNotes(token)
	if len(notes) == 0 {
		t.Fatal("no progress notification")
	}
	if !strings.HasPrefix(notes[0]["message"].(string), "0 pages") {
		t.Errorf("no report while the first page was in flight: %v", notes[0])
	}
	prev := -1.0
	for _, n := range notes {
		p := n["progress"].(float64)
		if p <= prev {
			t.Fatalf("progress went from %v to %v", prev, p)
		}
		prev = p
	}
	if last := notes[len(notes)-1]["message"].(string); afterPage && strings.HasPrefix(last, "0 pages") {
		t.Errorf("no report after a page: last %q of %v", last, notes)
	}
	// Give a late notification the time to arrive: none may.
	time.Sleep(100 * time.Millisecond)
	if after := len(h.progressNotes(token)); after != len(notes) {
		t.Fatalf("%d progress notifications arrived after the result", after-len(notes))
	}
}

// TestScanProgress_WithAToken_ReportsPagesAndKeepsReportingWhileAPageIsSlow:
// search_all and preview_selection called with a progress token report
// after every page and, while a slow page is in flight, every interval;
// a call without a token gets none.
func TestScanProgress_WithAToken_ReportsPagesAndKeepsReportingWhileAPageIsSlow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.deps.ProgressInterval = 20 * time.Millisecond
	// Batches of pages (the demo reads several at once), each slower than
	// several intervals.
	h.api.SetCollection(fixtures.DatasetSubscriptions, benchRecords(2000))
	h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Latency: 100 * time.Millisecond})

	r := h.callMeta("search_all", map[string]any{"resource": "subscriptions", "max_items": 0}, &mcp.Meta{ProgressToken: "scan"})
	if !r.env.Complete {
		t.Fatalf("incomplete: %s", r.raw)
	}
	checkProgress(t, h, "scan", true)

	p := h.callMeta("preview_selection", seedPreview(nil), &mcp.Meta{ProgressToken: "preview"})
	if p.env.Problem != nil {
		t.Fatalf("preview: %s", p.raw)
	}
	checkProgress(t, h, "preview", false)

	h.call("search_all", map[string]any{"resource": "subscriptions", "max_items": 0})
	h.notesMu.Lock()
	defer h.notesMu.Unlock()
	for _, n := range h.notes {
		if tok := n.Params.AdditionalFields["progressToken"]; n.Method == "notifications/progress" && tok != "scan" && tok != "preview" {
			t.Fatalf("progress without a token: %v", n)
		}
	}
}
