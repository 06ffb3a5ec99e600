package interop

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
)

// TestOfficialTypeScriptSDK_IDsBeyond2To53_WriteExactlyTheRecordsTheAgentWasShown
// runs bigids.mjs: the SDK client, over stdio, against airlock serving the
// Snowflakes API, whose ids near 2^53 and 2^63 are JSON numbers beside the
// neighbours a double confuses them with. The agent picks four records by
// name and sends back the ids the SDK handed it, to a filter, a preview
// and a commit; the upstream must see writes to exactly those records'
// ids, and none to a neighbour (9007199254740993 read as …992, and
// 9223372036854775001 as …775000, are records too).
func TestOfficialTypeScriptSDK_IDsBeyond2To53_WriteExactlyTheRecordsTheAgentWasShown(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	bin := buildAirlock(t)
	flakes := &fixtures.Snowflakes{}
	srv := httptest.NewServer(flakes)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "snowflakes.yaml")
	if err := os.WriteFile(cfg, fixtures.SnowflakesConfig(srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "bigids.mjs", "stdio", bin, "serve", "--config", cfg, "--store", filepath.Join(dir, "airlock.db"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	// The records bigids.mjs picks: flake-1, flake-3, flake-5, flake-11.
	want := []string{fixtures.SnowflakeIDs[1], fixtures.SnowflakeIDs[3], fixtures.SnowflakeIDs[5], fixtures.SnowflakeIDs[11]}
	if got := slices.Sorted(slices.Values(flakes.Written())); !slices.Equal(got, want) {
		t.Errorf("the upstream saw writes to %q, want exactly %q", got, want)
	}
	if runErr != nil {
		t.Fatalf("node bigids.mjs: %v\nstdout:\n%s\nstderr:\n%s", runErr, stdout.Bytes(), stderr.Bytes())
	}
	if n := flakes.Unknown(); n > 0 {
		t.Errorf("%d requests on routes the Snowflakes API does not serve", n)
	}
	t.Logf("node bigids.mjs: %s", bytes.TrimSpace(stdout.Bytes()))
}
