package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
)

// child is an airlock server process serving streamable HTTP.
type child struct {
	cmd *exec.Cmd
	url string
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
	addr := freePort(t)
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--config", config, "--store", store, "--http", addr}, extra...)...)
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_AS_MAIN=1", fixtures.DemoTokenEnv+"="+fixtures.DefaultToken)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// The server's logs and its store never hold the credential it
		// was given, whatever it was doing when it stopped.
		noCredential(t, "the server's log", stderr.Bytes())
		for _, f := range []string{store, store + "-wal"} {
			if b, err := os.ReadFile(f); err == nil {
				noCredential(t, f, b)
			}
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("airlock did not start on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &child{cmd: cmd, url: "http://" + addr + "/mcp"}
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
	_, _ = c.cmd.Process.Wait()
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

func targetOutcomes(t *testing.T, c *client.Client, opID any) (map[string]string, string) {
	t.Helper()
	out := map[string]string{}
	args := map[string]any{"operation_id": opID, "page_size": 500}
	var status string
	for {
		d := callData(t, c, "get_operation", args)
		status = d["status"].(string)
		for _, r := range d["results"].([]any) {
			m := r.(map[string]any)
			out[m["id"].(string)] = m["outcome"].(string)
		}
		cur, _ := d["results_cursor"].(string)
		if cur == "" {
			return out, status
		}
		args["cursor"] = cur
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

// TestCrash_KilledMidCommitResumesWithoutWritingTwice kills airlock with
// SIGKILL at random points of a commit, 20 seeded trials over three
// actions (an idempotency key, an If-Match condition, a re-read). After a
// restart and resume: no target was written twice, each target has exactly
// one outcome, a target pending at the kill was never sent, and unknown
// appears only for writes that were in flight at the kill.
func TestCrash_KilledMidCommitResumesWithoutWritingTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("crash trials spawn processes; skipped with -short")
	}
	type actionCase struct {
		dataset string
		preview map[string]any
		keyed   bool // a retry cannot apply twice (key or condition)
		// operator: the action needs an operator's approval (archive);
		// pause_collection asks the client, whose user approves.
		operator bool
	}
	actions := []actionCase{
		{fixtures.DatasetSubscriptions, map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"},
			"action": map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}}, true, false},
		{fixtures.DatasetProjects, map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive", "owner": "team-growth"},
			"action": map[string]any{"type": "archive"}}, true, true},
		// The demo credential sees a restricted view, so a scope selection of
		// ownerless accounts is never committable: name them explicitly.
		{fixtures.DatasetServiceAccounts, map[string]any{"resource": "service_accounts", "ids": ownerless(60),
			"action": map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}}, false, false},
	}
	rng := rand.New(rand.NewPCG(20261202, 1))
	for trial := 0; trial < 20; trial++ {
		ac := actions[trial%len(actions)]
		killAfter := time.Duration(rng.IntN(300)) * time.Millisecond
		t.Run(fmt.Sprintf("trial-%02d-%s-kill-%s", trial, ac.preview["resource"], killAfter), func(t *testing.T) {
			api := &fixtures.Server{}
			api.SetWriteFaults(ac.dataset, fixtures.WriteFaults{Latency: 8 * time.Millisecond})
			apiSrv := httptest.NewServer(api)
			defer apiSrv.Close()
			dir := t.TempDir()
			config := filepath.Join(dir, "airlock.yaml")
			if err := os.WriteFile(config, fixtures.DemoConfig(apiSrv.URL), 0o600); err != nil {
				t.Fatal(err)
			}
			store := filepath.Join(dir, "airlock.db")

			first := startChild(t, config, store)
			c := connect(t, first.url)
			p := callData(t, c, "preview_selection", ac.preview)
			members := int(p["counts"].(map[string]any)["members"].(float64))
			if members < 10 {
				t.Fatalf("a trial needs targets: %d", members)
			}
			if ac.operator {
				operatorApproves(t, config, store, p)
			}
			commit := map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": ac.preview["action"], "mode": "execute", "wait_ms": 0}
			op := callData(t, c, "commit_bulk_action", commit)
			time.Sleep(killAfter)
			first.kill()
			c.Close()
			atKill := writesPerTarget(api)

			second := startChild(t, config, store)
			c2 := connect(t, second.url)
			defer c2.Close()
			before, status := targetOutcomes(t, c2, op["operation_id"])
			if status == "running" {
				t.Fatal("after a restart no operation is still running")
			}
			inFlight := map[string]bool{}
			for id, o := range before {
				switch o {
				case "unknown":
					inFlight[id] = true
				case "pending":
					if atKill[id] != 0 {
						t.Fatalf("%s is pending but was sent %d time(s): the intent was not journaled before the write", id, atKill[id])
					}
				case "succeeded":
					if api.Applied(ac.dataset, id) != 1 {
						t.Fatalf("%s succeeded but was applied %d times", id, api.Applied(ac.dataset, id))
					}
				case "in_flight":
					t.Fatalf("%s still in flight after recovery", id)
				}
			}

			commit["resume"] = true
			commit["wait_ms"] = 30000
			callData(t, c2, "commit_bulk_action", commit)
			after, status := targetOutcomes(t, c2, op["operation_id"])
			if status == "running" || status == "interrupted" {
				t.Fatalf("resume did not finish: %s", status)
			}
			if len(after) != members {
				t.Fatalf("%d targets, want %d", len(after), members)
			}
			for id, o := range after {
				applied := api.Applied(ac.dataset, id)
				if applied > 1 {
					t.Fatalf("%s written %d times", id, applied)
				}
				switch o {
				case "succeeded":
					if applied != 1 {
						t.Fatalf("%s succeeded but applied %d times", id, applied)
					}
				case "unknown":
					if !inFlight[id] || ac.keyed {
						t.Fatalf("%s unknown after resume (in flight at kill: %v, safe retry: %v)", id, inFlight[id], ac.keyed)
					}
				default:
					t.Fatalf("%s ended %s", id, o)
				}
			}
		})
	}
}
