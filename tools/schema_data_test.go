package tools

import (
	"encoding/json"
	"testing"
)

// TestDataSchemas_RefuseUndeclaredMembers: real answers of every tool hold
// to their data schemas (as every result the harness sees does), and the
// same answer with one member the schema does not declare, at the top or
// inside a nested object of airlock's own, does not.
func TestDataSchemas_RefuseUndeclaredMembers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.call("preview_selection", seedPreview(nil))
	sel := p.data["selection_id"]
	c := h.call("commit_bulk_action", commitArgsFor(p, "dry_run", map[string]any{"wait_ms": 60000}))
	answers := map[string]result{
		"describe_resources": h.call("describe_resources", map[string]any{}),
		"search_all":         h.call("search_all", map[string]any{"resource": "subscriptions", "group_by": []any{"region"}, "max_items": 3}),
		"preview_selection":  p,
		"get_selection":      h.call("get_selection", map[string]any{"selection_id": sel, "disposition": "excluded"}),
		"commit_bulk_action": c,
		"get_operation":      h.operation(c.data["operation_id"]),
	}
	// nested names an object of airlock's own inside each tool's data.
	nested := map[string]func(data map[string]any) map[string]any{
		"describe_resources": func(d map[string]any) map[string]any { return first(d["resources"])["limits"].(map[string]any) },
		"search_all":         func(d map[string]any) map[string]any { return d["delivered"].(map[string]any) },
		"preview_selection":  func(d map[string]any) map[string]any { return first(d["exclusions"]) },
		"get_selection":      func(d map[string]any) map[string]any { return first(d["items"]) },
		"commit_bulk_action": func(d map[string]any) map[string]any { return d["counts"].(map[string]any) },
		"get_operation":      func(d map[string]any) map[string]any { return first(d["results"]) },
	}
	for _, s := range bareDeps().Specs() {
		r, ok := answers[s.Name]
		if !ok || r.data == nil {
			t.Fatalf("%s: no answer with data to check: %s", s.Name, r.raw)
		}
		if err := checkData(s, r.raw); err != nil {
			t.Fatalf("%s: a real answer breaks its data schema: %v", s.Name, err)
		}
		for _, where := range []string{"top", "nested"} {
			var env map[string]any
			_ = json.Unmarshal(r.raw, &env)
			data := env["data"].(map[string]any)
			obj := data
			if where == "nested" {
				obj = nested[s.Name](data)
			}
			obj["added_member"] = 1
			b, _ := json.Marshal(env)
			if err := checkData(s, b); err == nil {
				t.Errorf("%s: an undeclared member (%s) passes the data schema", s.Name, where)
			}
		}
	}
}

func first(list any) map[string]any {
	l, _ := list.([]any)
	if len(l) == 0 {
		return map[string]any{}
	}
	m, _ := l[0].(map[string]any)
	return m
}
