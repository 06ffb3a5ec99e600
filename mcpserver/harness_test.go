package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/redact/leaktest"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/telemetry"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// harness is a fixture API, airlock over streamable HTTP, and a real MCP
// client connected to it. Every result it sees is validated against the
// output schema the tool advertised in tools/list.
type harness struct {
	// answer is how the user answers an approval request shown by the
	// client: accept (approve and acknowledge), decline or cancel.
	answer  *answerer
	t       testing.TB
	api     *fixtures.Server
	apiURL  string
	deps    *tools.Deps
	client  *client.Client
	schemas map[string]*envelope.Validator
	// textDefaults are each tool's TextDefaults, read once.
	textDefaults func() map[string][]envelope.TextDefault
	// noElicitation: the client does not declare elicitation.
	noElicitation bool
	// apps: the client declares MCP Apps.
	apps bool
	// tasksClient: the client declares the Tasks extension.
	tasksClient bool
	// transport and protocol are how the client connects: streamable
	// HTTP ("http", the default), "sse" or "stdio", at a pinned protocol
	// version (default: the client's newest).
	transport, protocol string
	// initialized is the server's answer to the client's initialize.
	initialized *mcp.InitializeResult
	// url is the HTTP server's base URL (streamable HTTP only).
	url string
	// logs is everything airlock logged, as JSON lines.
	logs *tooltest.SyncBuffer
	// dbPath is the store's SQLite file.
	dbPath string
	// build makes another airlock process on the same store, its
	// configuration changed by with (another secret, another runtime).
	build func(with ...func(*tools.Config)) *tools.Deps
	// observers and tasks are the server's options; srv is the server
	// the client is connected to.
	observers []Observer
	tasks     *TaskOptions
	srv       *Server
	notesMu   sync.Mutex
	notes     []mcp.JSONRPCNotification
}

// progressNotes returns the progress notifications received for token.
func (h *harness) progressNotes(token string) []map[string]any {
	h.notesMu.Lock()
	defer h.notesMu.Unlock()
	var out []map[string]any
	for _, n := range h.notes {
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == token {
			out = append(out, n.Params.AdditionalFields)
		}
	}
	return out
}

type harnessOpt func(*harnessCfg)

type harnessCfg struct {
	config func(baseURL string) []byte
	getenv func(string) string
	clock  upstream.Clock
	// noElicitation connects a client that cannot show approval requests.
	noElicitation bool
	// apps connects a client that declares MCP Apps (it renders views).
	apps      bool
	transport string
	protocol  string
	// metrics and tracing, when set, observe the server and its upstream;
	// newMetrics, when set, builds the metrics from the configuration.
	metrics    *telemetry.Metrics
	newMetrics func(*config.Config) *telemetry.Metrics
	tracing    *telemetry.Tracing
	// tools choose the tools offered; progressInterval paces progress;
	// fingerprint, when set, replaces the credentials' fingerprint in the
	// memory of failed calls.
	tools            tools.Options
	progressInterval time.Duration
	fingerprint      func() string
	// tasks serves tasks; tasksClient has the harness's raw task requests
	// (taskRPC) declare the extension (the mcp-go client itself never
	// does: its CallTool cannot read a task).
	tasks, tasksClient bool
	// wrapStore, when set, stands between the tools and the store.
	wrapStore func(selection.Store) selection.Store
}

// withTasks serves tasks (Options.Tasks), to a client that declares the
// Tasks extension when optIn is true.
func withTasks(optIn bool) harnessOpt {
	return func(h *harnessCfg) { h.tasks, h.tasksClient = true, optIn }
}

// withTransport connects the client over transport ("http", "sse" or
// "stdio") at protocol version ("" for the client's newest).
func withTransport(transport, protocol string) harnessOpt {
	return func(h *harnessCfg) { h.transport, h.protocol = transport, protocol }
}

// withStore puts wrap between the tools and the store (a store that fails).
func withStore(wrap func(selection.Store) selection.Store) harnessOpt {
	return func(h *harnessCfg) { h.wrapStore = wrap }
}

// withTools chooses the tools offered.
func withTools(o tools.Options) harnessOpt { return func(h *harnessCfg) { h.tools = o } }

// withProgressInterval paces progress reports.
func withProgressInterval(d time.Duration) harnessOpt {
	return func(h *harnessCfg) { h.progressInterval = d }
}

func withoutElicitation() harnessOpt { return func(h *harnessCfg) { h.noElicitation = true } }

// withApps connects a client that declares MCP Apps: it renders the
// approval view.
func withApps() harnessOpt { return func(h *harnessCfg) { h.apps = true } }

// withClock runs the tools on c, and has the upstream read its time from c
// (a token's expiry, the end of an upstream's Retry-After) while it waits
// on the wall clock (see readsOnly).
func withClock(c upstream.Clock) harnessOpt { return func(h *harnessCfg) { h.clock = c } }

// readsOnly is a clock that tells c's time and waits in real time. The
// upstream's waits inside one call (a retry's backoff of a few
// milliseconds, a short Retry-After slept through) happen while the test
// is blocked in that call, where nothing could advance a fake clock; what
// the tests move by hand is the time between calls.
type readsOnly struct {
	upstream.Clock
	clock.Real
}

func (r readsOnly) Now() time.Time { return r.Clock.Now() }
func (r readsOnly) NewTimer(d time.Duration) clock.Timer {
	return r.Real.NewTimer(d)
}
func (r readsOnly) NewTicker(d time.Duration) clock.Ticker {
	return r.Real.NewTicker(d)
}
func (r readsOnly) AfterFunc(d time.Duration, f func()) clock.Timer {
	return r.Real.AfterFunc(d, f)
}

// newFakeClock is a clock the test moves by hand, starting at the wall
// clock's now (the fixture and the store stamp what they keep with it).
func newFakeClock() *clocktest.Fake { return clocktest.New(time.Now()) }

func withConfig(f func(baseURL string) []byte) harnessOpt {
	return func(c *harnessCfg) { c.config = f }
}

func withResources(rs ...fixtures.Resource) harnessOpt {
	return withConfig(func(u string) []byte { return fixtures.Config(u, rs...) })
}

func withEnv(f func(string) string) harnessOpt { return func(c *harnessCfg) { c.getenv = f } }

// The suite's credentials are canaries: no tool result, problem, log line
// or stored row may ever contain them (the harness checks every one).
const (
	canaryToken = tooltest.CanaryToken
	canaryAdmin = tooltest.CanaryAdmin
	// canaryClientSecret is an OAuth client's secret, and every access
	// token issued to it starts with canaryAccess.
	canaryClientSecret = "cnry-5e7b20d4-client-secret"
	canaryAccess       = "cnry-a40c9f16-access-token"
)

func testEnv(k string) string {
	if k == fixtures.DemoTokenEnv {
		return canaryAdmin
	}
	return ""
}

// newFixture is the demo API with the canary credentials.
func newFixture(t testing.TB) *fixtures.Server {
	return &fixtures.Server{Token: canaryToken, AdminToken: canaryAdmin,
		OnUnknownRoute: func(m, p string) { t.Errorf("fixture: unexpected %s %s", m, p) }}
}

// leaks fails the test when b holds a canary credential in any form a
// reader could decode (raw, split, escaped, base64, containers nested in
// each other), tooltest.CursorAPIKey among them.
func leaks(t testing.TB, what string, b []byte) {
	t.Helper()
	for _, hits := range leaktest.Find(b, canaryToken, canaryAdmin, canaryClientSecret, canaryAccess, tooltest.CursorAPIKey) {
		if len(hits) > 0 {
			t.Fatalf("the credential leaked into %s (%v)", what, hits)
		}
	}
}

func newHarness(t testing.TB, opts ...harnessOpt) *harness {
	t.Helper()
	cfg := harnessCfg{config: fixtures.DemoConfig, getenv: func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return canaryToken
		}
		return ""
	}}
	for _, o := range opts {
		o(&cfg)
	}
	api := newFixture(t)
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	var logs, auditLog tooltest.SyncBuffer
	c, err := config.Parse(cfg.config(apiSrv.URL))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.newMetrics != nil {
		cfg.metrics = cfg.newMetrics(c)
	}
	var upClock upstream.Clock
	if cfg.clock != nil {
		upClock = readsOnly{Clock: cfg.clock}
	}
	upOpts := upstream.Options{Getenv: cfg.getenv, Clock: upClock, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		WrapTransport: telemetry.WrapTransport(cfg.metrics, cfg.tracing)}
	if cfg.metrics != nil {
		upOpts.ObserveScan = cfg.metrics.ObserveScan
	}
	rt, err := upstream.Initialize(context.Background(), c, upOpts)
	if err != nil {
		t.Fatal(err)
	}
	dbDir := t.TempDir()
	store, err := sqlitestore.Open(context.Background(), filepath.Join(dbDir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	bg, stop := context.WithCancel(context.Background())
	dbPath := filepath.Join(dbDir, "airlock.db")
	var built []*tools.Deps
	t.Cleanup(func() {
		stop()
		for _, d := range built {
			d.Engine.Wait()
		}
		store.Close()
		// Nothing airlock logged or stored may hold the credential.
		leaks(t, "the logs", logs.Bytes())
		leaks(t, "the audit log", auditLog.Bytes())
		if len(auditLog.Bytes()) == 0 && len(api.Writes()) > 0 {
			t.Error("writes reached the upstream but the audit log is empty")
		}
		for _, f := range []string{dbPath, dbPath + "-wal"} {
			if b, err := os.ReadFile(f); err == nil {
				leaks(t, "the store", b)
			}
		}
	})
	// The audit trail also goes to a JSON Lines writer, checked like the logs.
	auditor := selection.NewAuditor(&auditLog)
	var used selection.Store = store
	if cfg.wrapStore != nil {
		used = cfg.wrapStore(store)
	}
	// build is one airlock process on the store: the harness's first, and
	// another sharing the store (otherProcess).
	build := func(with ...func(*tools.Config)) *tools.Deps {
		c := tools.Config{Runtime: rt, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Clock: cfg.clock, Store: used, Background: bg, Auditor: auditor, Tools: cfg.tools,
			ProgressInterval: cfg.progressInterval, Fingerprint: cfg.fingerprint}
		if cfg.metrics != nil {
			c.Observer = cfg.metrics
		}
		if cfg.tasks {
			c.CancelPoll = 10 * time.Millisecond
		}
		for _, f := range with {
			f(&c)
		}
		deps, err := tools.New(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, deps)
		return deps
	}
	deps := build()
	h := &harness{t: t, api: api, apiURL: apiSrv.URL, deps: deps, build: build, schemas: map[string]*envelope.Validator{}, noElicitation: cfg.noElicitation, apps: cfg.apps,
		transport: cfg.transport, protocol: cfg.protocol, tasksClient: cfg.tasksClient, logs: &logs, dbPath: dbPath}
	if cfg.metrics != nil {
		h.observers = append(h.observers, cfg.metrics)
	}
	if cfg.tracing != nil {
		h.observers = append(h.observers, cfg.tracing)
	}
	if cfg.tasks {
		h.tasks = &TaskOptions{Background: bg, PollInterval: 20 * time.Millisecond, Beat: 20 * time.Millisecond}
	}
	h.textDefaults = sync.OnceValue(func() map[string][]envelope.TextDefault {
		m := map[string][]envelope.TextDefault{}
		for _, sp := range deps.Specs() {
			m[sp.Name] = sp.TextDefaults
		}
		return m
	})
	h.connect()
	return h
}

// server is a server of the harness's deps, with its observers and tasks.
func (h *harness) server() *Server {
	h.t.Helper()
	srv, err := NewServer(h.deps, Options{Observers: h.observers, Tasks: h.tasks})
	if err != nil {
		h.t.Fatal(err)
	}
	return srv
}

// handler is a tool's handler as the server runs it (tools.Spec.Run), for
// tests that hand it a call of their own.
func (h *harness) handler(tool string) func(context.Context, *tools.Call) *envelope.Envelope {
	h.t.Helper()
	for _, s := range h.deps.Specs() {
		if s.Name == tool {
			return s.Run
		}
	}
	h.t.Fatalf("no tool %q", tool)
	return nil
}

// stdioInUse is held by the stdio harness running, one at a time (connect).
var stdioInUse sync.Mutex

func (h *harness) connect() {
	t := h.t
	srv := h.server()
	h.srv = srv
	var err error
	var tr transport.Interface
	switch h.transport {
	case "stdio":
		// mcp-go serves stdio through one session for the whole process
		// (a process has one stdin): two stdio servers running at once in
		// this test binary would share its writer and its pending
		// requests, and answer each other's elicitations. A stdio harness
		// holds the process's stdio until its test ends.
		stdioInUse.Lock()
		t.Cleanup(stdioInUse.Unlock) // runs after the server stopped below
		// Two pipes stand for the process's stdin and stdout.
		srvIn, cliOut := io.Pipe()
		cliIn, srvOut := io.Pipe()
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = srv.ServeStdio(ctx, srvIn, srvOut, nil)
		}()
		t.Cleanup(func() {
			stop()
			cliOut.Close()
			srvOut.Close()
			<-done
		})
		tr = transport.NewIO(cliIn, cliOut, io.NopCloser(strings.NewReader("")))
	case "sse":
		hs := httptest.NewServer(NewHTTPHandler(srv, HTTPOptions{}))
		t.Cleanup(hs.Close)
		if tr, err = transport.NewSSE(hs.URL + "/sse"); err != nil {
			t.Fatal(err)
		}
	default:
		hs := httptest.NewServer(NewHTTPHandler(srv, HTTPOptions{}))
		t.Cleanup(hs.Close)
		h.url = hs.URL
		if tr, err = transport.NewStreamableHTTP(hs.URL + "/mcp"); err != nil {
			t.Fatal(err)
		}
	}
	if h.answer == nil {
		h.answer = &answerer{action: mcp.ElicitationResponseActionAccept}
	}
	var copts []client.ClientOption
	if !h.noElicitation {
		copts = append(copts, client.WithElicitationHandler(h.answer))
	}
	if h.protocol != "" {
		copts = append(copts, client.WithProtocolVersion(h.protocol))
	}
	c := client.NewClient(tr, copts...)
	t.Cleanup(func() { c.Close() })
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		h.notesMu.Lock()
		defer h.notesMu.Unlock()
		h.notes = append(h.notes, n)
	})
	// The SSE transport's stream lives as long as the context Start is
	// given.
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "airlock-test", Version: "1"}
	if h.apps {
		init.Params.Capabilities.Extensions = map[string]any{AppsExtension: map[string]any{"mimeTypes": []string{AppMIMEType}}}
	}
	if h.initialized, err = c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		b, err := json.Marshal(tool.RawOutputSchema)
		if len(tool.RawOutputSchema) == 0 {
			b, err = json.Marshal(tool.OutputSchema)
		}
		if err != nil {
			t.Fatal(err)
		}
		v, err := tooltest.OutputValidator(tool.Name, b)
		if err != nil {
			t.Fatalf("tool %s: output schema does not compile: %v", tool.Name, err)
		}
		h.schemas[tool.Name] = v
	}
	h.client = c
}

// answerer plays the user at the client's approval prompt.
type answerer struct {
	mu       sync.Mutex
	action   mcp.ElicitationResponseAction
	content  map[string]any
	messages []string
}

func (a *answerer) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.messages...)
}

func (a *answerer) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.messages = append(a.messages, req.Params.Message)
	content := a.content
	if content == nil && a.action == mcp.ElicitationResponseActionAccept {
		content = map[string]any{"approve": true, "acknowledge": true}
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: a.action, Content: content}}, nil
}

// approveAsOperator records an operator's approval of a selection, as
// airlock approve would.
func (h *harness) approveAsOperator(selID any) {
	h.t.Helper()
	if _, p := h.deps.Engine.Decide(context.Background(), selection.DecisionRequest{SelectionID: selID.(string),
		Decision: selection.DecisionApproved, Who: "os user test-operator", Channel: selection.ChannelOperator}); p != nil {
		h.t.Fatalf("approve: %+v", p)
	}
}

// result is one tool call as the client saw it.
type result struct {
	env  *envelope.Envelope
	data map[string]any
	raw  []byte
	res  *mcp.CallToolResult
}

func (r result) items() []map[string]any {
	var out []map[string]any
	for _, it := range r.data["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func (r result) ids() []string {
	var out []string
	for _, it := range r.items() {
		out = append(out, it["id"].(string))
	}
	return out
}

func (r result) reasonCodes() []envelope.ReasonCode {
	var out []envelope.ReasonCode
	for _, rs := range r.env.IncompleteReasons {
		out = append(out, rs.Code)
	}
	return out
}

func (r result) totalMatched() int {
	n, _ := r.data["total_matched"].(float64)
	return int(n)
}

// call invokes a tool over MCP and checks the result's contract: it
// validates against the advertised output schema, its text mirrors its
// structured content, and isError matches the status.
func (h *harness) call(tool string, args map[string]any) result {
	h.t.Helper()
	return h.callMeta(tool, args, nil)
}

// callMeta is call with the request's _meta (a progress token).
func (h *harness) callMeta(tool string, args map[string]any, meta *mcp.Meta) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	req.Params.Meta = meta
	res, err := h.client.CallTool(ctx, req)
	if err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
	raw := []byte(res.RawStructuredContent)
	if len(raw) == 0 {
		raw, _ = json.Marshal(res.StructuredContent)
	}
	whole, _ := json.Marshal(res)
	leaks(h.t, tool+"'s result", whole)
	if len(whole) > tooltest.MaxResultBytes {
		h.t.Fatalf("%s: the result is %d bytes, over the %d every result must stay within", tool, len(whole), tooltest.MaxResultBytes)
	}
	tooltest.RecordCodes(raw)
	// Whatever the tool, no number in its answer reads as another in a
	// client that holds numbers as doubles (I-JSON).
	if exact, err := envelope.DecodeJSON(raw); err != nil {
		h.t.Fatalf("%s: structured content: %v", tool, err)
	} else {
		tooltest.NoRoundedNumbers(h.t, tool+"'s structured content", exact)
	}
	// The advertised schema is compact; every result also holds to the
	// envelope's full schema.
	if err := tooltest.FullEnvelope().Validate(raw); err != nil {
		h.t.Fatalf("%s result breaks the envelope schema: %v\n%s", tool, err, raw)
	}
	if v := h.schemas[tool]; v == nil {
		h.t.Fatalf("tool %s was not listed", tool)
	} else if err := v.Validate(raw); err != nil {
		h.t.Fatalf("%s result breaks its output schema: %v\n%s", tool, err, raw)
	}
	if err := checkData(tool, raw); err != nil {
		h.t.Fatalf("%s result's data breaks the data schema: %v\n%s", tool, err, raw)
	}
	if len(res.Content) != 1 {
		h.t.Fatalf("%s: want one text content, got %d", tool, len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		h.t.Fatalf("%s: content is not text", tool)
	}
	// The text is the structured content without the members that hold
	// their defaults: putting them back gives the same JSON.
	defaults := h.textDefaults()[tool]
	var a, b any
	_ = json.Unmarshal(envelope.Expand([]byte(text.Text), defaults...), &a)
	_ = json.Unmarshal(raw, &b)
	if ja, _ := json.Marshal(a); string(ja) != string(tooltest.MustJSON(b)) {
		h.t.Fatalf("%s: text content does not mirror structured content\ntext: %s\nstructured: %s", tool, text.Text, raw)
	}
	var env envelope.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		h.t.Fatal(err)
	}
	if res.IsError != (env.Status == envelope.StatusError) {
		h.t.Fatalf("%s: isError %v with status %q", tool, res.IsError, env.Status)
	}
	var data map[string]any
	if m, ok := b.(map[string]any); ok {
		data, _ = m["data"].(map[string]any)
	}
	return result{env: &env, data: data, raw: raw, res: res}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// otherProcess connects the client to another airlock process on the same
// store, with secret (nil: the keys the store keeps): it holds no frozen
// scan and runs no operation of the first.
func (h *harness) otherProcess(secret []byte) {
	h.t.Helper()
	h.restart(func(c *tools.Config) { c.Secret = secret })
}

// restart connects the client to another airlock process on the same
// store, its configuration changed by with.
func (h *harness) restart(with ...func(*tools.Config)) {
	h.t.Helper()
	h.deps = h.build(with...)
	h.connect()
}
