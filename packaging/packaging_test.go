// Package packaging checks airlock as users install it: the release that
// scripts/release builds (archives, SHA256SUMS, SBOMs, MCP Bundles, the OCI
// image and server.json), the bundle's manifest as a host reads it, and the
// registration snippets of the README, each started the way its host would
// start it and driven by the official TypeScript MCP SDK client
// (mcpclient.mjs). It holds tests only and must never be imported.
//
// The tests skip when node, interop/node_modules (npm ci in interop/) or
// packaging/node_modules (npm ci in packaging/) is missing, unless
// AIRLOCK_REQUIRE_RELEASE=1 (set by CI), which turns the skip into a
// failure. The tests of a release read the one in AIRLOCK_RELEASE_DIR (all
// six platforms, as scripts/release builds it by default); with
// AIRLOCK_TEST_HEAVY=1 and no AIRLOCK_RELEASE_DIR they build one for this
// machine's platform.
package packaging

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// requireEnv is the variable that makes missing prerequisites a failure.
const requireEnv = "AIRLOCK_REQUIRE_RELEASE"

// unavailable skips the test because something it needs is missing, or
// fails it under AIRLOCK_REQUIRE_RELEASE=1.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("%s, and %s=1 requires it", reason, requireEnv)
	}
	t.Skipf("skipping: %s (set %s=1 to make this a failure)", reason, requireEnv)
}

// requireNode returns node, having checked that the official MCP SDK
// (interop/node_modules) is installed.
func requireNode(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join("..", "interop", "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		unavailable(t, "the MCP SDK is missing: run npm ci in interop/")
	}
	return node
}

// requireMCPB returns the official MCPB CLI (packaging/node_modules).
func requireMCPB(t testing.TB) string {
	t.Helper()
	requireNode(t)
	mcpb, err := filepath.Abs(filepath.Join("node_modules", ".bin", "mcpb"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mcpb); err != nil {
		unavailable(t, "the MCPB CLI is missing: run npm ci in packaging/")
	}
	return mcpb
}

// buildAirlock builds cmd/airlock into a temporary directory.
func buildAirlock(t testing.TB) string {
	t.Helper()
	trackInputs(t)
	bin := filepath.Join(t.TempDir(), "airlock")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/airlock")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/airlock: %v\n%s", err, out)
	}
	return bin
}

// trackInputs stats the module's files (but .git and node_modules), so that
// go test's cache, which sees only what this process opens, reruns the
// tests when what the binary, the scripts or the README say changes.
func trackInputs(t testing.TB) {
	t.Helper()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			if _, err := os.Stat(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// launch is how a host starts a server: a command, its arguments and the
// environment it adds.
type launch struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Call    *toolCall         `json:"call,omitempty"`
}

type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// clientResult is what mcpclient.mjs prints.
type clientResult struct {
	OK     bool `json:"ok"`
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Tools  []string       `json:"tools"`
	Answer map[string]any `json:"answer"`
	// FirstAnswerMS is the time from starting the server to its answer.
	FirstAnswerMS int `json:"first_answer_ms"`
}

// environment is the environment an answer's scope names.
func (r clientResult) environment() string {
	scope, _ := r.Answer["scope"].(map[string]any)
	env, _ := scope["environment"].(string)
	return env
}

// runClient starts l with the official SDK client (mcpclient.mjs), under
// the process environment env (nil: this process's, with HOME moved to a
// temporary directory, where the default store then lives).
func runClient(t testing.TB, node string, l launch, env []string) clientResult {
	t.Helper()
	spec, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("mcpclient.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if env == nil {
		env = append(os.Environ(), "HOME="+t.TempDir())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, string(spec))
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the SDK client could not use %s %s: %v\n%s", l.Command, strings.Join(l.Args, " "), err, stderr.Bytes())
	}
	var r clientResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || !r.OK {
		t.Fatalf("mcpclient.mjs printed %q (%v)\n%s", stdout.Bytes(), err, stderr.Bytes())
	}
	sort.Strings(r.Tools)
	return r
}

// searchSubscriptions asks for one subscription: the demo and the
// configurations the tests write all have the resource.
var searchSubscriptions = &toolCall{Name: "search_all", Arguments: map[string]any{"resource": "subscriptions", "max_items": 1}}

// allTools and readTools are what airlock offers with a configuration that
// has actions, and read-only.
var (
	allTools  = []string{"commit_bulk_action", "describe_resources", "get_operation", "get_selection", "preview_selection", "search_all"}
	readTools = []string{"describe_resources", "get_operation", "get_selection", "search_all"}
)
