package tools

import "github.com/airlock-mcp/airlock/internal/tooltest"

// demoAt points the demo configuration at another upstream, with edits
// (tooltest.DemoAt).
func demoAt(url string, edits ...string) harnessOpt {
	return withConfig(func(string) []byte { return tooltest.DemoAt(url, edits...) })
}

var (
	assignOwner     = tooltest.AssignOwner
	explicitPreview = tooltest.ExplicitPreview
)

// fastRetries makes the demo upstream retry twice without waiting long.
var fastRetries = []string{"retries: 2", "retries: 2\n    backoff: {min: 1ms, max: 5ms}"}
