package upstream

import (
	"encoding/json"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// TestInitialize_AnObjectFieldBesideAFieldInsideItCompiles: a resource
// that declares metadata (an object) and metadata_uid at metadata.uid
// (Kubernetes' id) starts, in either order of their names.
func TestInitialize_AnObjectFieldBesideAFieldInsideItCompiles(t *testing.T) {
	for _, fields := range []string{
		`{metadata: {type: object}, metadata_uid: {path: metadata.uid, type: string}}`,
		`{a_uid: {path: metadata.uid, type: string}, metadata: {type: object}}`,
	} {
		cfg, err := config.Parse([]byte(`environment: test
upstreams: {api: {base_url: "https://api.example.com"}}
resources:
  pods:
    upstream: api
    list: {path: /api/v1/pods, items: items}
    pagination: {dialect: continue}
    id_field: ` + map[bool]string{true: "metadata_uid", false: "a_uid"}[fields[1] == 'm'] + `
    fields: ` + fields + `
`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Initialize(t.Context(), cfg, Options{WithoutCredentials: true}); err != nil {
			t.Errorf("%s: %v", fields, err)
		}
	}
}

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
	r := &Resource{Name: "issues", List: dialect.List{Config: config.ResourceConfig{Fields: fields, IDField: "id"}}}
	c, err := compileContract(r, fields, nil, nil, "")
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
