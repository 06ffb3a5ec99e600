package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
)

// TestServeConfigOrDemo_ABlankSettingServesTheDemoAndAFileItsAPI: an MCP
// Bundle passes its optional configuration as --config-or-demo=VALUE, and
// a setting left blank arrives as an empty VALUE. Empty serves the demo;
// a file serves that configuration (never the demo, even when the file is
// missing); and the flag stands alone.
func TestServeConfigOrDemo_ABlankSettingServesTheDemoAndAFileItsAPI(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(&fixtures.Server{})
	t.Cleanup(api.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "airlock.yaml")
	yaml := strings.Replace(string(fixtures.DemoConfig(api.URL)), "environment: demo", "environment: billing-prod", 1)
	if !strings.Contains(yaml, "environment: billing-prod") {
		t.Fatal("the demo configuration no longer names its environment: the test cannot tell it from the demo")
	}
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AIRLOCK_TEST_AS_MAIN=1", "XDG_STATE_HOME=" + t.TempDir(), envStore + "=", fixtures.DemoTokenEnv + "=" + fixtures.DefaultToken}

	for _, c := range []struct {
		arg, environment string
	}{
		{"--config-or-demo=", "demo"},
		{"--config-or-demo=" + cfg, "billing-prod"},
	} {
		if got := environmentServed(t, env, c.arg); got != c.environment {
			t.Errorf("serve %s answers for environment %q, want %q", c.arg, got, c.environment)
		}
	}
}

// TestServeConfigOrDemo_StandsAloneAndNeverFallsBackOnAMissingFile: the
// flag with --config or --demo is a wrong command line, and a file that
// cannot be read is an error, not the demo.
func TestServeConfigOrDemo_StandsAloneAndNeverFallsBackOnAMissingFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "airlock.yaml")
	if err := os.WriteFile(cfg, fixtures.DemoConfig("https://api.example.com"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv(envStore, "")
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"serve", "--config-or-demo=", "--demo"}, exitUsage, "use --config-or-demo alone"},
		{[]string{"serve", "--config-or-demo", cfg, "--config", cfg}, exitUsage, "use --config-or-demo alone"},
		{[]string{"serve", "--config-or-demo", filepath.Join(dir, "missing.yaml")}, exitFailure, "read config"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, strings.NewReader(""), &out, &errb); code != c.code || !strings.Contains(errb.String(), c.stderr) {
			t.Errorf("airlock %s: exit %d, want %d with %q\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, c.stderr, errb.String())
		}
	}
}

// environmentServed starts airlock serve ARG over stdio and returns the
// environment a search_all answers for.
func environmentServed(t *testing.T, env []string, arg string) string {
	t.Helper()
	c, err := client.NewStdioMCPClient(os.Args[0], env, "serve", arg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("serve %s: %v", arg, err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "search_all"
	req.Params.Arguments = map[string]any{"resource": "subscriptions", "max_items": 1}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("serve %s: search_all: %v", arg, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	scope, _ := sc["scope"].(map[string]any)
	environment, _ := scope["environment"].(string)
	if res.IsError || environment == "" {
		t.Fatalf("serve %s: search_all answered no scope: %s", arg, mustJSON(sc))
	}
	return environment
}

// TestVersion_AReleaseNamesTheCommitItWasLinkedWith: a release binary
// (built from an export, without version control information) names the
// commit and date scripts/release linked into it, and says nothing of the
// "(devel)" module version the go command recorded.
func TestVersion_AReleaseNamesTheCommitItWasLinkedWith(t *testing.T) {
	bi := fromBuildInfo(nil).stamped("f703f3d8c1e25b2a", "2026-12-02T19:18:00Z")
	bi.Module = "(devel)"
	got := bi.String()
	if !strings.Contains(got, "commit:  f703f3d8c1e25b2a (2026-12-02T19:18:00Z)\n") || strings.Contains(got, "module:") || strings.Contains(got, "uncommitted") {
		t.Errorf("a release:\n%s", got)
	}
	if !bi.Release {
		t.Error("a release build is not marked as one")
	}
	if plain := fromBuildInfo(nil).stamped("", ""); plain.Release || plain.Commit != "" {
		t.Errorf("a build without the release stamp: %+v", plain)
	}
}
