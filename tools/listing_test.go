package tools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
)

// TestListedOutput_SaysWhatTheDataSchemaSays: the listed output schema is
// shorter than the envelope around the exact data schema, and says the
// same: with its shared shapes written back in place and the types its
// enums fix written out, it is that schema, member for member.
func TestListedOutput_SaysWhatTheDataSchemaSays(t *testing.T) {
	t.Parallel()
	shared := 0
	for _, s := range bareDeps().Specs() {
		listed := listedOutput(s.Data, s.AllProblems()...)
		full := envelope.CompactOutputSchema(advertisedData(s.Data), s.AllProblems()...)
		if len(listed) > len(full) {
			t.Errorf("%s: listed in %d bytes, more than the %d it compacts", s.Name, len(listed), len(full))
		}
		var got, want map[string]any
		if err := json.Unmarshal(listed, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(full, &want); err != nil {
			t.Fatal(err)
		}
		defs, _ := got["$defs"].(map[string]any)
		shared += len(defs) - 1
		got = inline(t, got, defs).(map[string]any)
		got["$defs"] = map[string]any{"code": defs["code"]}
		eachSchema(want, func(s map[string]any) { delete(s, "title") })
		eachSchema(got, func(s map[string]any) {
			if _, ok := s["enum"]; ok {
				delete(s, "type")
			}
		})
		eachSchema(want, func(s map[string]any) {
			if _, ok := s["enum"]; ok {
				delete(s, "type")
			}
		})
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s: the listed schema says something else:\n got %s\nwant %s", s.Name, g, w)
		}
	}
	if shared == 0 {
		t.Fatal("no tool's listed output schema shares a shape: the compaction did nothing")
	}
}

// inline writes every reference to a shape under defs back in its place
// (the envelope's own code stays a reference, as it is built).
func inline(t *testing.T, v any, defs map[string]any) any {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok && ref != "#/$defs/code" {
			def, ok := defs[strings.TrimPrefix(ref, "#/$defs/")]
			if !ok {
				t.Fatalf("a reference to no definition: %s", ref)
			}
			return inline(t, def, defs)
		}
		out := map[string]any{}
		for k, e := range x {
			if k != "$defs" {
				out[k] = inline(t, e, defs)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = inline(t, e, defs)
		}
		return out
	}
	return v
}

// TestListedOutput_DropsOnlyTypesItsEnumsFix: an enum of strings alone
// accepts what it accepted with its type beside it; an enum of numbers
// keeps its type (integer and number differ), and so does a type that the
// enum's values do not all have.
func TestListedOutput_DropsOnlyTypesItsEnumsFix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in       map[string]any
		keepType bool
	}{
		{map[string]any{"type": "string", "enum": []any{"a", "b"}}, false},
		{map[string]any{"type": "boolean", "enum": []any{true}}, false},
		{map[string]any{"type": "integer", "enum": []any{1.0, 2.0}}, true},
		{map[string]any{"type": "string", "enum": []any{"a", 1.0}}, true},
		{map[string]any{"type": "string"}, true},
	}
	for _, c := range cases {
		enumFixesType(c.in)
		if _, kept := c.in["type"]; kept != c.keepType {
			t.Errorf("%v: type kept %v, want %v", c.in, kept, c.keepType)
		}
	}
}
