package tools

import (
	"strings"

	"github.com/airlock-mcp/airlock/fixtures"
)

// demoAt points the demo configuration at another upstream, with edits
// (old, new pairs).
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

// fastRetries makes the demo upstream retry twice without waiting long.
var fastRetries = []string{"retries: 2", "retries: 2\n    backoff: {min: 1ms, max: 5ms}"}
