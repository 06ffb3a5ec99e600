package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

// child is an airlock server process serving streamable HTTP.
type child struct {
	cmd    *exec.Cmd
	url    string
	log    *syncBuffer
	exited chan struct{}
	state  *os.ProcessState // set once exited is closed
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func startChild(t *testing.T, config, store string, extra ...string) *child {
	t.Helper()
	return startChildEnv(t, config, store, nil, extra...)
}

// startChildEnv starts a server with env added to its environment.
func startChildEnv(t *testing.T, config, store string, env []string, extra ...string) *child {
	t.Helper()
	args := append([]string{"--config", config, "--store", store}, extra...)
	c := serveProcess(t, append(env, fixtures.DemoTokenEnv+"="+fixtures.DefaultToken), args...)
	t.Cleanup(func() {
		// The server's logs and its store never hold the credential it
		// was given, whatever it was doing when it stopped.
		noCredential(t, "the server's log", c.log.Bytes())
		for _, f := range []string{store, store + "-wal"} {
			if b, err := os.ReadFile(f); err == nil {
				noCredential(t, f, b)
			}
		}
	})
	return c
}

// mcpURLInLog is the MCP endpoint a server logs once it listens.
var mcpURLInLog = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/mcp`)

// serveProcess starts `airlock serve --http 127.0.0.1:0` as a real process
// with env and args, and waits until it logs (to stderr, or to --log-file)
// the address the kernel gave it, so that servers started at once never
// race for a port. The process
// is killed when the test ends.
func serveProcess(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], append(append([]string{"serve"}, args...), "--http", "127.0.0.1:0")...)
	cmd.Env = append(append(os.Environ(), "AIRLOCK_TEST_AS_MAIN=1"), env...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, log: stderr, exited: make(chan struct{})}
	cmd.WaitDelay = 10 * time.Second
	go func() {
		// The child is reaped here, once: its state says how it ended.
		// cmd.Wait, unlike the process's own Wait, returns only once its
		// stderr has been copied to the end, so a test that reads the log
		// after the exit reads the last lines the server wrote.
		_ = cmd.Wait()
		c.state = cmd.ProcessState
		close(c.exited)
	}()
	exited := c.exited
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	logFile := ""
	for i, a := range args {
		if a == "--log-file" && i+1 < len(args) {
			logFile = args[i+1]
		}
	}
	logged := func() []byte {
		if logFile != "" {
			b, _ := os.ReadFile(logFile)
			return b
		}
		return stderr.Bytes()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if url := mcpURLInLog.Find(logged()); url != nil {
			c.url = string(url)
			return c
		}
		select {
		case <-exited:
			t.Fatalf("airlock exited before it listened: %s", stderr.Bytes())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("airlock did not start listening: %s", stderr.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a child's stderr, readable while the child writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// noCredential fails the test when b holds the demo API's credential.
func noCredential(t *testing.T, what string, b []byte) {
	t.Helper()
	if bytes.Contains(b, []byte(fixtures.DefaultToken)) {
		t.Errorf("the credential leaked into %s", what)
	}
}

func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// addr is the host:port the child listens on.
func (c *child) addr() string {
	return strings.TrimSuffix(strings.TrimPrefix(c.url, "http://"), "/mcp")
}

// approveAll plays a user who approves every request the client shows.
type approveAll struct{}

func (approveAll) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"approve": true, "acknowledge": true}}}, nil
}

// connect starts an MCP client whose user approves what it is asked.
func connect(t *testing.T, url string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithElicitationHandler(approveAll{}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "crash-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

func callData(t *testing.T, c *client.Client, tool string, args map[string]any) map[string]any {
	t.Helper()
	var env struct {
		Data    map[string]any `json:"data"`
		Problem any            `json:"problem"`
	}
	_ = json.Unmarshal([]byte(callTool(t, c, tool, args)), &env)
	if env.Problem != nil {
		t.Fatalf("%s: problem %v", tool, env.Problem)
	}
	return env.Data
}

// ownerless returns n service accounts without an owner that the demo
// credential can see.
func ownerless(n int) []any {
	var out []any
	for _, r := range fixtures.ServiceAccounts() {
		if r["owner"] == nil && r["_hidden"] != true && len(out) < n {
			out = append(out, r["id"])
		}
	}
	return out
}

// writesPerTarget counts write requests per target id at the fixture.
func writesPerTarget(api *fixtures.Server) map[string]int {
	out := map[string]int{}
	for _, w := range api.Writes() {
		parts := strings.Split(strings.Trim(w.Path, "/"), "/")
		if len(parts) >= 3 {
			out[parts[2]]++
		}
	}
	return out
}

func targetOutcomes(t *testing.T, c *client.Client, opID any) (map[string]selection.Outcome, string) {
	t.Helper()
	// The pages of a running operation are read at different moments: a
	// set of pages is one view only when every page reports the same
	// status (an operation that ended changes no target again).
	for {
		out := map[string]selection.Outcome{}
		args := map[string]any{"operation_id": opID, "page_size": 500}
		statuses := map[string]bool{}
		var status string
		for {
			d := callData(t, c, "get_operation", args)
			status = d["status"].(string)
			statuses[status] = true
			for _, r := range d["results"].([]any) {
				m := r.(map[string]any)
				out[m["id"].(string)] = selection.Outcome(m["outcome"].(string))
			}
			cur, _ := d["results_cursor"].(string)
			if cur == "" {
				break
			}
			args["cursor"] = cur
		}
		if len(statuses) == 1 {
			return out, status
		}
	}
}

// operatorApproves approves a selection as an operator would, with the CLI
// in its own process, on the store the server is using.
func operatorApproves(t *testing.T, config, store string, sel map[string]any) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "approve", sel["selection_id"].(string), "--yes", sel["digest"].(string), "--store", store, "--config", config)
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_AS_MAIN=1", fixtures.DemoTokenEnv+"="+fixtures.DefaultToken)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("airlock approve: %v\n%s", err, out)
	}
}
