package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/tools"
)

func fieldsOf(p *envelope.Problem) map[string]envelope.FieldCode {
	out := map[string]envelope.FieldCode{}
	for _, e := range p.Errors {
		out[e.Field] = e.Code
	}
	return out
}

func TestRegistry_RefusesWrongAnnotations(t *testing.T) {
	t.Parallel()
	input := map[string]any{"type": "object"}
	handler := func(context.Context, *tools.Call) *envelope.Envelope { return &envelope.Envelope{} }
	spec := func(name string, writes bool, h tools.Hints) tools.Spec {
		return tools.Spec{Traits: tools.Traits{Name: name, Writes: writes, Hints: h}, Input: input, Handler: handler}
	}
	cases := []tools.Spec{
		spec("unset", false, tools.Hints{}),
		spec("one-unset", false, tools.Hints{ReadOnly: tools.Yes, Destructive: tools.No, Idempotent: tools.No}),
		spec("writes-readonly", true, tools.Hints{ReadOnly: tools.Yes, Destructive: tools.No, Idempotent: tools.No, OpenWorld: tools.Yes}),
		spec("readonly-destructive", false, tools.Hints{ReadOnly: tools.Yes, Destructive: tools.Yes, Idempotent: tools.No, OpenWorld: tools.Yes}),
		spec("reads-destructive", false, tools.Hints{ReadOnly: tools.No, Destructive: tools.Yes, Idempotent: tools.No, OpenWorld: tools.Yes}),
	}
	for _, s := range cases {
		if err := s.Check(); err == nil {
			t.Errorf("%s: registry accepted it", s.Name)
		}
		if err := bareServer().register(server.NewMCPServer("x", "1"), []tools.Spec{s}); err == nil {
			t.Errorf("%s: registered", s.Name)
		}
	}
	d := bareDeps()
	for _, s := range d.Specs() {
		if err := s.Check(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		ann := Tool(s).Annotations
		if ann.ReadOnlyHint == nil || ann.DestructiveHint == nil || ann.IdempotentHint == nil || ann.OpenWorldHint == nil {
			t.Errorf("%s: an annotation is unset", s.Name)
		}
	}
}

// TestToolSchemasGolden snapshots every tool's definition: an accidental
// contract change fails here; regenerate on purpose with UPDATE_GOLDEN=1.
func TestToolSchemasGolden(t *testing.T) {
	t.Parallel()
	d := bareDeps()
	var list []any
	for _, s := range d.Specs() {
		list = append(list, Tool(s))
	}
	got, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/tools.golden.json", got)
}

func TestResponseSizeStaysBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.call("search_all", map[string]any{"resource": "subscriptions", "max_items": 1000})
	b, _ := json.Marshal(r.res)
	if len(b) > 32<<10 {
		t.Fatalf("a result of %d bytes: the response budget must keep it under 32 KB", len(b))
	}
	if r.env.Continuation.Kind != envelope.ContinueNextCursor || !slices.Contains(r.reasonCodes(), envelope.ResultLimitReached) {
		t.Fatalf("a cut delivery says so: %v", r.reasonCodes())
	}
}

// TestResponseSizeStaysBounded_WithEscapeHeavyItems: the text copy escapes
// quotes and backslashes; the budget counts that copy too.
func TestResponseSizeStaysBounded_WithEscapeHeavyItems(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withResources(res(fixtures.DialectOffset, "")), withEnv(testEnv))
	c := seq(300)
	for _, id := range c.IDs() {
		c.Update(id, func(r fixtures.Record) { r["customer_name"] = strings.Repeat(`"\<`, 170) })
	}
	h.api.SetCollection(fixtures.DatasetSubscriptions, c)
	r := h.call("search_all", map[string]any{"resource": "subs", "max_items": 1000, "fields": []any{"id", "customer_name"}})
	b, _ := json.Marshal(r.res)
	if len(b) > 32<<10 || len(r.ids()) == 0 {
		t.Fatalf("a result of %d bytes with %d items: the budget must count the escaped text copy", len(b), len(r.ids()))
	}
}
