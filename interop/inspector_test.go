package interop

// The MCP Inspector's CLI (@modelcontextprotocol/inspector, pinned in
// package.json) against `airlock serve --demo`, over stdio, streamable
// HTTP and SSE, in the protocol eras the Inspector offers (--protocol-era
// legacy, auto, modern): what a user running the Inspector sees. The
// Inspector declares node >=22.19; it runs on the Node 20 these tests use
// (npm ci warns EBADENGINE).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// inspectorPackage is the Inspector's npm package; package.json pins its
// version and requireInspector insists node_modules holds that one.
const inspectorPackage = "@modelcontextprotocol/inspector"

// airlockTools are the tools `airlock serve --demo` offers.
var airlockTools = []string{"commit_bulk_action", "describe_resources", "get_operation", "get_selection", "preview_selection", "search_all"}

// searchArgs is a search_all over the demo's subscriptions that covers its
// whole scope (max_items 0: counts and groups, no items, so no response
// limit cuts it), given as a user gives them: --tool-arg key=value, the
// Inspector decoding JSON values.
var searchArgs = []string{"--tool-name", "search_all", "--tool-arg",
	"resource=subscriptions", `filter={"status":"past_due"}`, `group_by=["region"]`, "max_items=0"}

// TestInspectorCLI_ListsAndCallsOnEveryTransport runs the Inspector CLI's
// tools/list (with --strict: no schema portability error) and a search_all
// call over stdio, streamable HTTP and SSE, in the legacy era (the CLI's
// default) and the modern one (protocol 2026-07-28) where airlock serves
// it; on SSE, which serves only the earlier protocols, the auto era must
// fall back to initialize. Which era each run really used is checked on
// the wire: over HTTP by the requests a recording proxy saw, over stdio by
// the serverInfo a 2026-07-28 result carries in _meta.
func TestInspectorCLI_ListsAndCallsOnEveryTransport(t *testing.T) {
	t.Parallel()
	in := requireInspector(t)
	bin := buildAirlock(t)

	t.Run("stdio", func(t *testing.T) {
		for _, era := range []string{"legacy", "modern"} {
			t.Run(era, func(t *testing.T) {
				target := []string{"--", bin, "serve", "--demo", "--store", filepath.Join(t.TempDir(), "airlock.db")}
				checkToolsList(t, in.run(t, era, "tools/list", nil, target...))
				checkSearch(t, era == "modern", in.run(t, era, "tools/call", searchArgs, target...))
			})
		}
	})

	base := strings.TrimSuffix(startHTTPServer(t, bin), "/mcp")
	for _, c := range []struct {
		transport, path string
		eras            []string
	}{
		{"http", "/mcp", []string{"legacy", "modern"}},
		{"sse", "/sse", []string{"legacy", "auto"}},
	} {
		name := map[string]string{"http": "streamable_http", "sse": "sse"}[c.transport]
		t.Run(name, func(t *testing.T) {
			for _, era := range c.eras {
				t.Run(era, func(t *testing.T) {
					rec := startRecorder(t, base)
					target := []string{"--transport", c.transport, "--server-url", rec.url + c.path}
					modern := era == "modern"

					checkToolsList(t, in.run(t, era, "tools/list", nil, target...))
					checkEra(t, era, rec.take())
					checkSearch(t, modern, in.run(t, era, "tools/call", searchArgs, target...))
					checkEra(t, era, rec.take())
				})
			}
		})
	}
}

// TestInspectorCLI_ModernEraOverSSEIsDeclinedAtConnect: protocol 2026-07-28
// is defined over stdio and streamable HTTP only, and airlock declines it on
// SSE. The Inspector pinned to it must fail at connect with airlock's
// UnsupportedProtocolVersion (naming the versions SSE serves), having sent
// nothing but its first request: not connect and then fail every call with
// "header mismatch: Mcp-Method: missing required header", as it did before
// airlock declined the era.
func TestInspectorCLI_ModernEraOverSSEIsDeclinedAtConnect(t *testing.T) {
	t.Parallel()
	in := requireInspector(t)
	bin := buildAirlock(t)
	rec := startRecorder(t, strings.TrimSuffix(startHTTPServer(t, bin), "/mcp"))
	target := []string{"--transport", "sse", "--server-url", rec.url + "/sse"}

	for _, method := range []string{"tools/list", "tools/call"} {
		t.Run(strings.ReplaceAll(method, "/", "_"), func(t *testing.T) {
			var extra []string
			if method == "tools/call" {
				extra = searchArgs
			}
			r := in.run(t, "modern", method, extra, target...)
			if r.code != 1 || len(bytes.TrimSpace(r.stdout)) != 0 {
				t.Fatalf("want exit code 1 (an error, not a result) and nothing on stdout\n%s", r)
			}
			var out struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(lastLine(r.stderr), &out); err != nil {
				t.Fatalf("want the CLI's JSON error envelope as stderr's last line: %v\n%s", err, r)
			}
			want := mcp.UnsupportedProtocolVersionError{Version: mcp.ProtocolVersion20260728, Supported: mcp.LegacyProtocolVersions()}.Error()
			if out.Error.Code != "error" || out.Error.Message != want {
				t.Fatalf("error envelope = %+v, want code \"error\", message %q\n%s", out.Error, want, r)
			}
			for _, bad := range []string{"header mismatch", "Mcp-Method"} {
				if bytes.Contains(r.stderr, []byte(bad)) {
					t.Fatalf("stderr mentions %q: the era was not declined at connect\n%s", bad, r)
				}
			}
			sent := rec.take()
			if len(sent) != 1 || sent[0].method != "server/discover" || sent[0].version != mcp.ProtocolVersion20260728 {
				t.Fatalf("requests sent = %v, want only the 2026-07-28 server/discover (declined at connect, no %s)", sent, method)
			}
		})
	}
}

// inspector runs the Inspector CLI with node.
type inspector struct {
	node, bin, home string
}

// requireInspector returns the pinned Inspector in interop/node_modules, or
// skips (fails under AIRLOCK_REQUIRE_INTEROP=1) when node or it is missing,
// or node_modules holds another version than package.json pins.
func requireInspector(t *testing.T) inspector {
	t.Helper()
	const what = "Inspector CLI interop test"
	node := requireNodeFor(t, what)
	missing := func(reason string) { t.Helper(); unavailable(t, requireEnv, what, reason) }
	var pkg struct {
		Version      string            `json:"version"`
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile("package.json")
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		t.Fatalf("interop/package.json: %v", err)
	}
	pinned := pkg.Dependencies[inspectorPackage]
	if pinned == "" {
		t.Fatalf("interop/package.json does not depend on %s", inspectorPackage)
	}
	pkg.Version = ""
	b, err = os.ReadFile(filepath.Join("node_modules", filepath.FromSlash(inspectorPackage), "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil || pkg.Version != pinned {
		missing("interop/node_modules does not hold " + inspectorPackage + "@" + pinned + "; run `npm ci` in interop/")
	}
	bin := filepath.Join("node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		missing("interop/node_modules/.bin/mcp-inspector is missing; run `npm ci` in interop/")
	}
	t.Logf("%s %s", inspectorPackage, pkg.Version)
	return inspector{node: node, bin: bin, home: t.TempDir()}
}

// inspectorRun is one run of the CLI.
type inspectorRun struct {
	args           []string
	code           int
	stdout, stderr []byte
}

func (r inspectorRun) String() string {
	return "mcp-inspector " + strings.Join(r.args, " ") + "\nexit code: " + strconv.Itoa(r.code) +
		"\nstdout:\n" + string(r.stdout) + "\nstderr:\n" + string(r.stderr)
}

// run runs `mcp-inspector --cli --format json --protocol-era ERA --method
// METHOD [extra] TARGET...`, where TARGET selects the transport (for stdio,
// "--" and the server's command line). HOME is a directory of the test's
// own, so that neither the user's Inspector configuration nor its secret
// store takes part.
func (in inspector) run(t *testing.T, era, method string, extra []string, target ...string) inspectorRun {
	t.Helper()
	args := append([]string{"--cli", "--format", "json", "--protocol-era", era, "--method", method}, extra...)
	if method == "tools/list" {
		args = append(args, "--strict")
	}
	args = append(args, target...)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.node, append([]string{in.bin}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+in.home, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := inspectorRun{args: args}
	err := cmd.Run()
	r.stdout, r.stderr = stdout.Bytes(), stderr.Bytes()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	return r
}

// checkToolsList wants airlock's tools, and no error-severity schema
// portability finding (--strict exits 6 on one).
func checkToolsList(t *testing.T, r inspectorRun) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("tools/list: want exit code 0\n%s", r)
	}
	var out struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.stdout, &out); err != nil {
		t.Fatalf("tools/list: decode stdout: %v\n%s", err, r)
	}
	var names []string
	for _, tool := range out.Result.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, airlockTools) {
		t.Fatalf("tools/list: tools %v, want %v\n%s", names, airlockTools, r)
	}
}

// checkSearch wants searchArgs' search_all to succeed and cover its whole
// scope: complete, nothing to continue, and group counts that add up to
// the total matched. A 2026-07-28 result (modern) names the server in its
// _meta, which airlock (mcp-go) does for no earlier protocol: over stdio,
// that is what tells the eras apart.
func checkSearch(t *testing.T, modern bool, r inspectorRun) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("tools/call search_all: want exit code 0 (5 is a result with isError)\n%s", r)
	}
	var out struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Structured *struct {
				Status            string            `json:"status"`
				Complete          *bool             `json:"complete"`
				IncompleteReasons []json.RawMessage `json:"incomplete_reasons"`
				Continuation      struct {
					Kind string `json:"kind"`
				} `json:"continuation"`
				Scope struct {
					Resource string         `json:"resource"`
					Filter   map[string]any `json:"filter"`
				} `json:"scope"`
				Data struct {
					TotalMatched int `json:"total_matched"`
					Groups       map[string][]struct {
						Value string `json:"value"`
						Count int    `json:"count"`
					} `json:"groups"`
				} `json:"data"`
			} `json:"structuredContent"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.stdout, &out); err != nil {
		t.Fatalf("tools/call search_all: decode stdout: %v\n%s", err, r)
	}
	res := out.Result
	sc := res.Structured
	if res.IsError || sc == nil || sc.Complete == nil || !*sc.Complete || sc.Status != "complete" ||
		len(sc.IncompleteReasons) != 0 || sc.Continuation.Kind != "none" {
		t.Fatalf("tools/call search_all: want a result without isError whose structuredContent is complete, with no incomplete reason and nothing to continue\n%s", r)
	}
	if sc.Scope.Resource != "subscriptions" || sc.Scope.Filter["status"] != "past_due" {
		t.Fatalf("tools/call search_all: scope %+v is not the one asked for\n%s", sc.Scope, r)
	}
	sum := 0
	for _, g := range sc.Data.Groups["region"] {
		sum += g.Count
	}
	if sc.Data.TotalMatched == 0 || sum != sc.Data.TotalMatched {
		t.Fatalf("tools/call search_all: region groups add up to %d of %d matched\n%s", sum, sc.Data.TotalMatched, r)
	}
	if len(res.Content) == 0 || res.Content[0].Type != "text" || !json.Valid([]byte(res.Content[0].Text)) ||
		!strings.Contains(res.Content[0].Text, `"complete":true`) {
		t.Fatalf("tools/call search_all: want the envelope as JSON text content too\n%s", r)
	}
	var info struct {
		Name string `json:"name"`
	}
	raw, named := res.Meta["io.modelcontextprotocol/serverInfo"]
	if named && json.Unmarshal(raw, &info) != nil {
		t.Fatalf("tools/call search_all: _meta serverInfo %s is not an object\n%s", raw, r)
	}
	if modern && info.Name != "airlock" {
		t.Fatalf("tools/call search_all: a 2026-07-28 result must name airlock in _meta's serverInfo\n%s", r)
	}
	if !modern && named {
		t.Fatalf("tools/call search_all: an earlier protocol's result has a 2026-07-28 serverInfo in _meta\n%s", r)
	}
}

// checkEra wants the requests of one CLI run to be those of the era asked
// for: modern, each declaring 2026-07-28 and no initialize; legacy,
// initialize first and none declaring 2026-07-28; auto, on SSE, a
// 2026-07-28 server/discover that airlock declines, then initialize as in
// legacy.
func checkEra(t *testing.T, era string, sent []sentRequest) {
	t.Helper()
	t.Logf("requests sent: %v", sent)
	modern := func(s sentRequest) bool { return mcp.IsModernProtocol(s.version) }
	legacy := func(sent []sentRequest) bool {
		return len(sent) > 0 && sent[0].method == "initialize" && !slices.ContainsFunc(sent, modern)
	}
	switch era {
	case "modern":
		if len(sent) == 0 || slices.ContainsFunc(sent, func(s sentRequest) bool { return s.method == "initialize" || !modern(s) }) {
			t.Fatalf("requests %v: want every one declaring %s, and no initialize", sent, mcp.ProtocolVersion20260728)
		}
	case "auto":
		if len(sent) == 0 || sent[0].method != "server/discover" || !modern(sent[0]) || !legacy(sent[1:]) {
			t.Fatalf("requests %v: want a %s server/discover, then initialize and none declaring it", sent, mcp.ProtocolVersion20260728)
		}
	case "legacy":
		if !legacy(sent) {
			t.Fatalf("requests %v: want initialize first, and none declaring %s", sent, mcp.ProtocolVersion20260728)
		}
	default:
		t.Fatalf("unknown era %q", era)
	}
}

// sentRequest is a JSON-RPC request or notification the CLI sent, with the
// protocol version it declared: in _meta (2026-07-28), in initialize's
// params, else in the MCP-Protocol-Version header.
type sentRequest struct {
	method, version string
}

func (s sentRequest) String() string { return s.method + "@" + s.version }

// recorder is a reverse proxy in front of airlock's HTTP transports that
// records every JSON-RPC message with a method POSTed through it. SSE's
// endpoint event names a relative message URL, so the client's POSTs to
// /message come through the proxy too.
type recorder struct {
	url  string
	mu   sync.Mutex
	sent []sentRequest
}

func startRecorder(t *testing.T, base string) *recorder {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			rec.record(body, r.Header.Get("MCP-Protocol-Version"))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	rec.url = srv.URL
	return rec
}

func (rec *recorder) record(body []byte, header string) {
	type message struct {
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string    `json:"protocolVersion"` // initialize's
			Meta            *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	var msgs []message
	if json.Unmarshal(body, &msgs) != nil {
		var one message
		if json.Unmarshal(body, &one) != nil {
			return
		}
		msgs = []message{one}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, m := range msgs {
		if m.Method == "" {
			continue // a response to a request of airlock's
		}
		version := m.Params.Meta.ProtocolVersion()
		if version == "" && m.Method == "initialize" {
			version = m.Params.ProtocolVersion
		}
		if version == "" {
			version = header
		}
		rec.sent = append(rec.sent, sentRequest{m.Method, version})
	}
}

// take returns the requests recorded since the last take.
func (rec *recorder) take() []sentRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	sent := rec.sent
	rec.sent = nil
	return sent
}

// lastLine is b's last non-empty line.
func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}
