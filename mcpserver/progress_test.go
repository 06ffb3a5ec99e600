package mcpserver

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/tooltest"
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
	h := newHarness(t, withProgressInterval(20*time.Millisecond))
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

// TestCommitProgress_BeatsOnTheClockAndNeverAfterTheResult: a commit
// called with a progress token reports its targets with an outcome, of the
// operation's total, at most once per interval of airlock's clock (none
// before the first interval passed, however many targets finished), with
// progress increasing, and none once the result was sent.
func TestCommitProgress_BeatsOnTheClockAndNeverAfterTheResult(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	api := newFixture(t)
	// Writes wait for the test to release them, one per value.
	release := make(chan struct{}, 1000)
	var arrived atomic.Int32
	_, url := tooltest.ServeScripted(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			arrived.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		api.ServeHTTP(w, r)
	})
	h := newHarness(t, demoAt(url), withClock(clock), withProgressInterval(time.Second))
	p := h.call("preview_selection", seedPreview(nil))
	members := int(p.data["counts"].(map[string]any)["members"].(float64))
	if members < 12 {
		t.Fatalf("the selection needs targets: %d", members)
	}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "commit_bulk_action"
		// The answer waits for the operation: the wait's timer is on the
		// clock the test moves, far less than it waits.
		req.Params.Arguments = commitArgsFor(p, "execute", map[string]any{"wait_ms": 120000})
		req.Params.Meta = &mcp.Meta{ProgressToken: "commit"}
		res, err := h.client.CallTool(context.Background(), req)
		answered <- answer{res, err}
	}()

	// Four targets get an outcome while the clock stands still: their
	// workers' next writes arrive once each has reported its outcome.
	for range 4 {
		release <- struct{}{}
	}
	for deadline := time.Now().Add(30 * time.Second); arrived.Load() < 8; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes arrived; want the four released and the next four", arrived.Load())
		}
	}
	// Give a notification sent too early the time to arrive: none may.
	time.Sleep(100 * time.Millisecond)
	if notes := h.progressNotes("commit"); len(notes) != 0 {
		t.Fatalf("progress was sent before an interval passed on airlock's clock: %v", notes)
	}

	// Each interval the clock moves brings at most one report.
	advances := 0
	for deadline := time.Now().Add(30 * time.Second); ; {
		clock.Advance(time.Second)
		advances++
		time.Sleep(20 * time.Millisecond)
		if notes := h.progressNotes("commit"); len(notes) > 0 && notes[len(notes)-1]["progress"].(float64) >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no report of the four outcomes after %d intervals: %v", advances, h.progressNotes("commit"))
		}
	}
	notes := h.progressNotes("commit")
	if len(notes) > advances {
		t.Fatalf("%d reports in %d intervals: %v", len(notes), advances, notes)
	}
	prev := -1.0
	for _, n := range notes {
		if pr := n["progress"].(float64); pr <= prev {
			t.Fatalf("progress went from %v to %v", prev, pr)
		} else {
			prev = pr
		}
		if n["message"] != "targets with an outcome" || n["total"] != float64(members) {
			t.Fatalf("a commit's report: %v; want the targets with an outcome of %d", n, members)
		}
	}

	close(release)
	a := <-answered
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.res.IsError {
		t.Fatalf("commit: %+v", a.res.Content)
	}
	sent := len(h.progressNotes("commit"))
	for range 3 {
		clock.Advance(time.Second)
	}
	// Give a late notification the time to arrive: none may.
	time.Sleep(100 * time.Millisecond)
	if after := len(h.progressNotes("commit")); after != sent {
		t.Fatalf("%d progress notifications after the result", after-sent)
	}
}
