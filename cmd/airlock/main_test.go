package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/testparallel"
)

// TestMain lets the test binary act as airlock itself, so that tests can
// spawn a real process speaking MCP over stdio.
func TestMain(m *testing.M) {
	if os.Getenv("AIRLOCK_TEST_AS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	// The process tests mostly wait for their children (a lease to
	// expire, held writes to land): more run at once than there are CPUs.
	testparallel.Set(4)
	os.Exit(m.Run())
}

func TestStdio_RealProcessServesTools(t *testing.T) {
	t.Parallel()
	c, err := client.NewStdioMCPClient(os.Args[0], []string{"AIRLOCK_TEST_AS_MAIN=1", "XDG_STATE_HOME=" + t.TempDir()}, "serve", "--demo")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(list.Tools) < 2 {
		t.Fatalf("tools: %v %v", list, err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "search_all"
	req.Params.Arguments = map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": nil}, "max_items": 3}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["complete"] != false || !strings.Contains(string(mustJSON(sc)), "VISIBILITY_RESTRICTED") {
		t.Fatalf("the demo credential sees a restricted view: %v", sc)
	}
}

func TestCheck_PrintsResources(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.yaml")
	if err := os.WriteFile(path, fixtures.DemoConfig("https://api.example.com"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"configuration ok", "resource subscriptions", "dialect offset", "sources eu/us/apac", "AIRLOCK_DEMO_TOKEN"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCheck_ReportsEveryErrorWithLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := `environment: prod
upstreams:
  billing:
    base_url: https://billing.example.com
    colour: blue
resources:
  invoices:
    upstream: billing
    list: {path: /v1/invoices}
    pagination: {dialect: cursor, has_more: has_more, sideways: true}
    id_field: id
    fields:
      id: {type: string}
`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"2 error(s)", "line 5: upstreams.billing.colour: unknown key", "line 10: resources.invoices.pagination.sideways: unknown key"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}

func TestServe_RefusesPublicAddressWithoutToken(t *testing.T) {
	t.Setenv("AIRLOCK_HTTP_TOKEN", "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out, errb bytes.Buffer
	code := run([]string{"serve", "--demo", "--http", "0.0.0.0:0"}, nil, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "AIRLOCK_HTTP_TOKEN") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestServe_OAuthFlagsAreCheckedBeforeAnythingStarts: the OAuth flags need
// --http and both the issuer and the resource; an issuer whose discovery
// document cannot be read stops serve at start-up, not at the first call.
func TestServe_OAuthFlagsAreCheckedBeforeAnythingStarts(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--oauth-issuer", "https://idp.example.com"}, 2, "need --http"},
		{[]string{"--http", "127.0.0.1:0", "--oauth-issuer", "https://idp.example.com"}, 2, "both --oauth-issuer and --oauth-resource"},
		{[]string{"--http", "127.0.0.1:0", "--oauth-resource", "http://127.0.0.1/mcp", "--oauth-issuer", "https://idp.example.com", "--oauth-skew", "soon"}, 2, "--oauth-skew"},
		{[]string{"--http", "127.0.0.1:0", "--oauth-resource", "mcp", "--oauth-issuer", "https://idp.example.com"}, 1, "the resource must be an absolute URL"},
		{[]string{"--http", "127.0.0.1:0", "--oauth-resource", "http://127.0.0.1/mcp", "--oauth-issuer", "http://127.0.0.1:1"}, 1, "discovery document"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"serve", "--demo"}, tc.args...), nil, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
	}
}

func TestDemo_RunsTheTourAndExitsZero(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run([]string{"demo"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"VISIBILITY_RESTRICTED", "SOURCE_UNAVAILABLE", "complete true", "complete false",
		"the client asks the user", "Why approval: 131 targets, more than 100", "error APPROVAL_REQUIRED", "$ airlock approve sel_",
		"channel operator_cli, 23 targets", "PATCH /v1/projects/{id}", `state back to "inactive" (23)`, `completed: {"succeeded":23}`,
		"member sub_00076  Nimbus Freight Inc                 EUR 225.50"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the tour lacks %q", want)
		}
	}
	// A person reads the tour: values are JSON, never Go's map syntax.
	if strings.Contains(out.String(), "map[") {
		t.Errorf("the tour prints a Go map:\n%s", out.String())
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestBindAddr_WithoutAHostBindsLoopback: ":8765" listens on loopback, not
// on every interface, and so needs no token; an explicit public address
// still does.
func TestBindAddr_WithoutAHostBindsLoopback(t *testing.T) {
	for in, want := range map[string]struct {
		addr     string
		loopback bool
	}{
		":8765":          {"127.0.0.1:8765", true},
		"127.0.0.1:8765": {"127.0.0.1:8765", true},
		"[::1]:8765":     {"[::1]:8765", true},
		"localhost:8765": {"localhost:8765", true},
		"0.0.0.0:8765":   {"0.0.0.0:8765", false},
		"10.1.2.3:8765":  {"10.1.2.3:8765", false},
	} {
		addr, loopback, err := bindAddr(in)
		if err != nil || addr != want.addr || loopback != want.loopback {
			t.Errorf("bindAddr(%q) = %q, %v, %v; want %q, %v", in, addr, loopback, err, want.addr, want.loopback)
		}
	}
	if _, _, err := bindAddr("8765"); err == nil {
		t.Error("a bare port must be refused with the flag's error")
	}
	// Served end to end: no token needed, and it answers on loopback.
	t.Setenv("AIRLOCK_HTTP_TOKEN", "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	port := strings.TrimPrefix(freePort(t), "127.0.0.1:")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, []string{"--demo", "--http", ":" + port}, nil, io.Discard, io.Discard) }()
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if i > 500 {
			t.Fatal("serve did not listen on loopback")
		}
	}
	cancel()
	<-done
}

func TestCheck_AnUnsetCredentialIsAWarningAndAnErrorWhenStrict(t *testing.T) {
	t.Setenv(fixtures.DemoTokenEnv, "")
	path := filepath.Join(t.TempDir(), "airlock.yaml")
	if err := os.WriteFile(path, fixtures.DemoConfig("https://api.example.com"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "warning: upstream demo: the credential's environment variable " + fixtures.DemoTokenEnv + " is not set"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("output lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"check", "--strict", "--config", path}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "with --strict") {
		t.Fatalf("--strict: exit %d, stderr %q; want 1", code, errb.String())
	}
	t.Setenv(fixtures.DemoTokenEnv, "set")
	out.Reset()
	if code := run([]string{"check", "--strict", "--config", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("--strict with the credential set: exit %d: %s", code, errb.String())
	}
}

func TestCheck_FailsOnAContractFileItCannotRead(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(string(fixtures.DemoConfig("https://api.example.com")), "    invariants:", "    contract: {schema: schemas/missing.json}\n    invariants:", 1)
	path := filepath.Join(dir, "airlock.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "missing.json") {
		t.Fatalf("exit %d, stderr %q; want 1 naming the missing schema", code, errb.String())
	}
}

// TestConfig_RelativeContractPathsResolveAgainstTheFile: every command reads
// the configuration the same way, so a schema named relative to the
// configuration file is found from any working directory, by check and by
// the commands that build the runtime (serve, approve, review).
func TestConfig_RelativeContractPathsResolveAgainstTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "schemas"), 0o755); err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`
	if err := os.WriteFile(filepath.Join(dir, "schemas", "sub.json"), []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(fixtures.DemoConfig("https://api.example.com")), "    invariants:", "    contract: {schema: schemas/sub.json}\n    invariants:", 1)
	path := filepath.Join(dir, "airlock.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir("/")
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("check from /: exit %d: %s", code, errb.String())
	}
	loaded, err := loadConfig(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := initialize(context.Background(), loaded, func(string) string { return "token" }, quietLogger(), nil); err != nil {
		t.Fatalf("serve's runtime from /: %v", err)
	}
}

// TestLoadConfig_ReportsATodoEvenWhenEscaped: serve skips looking for a
// draft's TODOs in a file that cannot hold one; a TODO spelled with a YAML
// escape (so that its bytes never read "TODO(") is still found and
// reported as a TODO, where it stands in for a value that would pass.
func TestLoadConfig_ReportsATodoEvenWhenEscaped(t *testing.T) {
	t.Parallel()
	cfg := strings.Replace(string(fixtures.DemoConfig("http://127.0.0.1:9")), "environment: demo", `environment: "\x54ODO(name this deployment)"`, 1)
	if !strings.Contains(cfg, `\x54ODO(`) {
		t.Fatal("the demo configuration no longer names its environment")
	}
	path := filepath.Join(t.TempDir(), "airlock.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(path, ""); err == nil || !strings.Contains(err.Error(), "unresolved TODO") {
		t.Fatalf("an escaped TODO: %v, want it reported as an unresolved TODO", err)
	}
}
