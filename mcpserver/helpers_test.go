package mcpserver

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/tools"
)

// seq is n active subscriptions, sub_00001 on.
func seq(n int) *fixtures.Collection {
	var recs []fixtures.Record
	for i := 1; i <= n; i++ {
		recs = append(recs, fixtures.Record{"id": fmt.Sprintf("sub_%05d", i), "customer_id": "cus_a", "customer_name": "Harbor Media BV", "region": "eu",
			"status": "active", "amount_due": 0, "currency": "EUR", "tags": []any{}, "collection_paused": false, "version": 1, "updated_at": "2026-11-01T00:00:00Z"})
	}
	return fixtures.NewCollection(recs)
}

// askResult is the input request a handler set in call (nil: none), as
// the server answers it to a client of protocol 2026-07-28.
func askResult(call *tools.Call) *mcp.CallToolResult {
	if call.Ask == nil {
		return nil
	}
	return inputResult(call.Ask)
}

// dataOf is an envelope's data as JSON values.
func dataOf(env *envelope.Envelope) map[string]any {
	var m struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(env.Marshal(), &m)
	return m.Data
}

func res(dialect string, extra string) fixtures.Resource {
	return fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: dialect, PageSize: 20, Extra: extra}
}

var archive = map[string]any{"type": "archive"}

func inactiveProjects(extra map[string]any) map[string]any {
	a := map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "action": archive}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

func ownerlessVisible(h *harness, n int) []any {
	var out []any
	for _, r := range h.api.Collection(fixtures.DatasetServiceAccounts).All() {
		if r["owner"] == nil && r["_hidden"] != true && len(out) < n {
			out = append(out, r.ID())
		}
	}
	return out
}

// fastRetries makes the demo upstream retry twice without waiting long.
var fastRetries = []string{"retries: 2", "retries: 2\n    backoff: {min: 1ms, max: 5ms}"}

// fastReconcile edits re-read the demo's writes whose outcome was not
// observed in rounds 10–40 ms apart instead of 0.25–4 s: the same rounds,
// in test time.
var fastReconcile = []string{
	"    description: Pause payment collection on a past-due subscription.\n",
	"    description: Pause payment collection on a past-due subscription.\n    reconcile: {backoff: 10ms, max_backoff: 40ms}\n",
	"    description: Assign an owning team to a service account without one.\n",
	"    description: Assign an owning team to a service account without one.\n    reconcile: {backoff: 10ms, max_backoff: 40ms}\n",
}
