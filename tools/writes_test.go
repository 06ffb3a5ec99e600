package tools

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
)

// labDirect serves a WriteLab through the tools, with a store.
func labDirect(t *testing.T, api *fixtures.WriteLab) *direct {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	d := newDirect(t, fixtures.WriteLabConfig(srv.URL, 150*time.Millisecond), func(c *Config) { c.Store = st })
	t.Cleanup(func() { d.deps.Engine.Wait(); st.Close() })
	return d
}

func labPreview(t *testing.T, d *direct, action string) map[string]any {
	t.Helper()
	env, data := d.call("preview_selection", map[string]any{"resource": "accounts", "filter": map[string]any{"status": "active"},
		"action": map[string]any{"type": action, "params": map[string]any{"reason": "account review 2026"}}})
	if env.Problem != nil {
		t.Fatalf("preview: %+v", env.Problem)
	}
	return data
}

func labCommit(p map[string]any, action string, extra map[string]any) map[string]any {
	args := map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "mode": "execute",
		"action": map[string]any{"type": action, "params": map[string]any{"reason": "account review 2026"}}}
	for k, v := range extra {
		args[k] = v
	}
	return args
}

// TestWaitZero_AnswersAtOnce: wait_ms 0 answers without waiting for the
// operation, which is still running.
func TestWaitZero_AnswersAtOnce(t *testing.T) {
	t.Parallel()
	api := fixtures.NewWriteLab(4)
	api.SetFault("acc-0000", fixtures.LabFault{Kind: fixtures.LabSlow, Delay: 2 * time.Second})
	d := labDirect(t, api)
	p := labPreview(t, d, "archive_reread")
	env, data := d.call("commit_bulk_action", labCommit(p, "archive_reread", map[string]any{"wait_ms": 0}))
	if data["status"] != selection.OpRunning || len(env.IncompleteReasons) == 0 || env.IncompleteReasons[0].Code != envelope.OperationRunning {
		t.Fatalf("status %v, reasons %+v; want running with OPERATION_RUNNING", data["status"], env.IncompleteReasons)
	}
}

// TestStoppedOperation_IsIncompleteUntilResumed: an operation stopped with
// pending and unknown targets is never complete; resume settles it.
func TestStoppedOperation_IsIncompleteUntilResumed(t *testing.T) {
	t.Parallel()
	api := fixtures.NewWriteLab(10)
	api.SetFault("acc-0000", fixtures.LabFault{Kind: fixtures.LabRedirect})
	d := labDirect(t, api)
	p := labPreview(t, d, "archive_keyed")
	_, op := d.call("commit_bulk_action", labCommit(p, "archive_keyed", map[string]any{"wait_ms": 60000}))
	env, got := d.call("get_operation", map[string]any{"operation_id": op["operation_id"]})
	var unsettled *envelope.Reason
	for i := range env.IncompleteReasons {
		if env.IncompleteReasons[i].Code == envelope.TargetsUnsettled {
			unsettled = &env.IncompleteReasons[i]
		}
	}
	if got["status"] != selection.OpStopped || env.Complete || unsettled == nil || *unsettled.Count != 10 {
		t.Fatalf("status %v, complete %v, reasons %+v; want stopped, incomplete, 10 unsettled", got["status"], env.Complete, env.IncompleteReasons)
	}
	env, got = d.call("commit_bulk_action", labCommit(p, "archive_keyed", map[string]any{"wait_ms": 60000, "resume": true}))
	if got["status"] != selection.OpCompleted || !env.Complete {
		t.Fatalf("after resume: status %v, complete %v, reasons %+v", got["status"], env.Complete, env.IncompleteReasons)
	}
}
