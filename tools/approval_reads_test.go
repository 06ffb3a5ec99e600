package tools

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
)

// selectionReads counts the reads of a selection on the store underneath:
// it changes nothing else.
type selectionReads struct {
	selection.Store
	n atomic.Int64
}

func (s *selectionReads) Selection(ctx context.Context, id string) (*selection.Selection, error) {
	s.n.Add(1)
	return s.Store.Selection(ctx, id)
}

// TestApprovedCommit_ReadsItsSelectionOnce: a commit that needs the user's
// approval through the client reads its selection once when it asks, and
// once when the answer approves it and the operation runs: the gate's
// refusal carries the requirement, and the selection read for the call is
// the one the engine checks, the approval records and the commit runs.
func TestApprovedCommit_ReadsItsSelectionOnce(t *testing.T) {
	t.Parallel()
	api := newFixture(t)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	store, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	reads := &selectionReads{Store: store}
	bg, stop := context.WithCancel(context.Background())
	d := newDirect(t, fixtures.DemoConfig(srv.URL), func(c *Config) { c.Store, c.Background = reads, bg })
	t.Cleanup(func() {
		stop()
		d.deps.Engine.Wait()
		store.Close()
	})

	pause := map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}
	_, p := d.call(PreviewSelectionName, map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"},
		"exclude": []any{map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"}},
		"action":  pause})
	if ap, _ := p["approval"].(map[string]any); ap["mode"] != selection.ApprovalClient {
		t.Fatalf("the preview needs no client approval: %v", p["approval"])
	}
	raw, _ := json.Marshal(map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": pause, "mode": "execute"})

	reads.n.Store(0)
	ask := &Call{RequestID: "ask", Raw: raw, Client: "mcp client test 1", CanAsk: true}
	if env, _ := d.run(CommitBulkActionName, ask); ask.Ask == nil {
		t.Fatalf("the commit did not ask for approval: %+v", env.Problem)
	}
	if n := reads.n.Load(); n != 1 {
		t.Errorf("asking for approval read the selection %d times, want 1", n)
	}

	reads.n.Store(0)
	answer := &Call{RequestID: "answer", Raw: raw, Client: "mcp client test 1", CanAsk: true,
		Answer: &InputAnswer{Key: ApprovalKey, State: ask.Ask.State, Action: AnswerAccept, Content: map[string]any{"approve": true, "acknowledge": true}}}
	env, data := d.run(CommitBulkActionName, answer)
	if env.Problem != nil || answer.Ask != nil {
		t.Fatalf("approved commit: %+v (asked again: %v)", env.Problem, answer.Ask != nil)
	}
	if data["operation_id"] == nil || env.Status == envelope.StatusError {
		t.Fatalf("approved commit has no operation: %v", data)
	}
	if n := reads.n.Load(); n != 1 {
		t.Errorf("the approved commit read its selection %d times, want 1", n)
	}
}
