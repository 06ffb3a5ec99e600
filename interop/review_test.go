package interop

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// requireBrowserEnv makes a missing Chromium or playwright-core a failure.
const requireBrowserEnv = "AIRLOCK_REQUIRE_BROWSER"

// requireChromium returns the Chromium executable, or skips (fails under
// AIRLOCK_REQUIRE_BROWSER=1) when it or playwright-core is missing.
func requireChromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	reason := ""
	if _, err := os.Stat(path); err != nil {
		reason = "no Chromium at " + path + " (Debian: apt-get install chromium)"
	} else if _, err := os.Stat(filepath.Join("node_modules", "playwright-core")); err != nil {
		reason = "interop/node_modules/playwright-core is missing (npm ci in interop/)"
	}
	if reason != "" {
		unavailable(t, requireBrowserEnv, "browser test", reason)
	}
	return path
}

// TestReviewPage_InHeadlessChromium: an operator opens the review page that
// `airlock serve --http --review` mounts, on a laptop (1280x720) and on a
// phone (390x844): the decision and what it acknowledges are on the first
// screen without scrolling, for a two-project destructive archive and for a
// 131-member selection, and no page scrolls sideways. The operator approves
// one selection and rejects another in a real browser; the agent's commit
// of the first goes through and of the second is refused.
func TestReviewPage_InHeadlessChromium(t *testing.T) {
	node := requireNode(t)
	chromium := requireChromium(t)
	bin := buildAirlock(t)
	url := startHTTPServer(t, bin, "--review")
	base := strings.TrimSuffix(url, "/mcp")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "review-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func(tool string, args map[string]any) (map[string]any, map[string]any) {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var env struct {
			Data    map[string]any `json:"data"`
			Problem map[string]any `json:"problem"`
		}
		_ = json.Unmarshal(b, &env)
		return env.Data, env.Problem
	}
	archive := map[string]any{"type": "archive"}
	a, _ := call("preview_selection", map[string]any{"resource": "projects", "ids": []any{"proj_0023", "proj_0042"}, "action": archive})
	b, _ := call("preview_selection", map[string]any{"resource": "projects", "ids": []any{"proj_0068"}, "action": archive})
	large, _ := call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"},
		"exclude": []any{
			map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"},
			map[string]any{"field": "tags", "op": "contains", "value": "legal_hold", "reason": "legal hold"},
		},
		"action": map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}, "page_size": 0})
	if large["counts"].(map[string]any)["members"] != float64(131) {
		t.Fatalf("the large selection: %v", large["counts"])
	}
	commit := func(sel map[string]any) (map[string]any, map[string]any) {
		return call("commit_bulk_action", map[string]any{"selection_id": sel["selection_id"], "expected_digest": sel["digest"], "action": archive, "mode": "execute"})
	}
	if _, p := commit(a); p["code"] != "APPROVAL_REQUIRED" {
		t.Fatalf("before the review: %v", p)
	}

	shots := os.Getenv("AIRLOCK_REVIEW_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	t.Setenv("CHROMIUM", chromium)
	runScript(t, node, "review.mjs", base, a["selection_id"].(string), a["digest"].(string), b["selection_id"].(string), shots, large["selection_id"].(string))

	op, p := commit(a)
	if p != nil || op["status"] != "completed" || op["counts"].(map[string]any)["succeeded"] != float64(2) {
		t.Fatalf("commit of the approved selection: %v %v", op, p)
	}
	if _, p := commit(b); p["code"] != "APPROVAL_REJECTED" || !strings.Contains(p["detail"].(string), "Ada Operator") {
		t.Fatalf("commit of the rejected selection: %v", p)
	}
}
