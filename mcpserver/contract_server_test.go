package mcpserver

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

// contractServer replays the versioned fixtures, recording every request.
func contractServer(t *testing.T, hang ...string) (*fixtures.ContractServer, string) {
	t.Helper()
	fxs, err := fixtures.ContractFixtures()
	if err != nil {
		t.Fatal(err)
	}
	var use []fixtures.ContractFixture
	for _, f := range fxs {
		if f.Version == 1 {
			use = append(use, f)
		}
	}
	cs := &fixtures.ContractServer{Fixtures: use, Hang: map[string]bool{}, OnUnknownRoute: func(m, p string) { t.Errorf("contract server: unexpected %s %s", m, p) }}
	for _, h := range hang {
		cs.Hang[h] = true
	}
	srv := httptest.NewServer(cs)
	t.Cleanup(srv.Close)
	return cs, srv.URL
}

func writesTo(cs *fixtures.ContractServer, suffix string) []fixtures.RecordedRequest {
	var out []fixtures.RecordedRequest
	for _, r := range cs.Requests() {
		if r.Method != "GET" && strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

// TestRecordedWriteThatTimesOut_IsRetriedOnlyWithTheSameKey: the contract
// server records the write and never answers. With an idempotency key the
// retry carries the same key; without one, the target ends unknown and is
// never written a second time.
func TestRecordedWriteThatTimesOut_IsRetriedOnlyWithTheSameKey(t *testing.T) {
	t.Parallel()
	t.Run("idempotency key: one retry, same key", func(t *testing.T) {
		cs, url := contractServer(t, "subscriptions-pause_collection-v1.json")
		h := newHarness(t, demoAt(url))
		p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "ids": []any{"sub_00104"}, "action": pauseAction})
		if p.data["committable"] != true {
			t.Fatalf("preview: %v", p.data["committable_reasons"])
		}
		op := h.operation(h.call("commit_bulk_action", commitArgsFor(p, "execute", nil)).data["operation_id"])
		writes := writesTo(cs, "/pause")
		if len(writes) != 2 || writes[0].IdempotencyKey == "" || writes[0].IdempotencyKey != writes[1].IdempotencyKey {
			t.Fatalf("want the write retried once with the same key, got %d writes", len(writes))
		}
		if oc := outcomes(op); oc["sub_00104"] != selection.TargetSucceeded {
			t.Fatalf("outcome %v", oc)
		}
	})
	t.Run("no key: unknown, never a second write", func(t *testing.T) {
		cs, url := contractServer(t, "service_accounts-assign_owner-v1.json")
		h := newHarness(t, demoAt(url, append([]string{`      - {field: owner, to: "{{params.owner}}"}`, "      - {field: owner, to: \"{{params.owner}}\"}\n    timeout: 1s"}, fastReconcile...)...))
		p := h.call("preview_selection", map[string]any{"resource": "service_accounts", "ids": []any{"sa_00017"}, "action": assignOwner})
		op := h.operation(h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"],
			"action": assignOwner, "mode": "execute"}).data["operation_id"])
		if n := len(writesTo(cs, "/owner")); n != 1 {
			t.Fatalf("a write without a key or condition is never sent twice: %d writes", n)
		}
		if oc := outcomes(op); oc["sa_00017"] != selection.TargetUnknown {
			t.Fatalf("outcome %v", oc)
		}
	})
}
