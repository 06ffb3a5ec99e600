package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/redact/leaktest"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/upstream"
)

// harness is a fixture API and airlock's tools over it with a SQLite store,
// called as the server calls them and with no transport between: each call
// is a Call run through Spec.Run, answered from the memory of failed calls
// first and remembered after, the user at the client answering the
// approvals it asks for (answer). Every answer it hands back has held to
// the contract every result must: the envelope's full schema, the tool's
// output and data schemas, a text copy that mirrors it, numbers a double
// reads exactly, a bounded size, and no credential anywhere, nor in the
// logs, the audit trail or the store.
type harness struct {
	// answer is how the user answers an approval request: accept (approve
	// and acknowledge), decline or cancel.
	answer *answerer
	// cannotAsk: the client cannot show approval requests.
	cannotAsk bool
	t         testing.TB
	api       *fixtures.Server
	apiURL    string
	deps      *Deps
	// logs is everything airlock logged, as JSON lines.
	logs *tooltest.SyncBuffer
	// dbPath is the store's SQLite file.
	dbPath string
	// build makes another airlock process on the same store, its
	// configuration changed by with.
	build func(with ...func(*Config)) *Deps
}

type harnessOpt func(*harnessCfg)

type harnessCfg struct {
	config     func(baseURL string) []byte
	getenv     func(string) string
	clock      upstream.Clock
	scanMemory int
	// wrapStore, when set, stands between the tools and the store.
	wrapStore func(selection.Store) selection.Store
	// cannotAsk: the client cannot show approval requests (it declares
	// no elicitation).
	cannotAsk bool
	// fingerprint, when set, replaces the credentials' fingerprint in the
	// memory of failed calls.
	fingerprint func() string
}

// withoutAsking is a client that cannot show approval requests.
func withoutAsking() harnessOpt { return func(h *harnessCfg) { h.cannotAsk = true } }

// withFingerprint names what the memory of failed calls keys answers on
// besides the call.
func withFingerprint(f func() string) harnessOpt { return func(h *harnessCfg) { h.fingerprint = f } }

// withStore puts wrap between the tools and the store (a store that fails).
func withStore(wrap func(selection.Store) selection.Store) harnessOpt {
	return func(h *harnessCfg) { h.wrapStore = wrap }
}

// withScanMemory bounds what the process holds of the frozen scans it
// shares with the store.
func withScanMemory(bytes int) harnessOpt { return func(h *harnessCfg) { h.scanMemory = bytes } }

// withClock runs the tools on c, and has the upstream read its time from c
// while it waits on the wall clock (see readsOnly).
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

func (r readsOnly) Now() time.Time                                  { return r.Clock.Now() }
func (r readsOnly) NewTimer(d time.Duration) clock.Timer            { return r.Real.NewTimer(d) }
func (r readsOnly) NewTicker(d time.Duration) clock.Ticker          { return r.Real.NewTicker(d) }
func (r readsOnly) AfterFunc(d time.Duration, f func()) clock.Timer { return r.Real.AfterFunc(d, f) }

func withConfig(f func(baseURL string) []byte) harnessOpt {
	return func(c *harnessCfg) { c.config = f }
}

func withResources(rs ...fixtures.Resource) harnessOpt {
	return withConfig(func(u string) []byte { return fixtures.Config(u, rs...) })
}

func withEnv(f func(string) string) harnessOpt { return func(c *harnessCfg) { c.getenv = f } }

// leaks fails the test when b holds a canary credential in any form a
// reader could decode (raw, split, escaped, base64, containers nested in
// each other), tooltest.CursorAPIKey among them.
func leaks(t testing.TB, what string, b []byte) {
	t.Helper()
	for _, hits := range leaktest.Find(b, canaryToken, canaryAdmin, tooltest.CursorAPIKey) {
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
	var upClock upstream.Clock
	if cfg.clock != nil {
		upClock = readsOnly{Clock: cfg.clock}
	}
	rt, err := upstream.Initialize(context.Background(), c, upstream.Options{Getenv: cfg.getenv, Clock: upClock,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "airlock.db")
	store, err := sqlitestore.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	bg, stop := context.WithCancel(context.Background())
	var built []*Deps
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
	auditor := selection.NewAuditor(&auditLog)
	var used selection.Store = store
	if cfg.wrapStore != nil {
		used = cfg.wrapStore(store)
	}
	build := func(with ...func(*Config)) *Deps {
		c := Config{Runtime: rt, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Clock: cfg.clock, Store: used, Background: bg, Auditor: auditor, ScanMemory: cfg.scanMemory,
			Fingerprint: cfg.fingerprint}
		for _, f := range with {
			f(&c)
		}
		deps, err := New(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, deps)
		return deps
	}
	return &harness{t: t, api: api, apiURL: apiSrv.URL, deps: build(), build: build, logs: &logs, dbPath: dbPath,
		answer: &answerer{action: AnswerAccept}, cannotAsk: cfg.cannotAsk}
}

// otherProcess is another airlock process on the same store, with secret
// (nil: the keys the store keeps): it holds no frozen scan and runs no
// operation of the first.
func (h *harness) otherProcess(secret []byte) {
	h.t.Helper()
	h.restart(func(c *Config) { c.Secret = secret })
}

// restart is another airlock process on the same store, its configuration
// changed by with.
func (h *harness) restart(with ...func(*Config)) {
	h.t.Helper()
	h.deps = h.build(with...)
}

// spec is the named tool of the harness's process (decide_selection
// included).
func (h *harness) spec(tool string) Spec {
	h.t.Helper()
	for _, s := range append(h.deps.Specs(), DecideSelection(h.deps)) {
		if s.Name == tool {
			return s
		}
	}
	h.t.Fatalf("no tool %q", tool)
	return Spec{}
}

// answerer plays the user at the client's approval prompt.
type answerer struct {
	mu       sync.Mutex
	action   string
	content  map[string]any
	messages []string
}

func (a *answerer) set(action string, content map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.action, a.content = action, content
}

// asked is every approval request's message, in order.
func (a *answerer) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.messages...)
}

// reply is the user's answer to ask.
func (a *answerer) reply(ask *InputRequest) *InputAnswer {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.messages = append(a.messages, ask.Message)
	content := a.content
	if content == nil && a.action == AnswerAccept {
		content = map[string]any{"approve": true, "acknowledge": true}
	}
	return &InputAnswer{State: ask.State, Key: ask.Key, Action: a.action, Content: content}
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

func (h *harness) writesTo() int { return len(h.api.Writes()) }

// result is one tool call's answer.
type result struct {
	env  *envelope.Envelope
	data map[string]any
	raw  []byte
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

func (r result) reason(code envelope.ReasonCode) envelope.Reason {
	for _, rs := range r.env.IncompleteReasons {
		if rs.Code == code {
			return rs
		}
	}
	return envelope.Reason{}
}

func (r result) totalMatched() int {
	n, _ := r.data["total_matched"].(float64)
	return int(n)
}

// maxInputRounds bounds the approvals one call may ask for.
const maxInputRounds = 3

// call runs a tool as the server does and checks the answer's contract.
func (h *harness) call(tool string, args map[string]any) result {
	h.t.Helper()
	s := h.spec(tool)
	raw, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := &Call{RequestID: uuid.NewString(), Raw: raw, Client: "mcp client airlock-test 1", CanAsk: !h.cannotAsk}
	env := h.deps.Memory.Recall(s, call.Raw, call.RequestID)
	if env == nil {
		env = h.runAnswering(ctx, s, call)
		h.deps.Memory.Remember(s, call.Raw, env)
	}
	env.Finish()
	b := h.deps.Redactor.Bytes(env.Marshal())
	return h.check(s, b)
}

// runAnswering runs call as the server does, the user at the client
// answering every form it asks (at most maxInputRounds), and returns the
// finished answer.
func (h *harness) runAnswering(ctx context.Context, s Spec, call *Call) *envelope.Envelope {
	h.t.Helper()
	env := s.Run(ctx, call)
	for round := 0; call.Ask != nil; round++ {
		if round == maxInputRounds {
			h.t.Fatalf("%s asked for input %d times", s.Name, round)
		}
		ask := call.Ask
		call.Ask = nil
		call.Answer = h.answer.reply(ask)
		env = s.Run(ctx, call)
	}
	if env.Problem != nil && env.Problem.RequestID == "" {
		env.Problem.WithRequest(call.RequestID)
	}
	env.Finish()
	return env
}

// check holds an answer of s, as sent, to the contract every result keeps.
func (h *harness) check(s Spec, raw []byte) result {
	h.t.Helper()
	tool := s.Name
	text := envelope.Text(raw, s.TextDefaults...)
	leaks(h.t, tool+"'s result", raw)
	if n := len(raw) + len(tooltest.MustJSON(string(text))); n > tooltest.MaxResultBytes {
		h.t.Fatalf("%s: the result is %d bytes, over the %d every result must stay within", tool, n, tooltest.MaxResultBytes)
	}
	tooltest.RecordCodes(raw)
	// Whatever the tool, no number in its answer reads as another in a
	// client that holds numbers as doubles (I-JSON).
	if exact, err := envelope.DecodeJSON(raw); err != nil {
		h.t.Fatalf("%s: structured content: %v", tool, err)
	} else {
		tooltest.NoRoundedNumbers(h.t, tool+"'s structured content", exact)
	}
	if err := tooltest.FullEnvelope().Validate(raw); err != nil {
		h.t.Fatalf("%s result breaks the envelope schema: %v\n%s", tool, err, raw)
	}
	v, err := tooltest.OutputValidator(s.Name, s.OutputSchema())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := v.Validate(raw); err != nil {
		h.t.Fatalf("%s result breaks its output schema: %v\n%s", tool, err, raw)
	}
	if err := checkData(s, raw); err != nil {
		h.t.Fatalf("%s result's data breaks the data schema: %v\n%s", tool, err, raw)
	}
	// The text is the result without the members that hold their
	// defaults: putting them back gives the same JSON.
	var a, b any
	_ = json.Unmarshal(envelope.Expand(text, s.TextDefaults...), &a)
	_ = json.Unmarshal(raw, &b)
	if string(tooltest.MustJSON(a)) != string(tooltest.MustJSON(b)) {
		h.t.Fatalf("%s: text content does not mirror structured content\ntext: %s\nstructured: %s", tool, text, raw)
	}
	var env envelope.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		h.t.Fatal(err)
	}
	var data map[string]any
	if m, ok := b.(map[string]any); ok {
		data, _ = m["data"].(map[string]any)
	}
	return result{env: &env, data: data, raw: raw}
}

var dataSchemas sync.Map

// checkData validates the data of a result of s (an envelope as JSON)
// against the tool's data schema; a result without data passes.
func checkData(s Spec, raw []byte) error {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return err
	}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return nil
	}
	v, ok := dataSchemas.Load(s.Name)
	if !ok {
		b, err := json.Marshal(s.Data)
		if err != nil {
			return err
		}
		c, err := envelope.CompileSchema(s.Name+"-data", b)
		if err != nil {
			return fmt.Errorf("%s: data schema does not compile: %w", s.Name, err)
		}
		v, _ = dataSchemas.LoadOrStore(s.Name, c)
	}
	return v.(*envelope.Validator).Validate(env.Data)
}

// members lists every member id of a selection through get_selection.
func (h *harness) members(selID any) []string {
	h.t.Helper()
	var ids []string
	args := map[string]any{"selection_id": selID, "page_size": 37}
	for {
		r := h.call(GetSelectionName, args)
		if r.env.Problem != nil {
			h.t.Fatalf("get_selection: %+v", r.env.Problem)
		}
		ids = append(ids, r.ids()...)
		if r.env.Complete {
			return ids
		}
		args["cursor"] = r.env.Continuation.Cursor
	}
}

// operation waits for an operation to finish and returns get_operation's
// answer with every result.
func (h *harness) operation(id any) result {
	h.t.Helper()
	for i := 0; i < 200; i++ {
		r := h.call(GetOperationName, map[string]any{"operation_id": id, "page_size": 500})
		if r.data["status"] != selection.OpRunning {
			all := r.data["results"].([]any)
			for next := r; next.env.Continuation.Kind == envelope.ContinueNextCursor; {
				next = h.call(GetOperationName, map[string]any{"operation_id": id, "page_size": 500, "cursor": next.env.Continuation.Cursor})
				all = append(all, next.data["results"].([]any)...)
			}
			r.data["results"] = all
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatal("the operation did not finish")
	return result{}
}

var pauseAction = map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}

// seedPreview is the seed article's example: past_due subscriptions in eu,
// except disputed and legal_hold.
func seedPreview(extra map[string]any) map[string]any {
	a := map[string]any{
		"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"},
		"exclude": []any{
			map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"},
			map[string]any{"field": "tags", "op": "contains", "value": "legal_hold", "reason": "legal hold"},
		},
		"action": pauseAction,
	}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

func commitArgsFor(p result, mode string, extra map[string]any) map[string]any {
	a := map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": pauseAction, "mode": mode}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

func counts(r result) map[selection.Outcome]int {
	out := map[selection.Outcome]int{}
	for k, v := range r.data["counts"].(map[string]any) {
		out[selection.Outcome(k)] = int(v.(float64))
	}
	return out
}

func outcomes(r result) map[string]selection.Outcome {
	out := map[string]selection.Outcome{}
	for _, t := range r.data["results"].([]any) {
		m := t.(map[string]any)
		out[m["id"].(string)] = selection.Outcome(m["outcome"].(string))
	}
	return out
}

func problemCode(r result) envelope.ProblemCode {
	if r.env.Problem == nil {
		return ""
	}
	return r.env.Problem.Code
}

// newFakeClock is a clock the test moves by hand, starting at the wall
// clock's now (the fixture and the store stamp what they keep with it).
func newFakeClock() *clocktest.Fake { return clocktest.New(time.Now()) }

var archive = map[string]any{"type": "archive"}

func fieldsOf(p *envelope.Problem) map[string]envelope.FieldCode {
	out := map[string]envelope.FieldCode{}
	for _, e := range p.Errors {
		out[e.Field] = e.Code
	}
	return out
}

// handler is a tool's run as the server calls it (Spec.Run), for tests
// that hand it a call of their own.
func (h *harness) handler(tool string) func(context.Context, *Call) *envelope.Envelope {
	h.t.Helper()
	return h.spec(tool).Run
}
