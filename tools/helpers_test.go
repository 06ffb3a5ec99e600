package tools

import (
	"context"
	"fmt"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/tooltest"
)

// canaryToken is the suite's credential: no tool result may ever contain
// it.
const canaryToken = tooltest.CanaryToken

// bareDeps are the tools without a configuration or a store: their specs
// and schemas.
func bareDeps() *Deps {
	d, err := New(context.Background(), Config{})
	if err != nil {
		panic(err)
	}
	return d
}

// firstDuplicate is the first id ids holds twice ("" when none).
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
