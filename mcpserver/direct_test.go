package mcpserver

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// direct calls tool handlers in process, validating every result against
// the tool's output schema. It is for tests that make many calls.
type direct struct {
	t     fataler
	deps  *tools.Deps
	specs map[string]tools.Spec

	mu sync.Mutex
	// schemas holds the output schema of each tool called so far: most
	// directs call one tool, and listing a tool's schema costs more than
	// a call.
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
func newDirect(t fataler, yaml []byte, with ...func(*tools.Config)) *direct {
	t.Helper()
	cfg, err := config.Parse(yaml)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: testEnv, MaxRetryWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := tools.Config{Runtime: rt}
	for _, f := range with {
		f(&c)
	}
	deps, err := tools.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	d := &direct{t: t, deps: deps, specs: map[string]tools.Spec{}, schemas: map[string]*envelope.Validator{}}
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
	v, err := outputValidator(s.Name, s.OutputSchema())
	if err != nil {
		d.t.Fatal(err)
	}
	d.schemas[tool] = v
	return v
}

func (d *direct) call(tool string, args map[string]any) (*envelope.Envelope, map[string]any) {
	d.t.Helper()
	raw, _ := json.Marshal(args)
	env := d.specs[tool].Handler(context.Background(), &tools.Call{RequestID: "test", Raw: raw})
	env.Finish()
	b := env.Marshal()
	recordProblems(b)
	if text, _ := json.Marshal(string(b)); len(b)+len(text) > maxResultBytes {
		d.t.Fatalf("%s: the result costs %d bytes with its text copy, over %d", tool, len(b)+len(text), maxResultBytes)
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

func dataIDs(data map[string]any) []string {
	var out []string
	items, _ := data["items"].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}
