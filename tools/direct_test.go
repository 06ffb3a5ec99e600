package tools

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/upstream"
)

// The tools' behaviour suites drive each tool as a server does, through
// Spec.Run, with no transport and no MCP SDK between the test and the
// tool: direct is airlock's tools on a configuration, and every answer it
// hands back has held to the contract each answer must (its output schema,
// the size every result stays within).

// direct calls tool handlers in process, validating every result against
// the tool's output schema. It is for tests that make many calls.
type direct struct {
	t     fataler
	deps  *Deps
	specs map[string]Spec

	mu sync.Mutex
	// schemas holds the output schema of each tool called so far: most
	// directs call one tool, and compiling a tool's schema costs more
	// than a call.
	schemas map[string]*envelope.Validator
	// closers release what the direct opened (a store).
	closers []func()
}

// close releases what the direct opened.
func (d *direct) close() {
	for _, c := range d.closers {
		c()
	}
}

// fataler is what both *testing.T and *rapid.T offer.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// newDirect is airlock's tools on yaml, called directly; with, when set,
// completes their configuration (a store, a secret).
func newDirect(t fataler, yaml []byte, with ...func(*Config)) *direct {
	t.Helper()
	cfg, err := config.Parse(yaml)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: testEnv, MaxRetryWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Runtime: rt}
	for _, f := range with {
		f(&c)
	}
	deps, err := New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	d := &direct{t: t, deps: deps, specs: map[string]Spec{}, schemas: map[string]*envelope.Validator{}}
	for _, s := range d.deps.Specs() {
		d.specs[s.Name] = s
	}
	return d
}

// schema is tool's output schema, as tools/list gives it.
func (d *direct) schema(tool string) *envelope.Validator {
	d.t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if v := d.schemas[tool]; v != nil {
		return v
	}
	s, ok := d.specs[tool]
	if !ok {
		d.t.Fatalf("no tool %q", tool)
	}
	v, err := tooltest.OutputValidator(s.Name, s.OutputSchema())
	if err != nil {
		d.t.Fatal(err)
	}
	d.schemas[tool] = v
	return v
}

// call runs tool with args as a server would (Spec.Run), and checks the
// answer's contract.
func (d *direct) call(tool string, args map[string]any) (*envelope.Envelope, map[string]any) {
	d.t.Helper()
	raw, _ := json.Marshal(args)
	return d.run(tool, &Call{RequestID: "test", Raw: raw})
}

// run runs call of tool, and checks the answer's contract: it validates
// against the tool's output schema and, with its text copy, stays within
// tooltest.MaxResultBytes. A call that asks for input (call.Ask) answers an empty
// envelope, as the tool does.
func (d *direct) run(tool string, call *Call) (*envelope.Envelope, map[string]any) {
	d.t.Helper()
	s, ok := d.specs[tool]
	if !ok {
		d.t.Fatalf("no tool %q", tool)
	}
	env := s.Run(context.Background(), call)
	if call.Ask != nil {
		return env, nil
	}
	env.Finish()
	b := env.Marshal()
	tooltest.RecordCodes(b)
	if text, _ := json.Marshal(string(b)); len(b)+len(text) > tooltest.MaxResultBytes {
		d.t.Fatalf("%s: the result costs %d bytes with its text copy, over %d", tool, len(b)+len(text), tooltest.MaxResultBytes)
	}
	if err := d.schema(tool).Validate(b); err != nil {
		d.t.Fatalf("%s result breaks its output schema: %v\n%s", tool, err, b)
	}
	var m struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(b, &m)
	return env, m.Data
}

// canaryAdmin is the suite's administrator credential: no tool result may
// ever contain it either.
const canaryAdmin = tooltest.CanaryAdmin

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
