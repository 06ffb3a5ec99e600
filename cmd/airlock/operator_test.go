package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
)

// operatorSetup runs a server on a demo API with a store and an audit log,
// and previews archiving two projects.
type operatorSetup struct {
	api                  *fixtures.Server
	config, store, audit string
	c                    *client.Client
}

func newOperatorSetup(t *testing.T) *operatorSetup {
	t.Helper()
	api := &fixtures.Server{}
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	dir := t.TempDir()
	s := &operatorSetup{api: api, config: filepath.Join(dir, "airlock.yaml"), store: filepath.Join(dir, "airlock.db"), audit: filepath.Join(dir, "audit.jsonl")}
	if err := os.WriteFile(s.config, fixtures.DemoConfig(apiSrv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startChild(t, s.config, s.store, "--audit-log", s.audit)
	s.c = connect(t, srv.url)
	t.Cleanup(func() { s.c.Close() })
	return s
}

func (s *operatorSetup) previewArchive(t *testing.T, ids ...any) map[string]any {
	t.Helper()
	return callData(t, s.c, "preview_selection", map[string]any{"resource": "projects", "ids": ids, "action": map[string]any{"type": "archive"}})
}

// cli runs airlock in this process with no terminal on stdin.
func cli(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader("y\n"), &out, &errb)
	return code, out.String(), errb.String()
}

func TestApprove_RefusesWithoutATerminalOrTheDigest(t *testing.T) {
	s := newOperatorSetup(t)
	p := s.previewArchive(t, "proj_0004")
	sel := p["selection_id"].(string)

	code, out, errOut := cli("approve", sel, "--store", s.store, "--config", s.config)
	if code != 1 || !strings.Contains(errOut, "refusing to approve without a terminal") || !strings.Contains(out, "Approve archive on 1 projects") {
		t.Fatalf("no terminal: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = cli("approve", sel, "--yes", "sha256:"+strings.Repeat("0", 64), "--store", s.store, "--config", s.config)
	if code != 1 || !strings.Contains(errOut, "DIGEST_MISMATCH") {
		t.Fatalf("wrong digest: exit %d\n%s", code, errOut)
	}
	code, _, errOut = cli("approve", "sel_nope", "--yes", p["digest"].(string), "--store", s.store)
	if code != 1 || !strings.Contains(errOut, "SELECTION_NOT_FOUND") {
		t.Fatalf("unknown selection: exit %d\n%s", code, errOut)
	}
	// Nothing was decided: the commit still needs an approval.
	res := callTool(t, s.c, "commit_bulk_action", commitOf(p))
	if !strings.Contains(res, "APPROVAL_REQUIRED") {
		t.Fatalf("commit: %s", res)
	}
}

func commitOf(p map[string]any) map[string]any {
	return map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": map[string]any{"type": "archive"}, "mode": "execute"}
}

// TestApprove_AsksOnATerminal answers the y/N prompt through a real
// pseudo-terminal (script(1)), then the agent's commit goes through, once.
func TestApprove_AsksOnATerminal(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		// CI requires it (the interop switch covers every external tool
		// the suite drives): this test is the only one of the prompt.
		if os.Getenv("AIRLOCK_REQUIRE_INTEROP") == "1" {
			t.Fatal("script(1) (util-linux) is not installed, and AIRLOCK_REQUIRE_INTEROP=1 requires the terminal test")
		}
		t.Skip("script(1) (util-linux) is not installed; the y/N prompt is not tested")
	}
	s := newOperatorSetup(t)
	p := s.previewArchive(t, "proj_0023", "proj_0042")
	sel := p["selection_id"].(string)
	dir := t.TempDir()
	csvFile, jsonFile := filepath.Join(dir, "m.csv"), filepath.Join(dir, "m.json")
	line := strings.Join([]string{os.Args[0], "approve", sel, "--store", s.store, "--config", s.config, "--audit-log", s.audit,
		"--export", "csv", csvFile, "--export", "json", jsonFile}, " ")
	answer := func(input string) string {
		cmd := exec.Command(scriptBin, "-qec", line, "/dev/null")
		cmd.Env = append(os.Environ(), "AIRLOCK_TEST_AS_MAIN=1", fixtures.DemoTokenEnv+"="+fixtures.DefaultToken)
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return string(out)
	}
	if out := answer("n\n"); !strings.Contains(out, "[y/N]") || !strings.Contains(out, "Nothing decided.") {
		t.Fatalf("answered n:\n%s", out)
	}
	out := answer("y\n")
	if !strings.Contains(out, "Approved "+sel+" as apr_") || !strings.Contains(out, "Exported 2 members as csv") {
		t.Fatalf("answered y:\n%s", out)
	}
	rows, err := readCSV(csvFile)
	if err != nil || len(rows) != 3 || rows[1][0] != "proj_0023" || rows[2][0] != "proj_0042" {
		t.Fatalf("csv export: %v %v", rows, err)
	}
	var doc struct {
		Digest  string `json:"digest"`
		Members []any  `json:"members"`
	}
	if b, err := os.ReadFile(jsonFile); err != nil || json.Unmarshal(b, &doc) != nil || len(doc.Members) != 2 || doc.Digest != p["digest"] {
		t.Fatalf("json export: %s", b)
	}
	// Approving again is refused: the approval stands until used.
	if code, _, errOut := cli("approve", sel, "--yes", p["digest"].(string), "--store", s.store, "--config", s.config); code != 1 || !strings.Contains(errOut, "APPROVAL_ALREADY_DECIDED") {
		t.Fatalf("twice: exit %d %s", code, errOut)
	}
	op := callData(t, s.c, "commit_bulk_action", commitOf(p))
	if op["status"] != "completed" {
		t.Fatalf("commit: %v", op)
	}

	// The audit trail of the operation names the operator and the calls,
	// in the store and in the JSON Lines file, and never the credential.
	code, trail, errOut := cli("audit", op["operation_id"].(string), "--store", s.store)
	if code != 0 {
		t.Fatalf("audit: exit %d %s", code, errOut)
	}
	for _, want := range []string{"approved  os user ", "as local (airlock-approve)", "channel operator_cli, 2 targets, action archive", "commit    mcp client crash-test 1",
		"committed by local (http)",
		"PATCH /v1/projects/{id}  proj_0023  200", "PATCH /v1/projects/{id}  proj_0042  200"} {
		if !strings.Contains(trail, want) {
			t.Errorf("audit lacks %q:\n%s", want, trail)
		}
	}
	log, err := os.ReadFile(s.audit)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var e struct{ Kind, Event, Method string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("audit log line %q: %v", l, err)
		}
		kinds = append(kinds, e.Kind+"/"+e.Event+e.Method)
	}
	// The preview, the operator's approval (written by the CLI process),
	// the commit, and per target the re-read for its ETag and the write.
	if got := strings.Join(kinds, " "); got != "decision/preview decision/approved decision/commit call/requestGET call/requestGET call/requestPATCH call/requestPATCH" &&
		got != "decision/preview decision/approved decision/commit call/requestGET call/requestPATCH call/requestGET call/requestPATCH" {
		t.Fatalf("audit log events: %s", got)
	}
	for what, b := range map[string][]byte{"the audit log": log, "the audit command": []byte(trail)} {
		if bytes.Contains(b, []byte(fixtures.DefaultToken)) || bytes.Contains(b, []byte("Bearer")) {
			t.Fatalf("%s holds the credential", what)
		}
	}
	if code, _, errOut := cli("audit", "op_nope", "--store", s.store); code != 1 || !strings.Contains(errOut, "OPERATION_NOT_FOUND") {
		t.Fatalf("unknown operation: %d %s", code, errOut)
	}
}

func TestApprove_RejectStopsTheCommit(t *testing.T) {
	s := newOperatorSetup(t)
	p := s.previewArchive(t, "proj_0004")
	code, out, errOut := cli("approve", p["selection_id"].(string), "--reject", "--yes", p["digest"].(string), "--store", s.store, "--config", s.config)
	if code != 0 || !strings.Contains(out, "Rejected ") {
		t.Fatalf("reject: exit %d\n%s\n%s", code, out, errOut)
	}
	if res := callTool(t, s.c, "commit_bulk_action", commitOf(p)); !strings.Contains(res, "APPROVAL_REJECTED") {
		t.Fatalf("commit: %s", res)
	}
	if n := len(s.api.Writes()); n != 0 {
		t.Fatalf("%d writes", n)
	}
}

func TestReview_NonLoopbackNeedsAToken(t *testing.T) {
	code, _, errOut := cli("review", "--listen", "0.0.0.0:0", "--store", filepath.Join(t.TempDir(), "s.db"))
	if code != 1 || !strings.Contains(errOut, "AIRLOCK_REVIEW_TOKEN") {
		t.Fatalf("exit %d %s", code, errOut)
	}
	code, _, errOut = cli("serve", "--demo", "--review", "--store", filepath.Join(t.TempDir(), "s.db"))
	if code != 2 || !strings.Contains(errOut, "--review needs --http") {
		t.Fatalf("exit %d %s", code, errOut)
	}
}

func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return csv.NewReader(f).ReadAll()
}

// callTool returns a tool's structured result as JSON, problem or not,
// after checking it against the envelope's schema.
func callTool(t *testing.T, c *client.Client, tool string, args map[string]any) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := envelope.ValidateEnvelope(b); err != nil {
		t.Fatalf("%s: the result breaks the envelope schema: %v\n%s", tool, err, b)
	}
	return string(b)
}

// TestApprove_ShowsAmountsWithTheirCurrency: with the server's
// configuration, a money field of the manifest also reads in its currency.
func TestApprove_ShowsAmountsWithTheirCurrency(t *testing.T) {
	s := newOperatorSetup(t)
	p := callData(t, s.c, "preview_selection", map[string]any{"resource": "subscriptions", "ids": []any{"sub_00076", "sub_00084"},
		"action": map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}})
	sel := p["selection_id"].(string)
	_, out, _ := cli("approve", sel, "--store", s.store, "--config", s.config)
	for _, want := range []string{`"amount_due":22550`, "(amount_due EUR 225.50)", "(amount_due EUR 59.00)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the manifest lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = cli("approve", sel, "--store", s.store)
	if strings.Contains(out, "EUR 225.50") || !strings.Contains(out, `"amount_due":22550`) {
		t.Errorf("without the configuration the amount is the API's number:\n%s", out)
	}
}
