// Package interop checks airlock against the official TypeScript MCP SDK
// client (client.mjs), over stdio and streamable HTTP: the SDK must accept
// every tool's outputSchema and annotations and validate every result against
// them; (elicit.mjs) that a commit needing the user's approval asks for
// it through MCP elicitation; and (bigids.mjs) that an agent writes to
// exactly the records whose ids beyond 2^53 it was shown. The MCP Inspector's CLI (inspector_test.go) must
// list the tools and run a complete search_all over stdio, streamable HTTP
// and SSE, and be refused protocol 2026-07-28 on SSE cleanly at connect.
// It holds tests only and must never be imported.
//
// The tests skip when node or interop/node_modules is missing, unless
// AIRLOCK_REQUIRE_INTEROP=1 (set by CI), which turns the skip into a failure.
package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// requireEnv is the variable that makes missing prerequisites a failure.
const requireEnv = "AIRLOCK_REQUIRE_INTEROP"

func TestOfficialTypeScriptSDK_AcceptsSchemasAndValidatesResults(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	bin := buildAirlock(t)

	t.Run("stdio", func(t *testing.T) {
		runClient(t, node, "stdio", bin, "serve", "--demo", "--store", filepath.Join(t.TempDir(), "airlock.db"))
	})
	t.Run("streamable_http", func(t *testing.T) {
		url := startHTTPServer(t, bin)
		runClient(t, node, "http", url)
	})
}

// TestOfficialTypeScriptSDK_ApprovesThroughElicitation runs elicit.mjs: the
// SDK client, over stdio, against the demo's pause_collection, whose policy
// asks the user through the client. A client without the elicitation
// capability gets CLIENT_APPROVAL_UNAVAILABLE; one with it answers the
// server's elicitation/create (mcp-go's bridge of the input request for an
// older protocol): decline, cancel and accept without approve refuse the
// commit with nothing written, accept with approve runs it on exactly the
// previewed targets, and committing again returns that operation without
// asking again. The script starts one server per phase, each with a fresh
// store derived from the --store given here.
func TestOfficialTypeScriptSDK_ApprovesThroughElicitation(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	bin := buildAirlock(t)
	runScript(t, node, "elicit.mjs", "stdio", bin, "serve", "--demo", "--store", filepath.Join(t.TempDir(), "airlock.db"))
}

// requireNode returns the node executable, or skips (fails under
// AIRLOCK_REQUIRE_INTEROP=1) when node or the SDK is not installed.
// unavailable skips the test (what it is) because a tool it needs is
// missing, or fails it when env is 1: CI sets it, so that a missing tool
// never passes for a test that ran.
func unavailable(t testing.TB, env, what, reason string) {
	t.Helper()
	if os.Getenv(env) == "1" {
		t.Fatalf("%s, and %s=1 requires the %s", reason, env, what)
	}
	t.Skipf("skipping the %s: %s (set %s=1 to make this a failure)", what, reason, env)
}

func requireNode(t *testing.T) string {
	t.Helper()
	return requireNodeFor(t, "TypeScript SDK interop test")
}

// requireNodeFor is requireNode for the test named what.
func requireNodeFor(t testing.TB, what string) string {
	t.Helper()
	missing := func(reason string) { t.Helper(); unavailable(t, requireEnv, what, reason) }
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	sdk := filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json")
	if _, err := os.Stat(sdk); err != nil {
		missing("interop/node_modules/@modelcontextprotocol/sdk is missing; run `npm ci` in interop/")
	}
	return node
}

// buildAirlock builds cmd/airlock from the module root (the parent of this
// package's directory) into a temporary directory, once per test process:
// the tests that run the binary share it (none changes it), and linking it
// costs seconds each time.
func buildAirlock(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("go is not on PATH: %w", err)
			return
		}
		if err := trackInputs(".."); err != nil {
			built.err = fmt.Errorf("track the module's files: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "airlock-interop-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool, "build", "-o", filepath.Join(dir, "airlock"), "./cmd/airlock")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/airlock: %w\n%s", err, out)
			return
		}
		built.bin = filepath.Join(dir, "airlock")
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// built is the binary buildAirlock made, in dir (removed by TestMain).
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// trackInputs stats every file of the module (but .git and node_modules) so
// that go test's result cache, which sees only what this process touches,
// reruns the test when airlock's sources or the node scripts change; the binary and
// node read them in other processes.
func trackInputs(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while walking: someone is editing
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if _, err := os.Stat(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

// runClient runs client.mjs and fails with its whole output unless it exits 0
// with a summary that says ok.
func runClient(t *testing.T, node, mode, target string, serverArgs ...string) {
	t.Helper()
	runScript(t, node, "client.mjs", mode, target, serverArgs...)
}

// runScript runs one of this directory's node scripts (client.mjs,
// elicit.mjs: "node SCRIPT MODE TARGET [server args]") and fails with its
// whole output unless it exits 0 with a JSON summary that says ok.
func runScript(t *testing.T, node, script, mode, target string, serverArgs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script, mode, target}, serverArgs...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		t.Fatalf("node %s %s %s: %v\nstdout:\n%s\nstderr:\n%s", script, mode, target, err, stdout.Bytes(), stderr.Bytes())
	}
	var summary struct {
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &summary); err != nil || !summary.OK {
		t.Fatalf("node %s %s: want a JSON summary with ok=true on stdout (decode error: %v)\nstdout:\n%s\nstderr:\n%s", script, mode, err, stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("node %s %s: %s", script, mode, bytes.TrimSpace(stdout.Bytes()))
}

// startHTTPServer starts `airlock serve --demo --http` on a free loopback port
// and returns the /mcp URL once it answers. The server is stopped on cleanup;
// its log is shown if the test fails.
func startHTTPServer(t *testing.T, bin string, extra ...string) string {
	t.Helper()
	return startHTTPServerAt(t, bin, freeLoopbackAddr(t), extra...)
}

// startHTTPServerAt is startHTTPServer on addr, for flags that name it.
func startHTTPServerAt(t *testing.T, bin, addr string, extra ...string) string {
	t.Helper()
	var logBuf syncBuffer
	cmd := exec.Command(bin, append([]string{"serve", "--demo", "--http", addr, "--store", filepath.Join(t.TempDir(), "airlock.db")}, extra...)...)
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		// SIGTERM first so that the server shuts down its demo API too.
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			_ = cmd.Process.Kill()
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("airlock serve --http log:\n%s", logBuf.String())
		}
	})

	url := "http://" + addr + "/mcp"
	if err := waitForHTTP(t.Context(), url, exited, 30*time.Second); err != nil {
		select {
		case <-exited:
			err = fmt.Errorf("%w (server exited: %v)", err, waitErr)
		default:
		}
		t.Fatalf("airlock serve --http %s: %v", addr, err)
	}
	return url
}

// freeLoopbackAddr returns a loopback address whose port was free a moment
// ago, so that the URL is known before the server starts (with :0 it would
// only appear in the server's log).
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on a free port: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatalf("close probe listener: %v", err)
	}
	return addr
}

// waitForHTTP polls url with HEAD until any HTTP response arrives, the
// process exits, or the timeout passes. A HEAD on /mcp may hold the stream
// open, so each attempt is cancelled as soon as the headers are in.
func waitForHTTP(ctx context.Context, url string, exited <-chan struct{}, timeout time.Duration) error {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("server exited before answering")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		req, err := http.NewRequestWithContext(attempt, http.MethodHead, url, nil)
		if err != nil {
			cancel()
			return fmt.Errorf("build probe request: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			cancel()
			return nil
		}
		cancel()
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no answer at %q within %s: %w", url, timeout, lastErr)
}

// syncBuffer is a bytes.Buffer safe to read while a child process writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimRight(b.buf.String(), "\n")
}
