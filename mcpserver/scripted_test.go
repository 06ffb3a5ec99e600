package mcpserver

import (
	"strings"

	"github.com/airlock-mcp/airlock/fixtures"
)

func demoAt(url string, edits ...string) harnessOpt {
	return withConfig(func(string) []byte {
		y := string(fixtures.DemoConfig(url))
		for i := 0; i+1 < len(edits); i += 2 {
			y = strings.Replace(y, edits[i], edits[i+1], 1)
		}
		return []byte(y)
	})
}

var assignOwner = map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}

func explicitPreview(ids ...any) map[string]any {
	return map[string]any{"resource": "service_accounts", "ids": ids, "action": assignOwner}
}
