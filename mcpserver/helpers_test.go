package mcpserver

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/tools"
)

func hasReasonCode(env *envelope.Envelope, code envelope.ReasonCode) bool {
	for _, r := range env.IncompleteReasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// seq is n active subscriptions, sub_00001 on.
func seq(n int) *fixtures.Collection {
	var recs []fixtures.Record
	for i := 1; i <= n; i++ {
		recs = append(recs, fixtures.Record{"id": fmt.Sprintf("sub_%05d", i), "customer_id": "cus_a", "customer_name": "Harbor Media BV", "region": "eu",
			"status": "active", "amount_due": 0, "currency": "EUR", "tags": []any{}, "collection_paused": false, "version": 1, "updated_at": "2026-11-01T00:00:00Z"})
	}
	return fixtures.NewCollection(recs)
}

func firstDuplicate(ids []string) string {
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			return id
		}
		seen[id] = true
	}
	return ""
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
