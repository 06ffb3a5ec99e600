package tooltest

import (
	"strings"

	"github.com/airlock-mcp/airlock/fixtures"
)

// DemoAt is the demo configuration pointed at the upstream at url, with
// edits (old, new pairs), each replacing the first occurrence of old.
func DemoAt(url string, edits ...string) []byte {
	y := string(fixtures.DemoConfig(url))
	for i := 0; i+1 < len(edits); i += 2 {
		y = strings.Replace(y, edits[i], edits[i+1], 1)
	}
	return []byte(y)
}

// AssignOwner is the demo's assign_owner action, to team-identity.
var AssignOwner = map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}

// ExplicitPreview is preview_selection's arguments for service accounts
// named by ids, with AssignOwner.
func ExplicitPreview(ids ...any) map[string]any {
	return map[string]any{"resource": "service_accounts", "ids": ids, "action": AssignOwner}
}
