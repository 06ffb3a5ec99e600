package contract

import (
	"encoding/json"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// TestContract_AFieldThroughAnArrayIsCheckedAtItsElement: Redmine's team
// at custom_fields.1.value is checked where the path leads, the element of
// an array (or a member "1" of an object, which the path reads as well):
// well-formed items break no contract, and a value of another type is named
// by the field, not by the array it sits in.
func TestContract_AFieldThroughAnArrayIsCheckedAtItsElement(t *testing.T) {
	fields := map[string]*config.FieldConfig{
		"id":     {Type: "integer", Required: true},
		"region": {Type: "string", Path: "custom_fields.0.value", Nullable: true},
		"team":   {Type: "string", Path: "custom_fields.1.value", Nullable: true, Decision: true},
	}
	r := &dialect.List{Config: config.ResourceConfig{Fields: fields, IDField: "id"}}
	c, err := Compile(r, fields, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.fast == nil {
		t.Fatal("a path through an array must keep the fast check")
	}
	cf := func(region, team any) []any {
		return []any{map[string]any{"id": json.Number("1"), "value": region}, map[string]any{"id": json.Number("2"), "value": team}}
	}
	for _, tc := range []struct {
		name string
		doc  map[string]any
		want string // "field/rule", "" for none
	}{
		{"an array", map[string]any{"id": json.Number("7"), "custom_fields": cf("eu", "^beta")}, ""},
		{"null and empty", map[string]any{"id": json.Number("7"), "custom_fields": cf(nil, "")}, ""},
		{"an object keyed by index", map[string]any{"id": json.Number("7"), "custom_fields": map[string]any{"1": map[string]any{"value": "ops"}}}, ""},
		{"a number where the team is", map[string]any{"id": json.Number("7"), "custom_fields": cf("eu", json.Number("5"))}, "team/type"},
	} {
		vs, _ := c.Check(tc.doc, nil)
		got := ""
		for _, v := range vs {
			got += v.Field + "/" + v.Rule
		}
		if got != tc.want {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
		if tc.want == "" && !c.fast.valid(tc.doc) {
			t.Errorf("%s: the fast check does not prove a valid item valid", tc.name)
		}
	}
}
