package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
)

// TestApprovalView_InARealHostInHeadlessChromium: a host page built on the
// MCP Apps SDK's AppBridge, in headless Chromium, connects to `airlock serve
// --demo --http` with a client that declares MCP Apps. The model's list
// leaves decide_selection out; the view renders the preview in a sandboxed
// iframe under the CSP its resource declares; the person pages through the
// manifest and approves at 1280 px, and the commit runs under that
// approval; at 375 px the person rejects another selection, and its commit
// is refused with nothing written. The store holds both decisions, each
// naming the host, and the operation's audit trail shows the approval.
// Screenshots are kept in AIRLOCK_APPS_SCREENSHOTS (default: a temp dir,
// logged).
func TestApprovalView_InARealHostInHeadlessChromium(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	chromium := requireChromium(t)
	if _, err := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol", "ext-apps")); err != nil {
		unavailable(t, requireBrowserEnv, "browser test", "interop/node_modules/@modelcontextprotocol/ext-apps is missing (npm ci in interop/)")
	}
	bin := buildAirlock(t)
	store := filepath.Join(t.TempDir(), "apps.db")
	// The last --store wins: the test reads the store afterwards.
	url := startHTTPServer(t, bin, "--store", store)

	shots := os.Getenv("AIRLOCK_APPS_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "apps.mjs", url, shots)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node apps.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	var sum struct {
		OK      bool `json:"ok"`
		Approve struct {
			SelectionID string `json:"selection_id"`
			OperationID string `json:"operation_id"`
			ApprovalID  string `json:"approval_id"`
			Members     int    `json:"members"`
			Succeeded   int    `json:"succeeded"`
		} `json:"approve"`
		Reject struct {
			SelectionID string `json:"selection_id"`
		} `json:"reject"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &sum); err != nil || !sum.OK {
		t.Fatalf("node apps.mjs: want a JSON summary with ok=true (%v)\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("node apps.mjs: %s", bytes.TrimSpace(stdout.Bytes()))
	t.Logf("screenshots of the approval view: %s", shots)
	if sum.Approve.Succeeded != sum.Approve.Members {
		t.Errorf("the approved commit succeeded on %d of %d targets", sum.Approve.Succeeded, sum.Approve.Members)
	}

	st, err := sqlitestore.OpenReadOnly(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	decided := func(sel, want string) *selection.Approval {
		t.Helper()
		aps, err := st.Approvals(t.Context(), sel)
		if err != nil {
			t.Fatal(err)
		}
		if len(aps) != 1 || aps[0].Decision != want || aps[0].Channel != selection.ChannelClient || !strings.HasPrefix(aps[0].Who, "approval view in mcp client airlock-apps-host") {
			t.Fatalf("decisions of %s: %+v", sel, aps)
		}
		return aps[0]
	}
	if ap := decided(sum.Approve.SelectionID, selection.DecisionApproved); ap.ID != sum.Approve.ApprovalID || ap.UsedBy != sum.Approve.OperationID {
		t.Errorf("the approval %s was not the one the operation used: %+v", sum.Approve.ApprovalID, ap)
	}
	decided(sum.Reject.SelectionID, selection.DecisionRejected)
	trail, err := st.AuditTrail(t.Context(), sum.Approve.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, e := range trail {
		if e.Kind == selection.AuditDecision && e.Event == selection.DecisionApproved {
			line = e.Actor + " as " + e.Principal.String() + ": " + e.Detail
		}
	}
	if !strings.Contains(line, "approval view in mcp client airlock-apps-host") {
		t.Fatalf("no audit line of the view's approval: %+v", trail)
	}
	t.Logf("audit: %s", line)
}

// TestApprovalView_Refusals_OfficialTypeScriptSDK: decide_selection's
// refusals, driven by the official TypeScript SDK client over streamable
// HTTP (apps_refusals.mjs): not listed to nor callable by a client without
// MCP Apps; a made-up or another selection's state, another digest and a
// reused state refused with their codes.
func TestApprovalView_Refusals_OfficialTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	bin := buildAirlock(t)
	url := startHTTPServer(t, bin)
	runScript(t, node, "apps_refusals.mjs", "http", url)
}
