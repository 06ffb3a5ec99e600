package upstream

import (
	"reflect"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// TestRecordAfter_KeepsEveryFieldInTheAPIsShape: the whole record a
// replacing write sends is the record as the upstream sent it (its version
// member and undeclared fields included) with only the effect's fields set,
// encoded as the API encodes them.
func TestRecordAfter_KeepsEveryFieldInTheAPIsShape(t *testing.T) {
	r := &Resource{List: dialect.List{Config: config.ResourceConfig{IDField: "_id", Fields: map[string]*config.FieldConfig{
		"_id": {Type: "string"}, "status": {Type: "string", Path: "meta.status"}, "key": {Type: "string", Decode: config.DecodeBase64}}}}}
	a := &Action{Resource: r, Config: config.ActionConfig{Effect: []config.EffectConfig{{Field: "status", To: "archived"}, {Field: "key", To: "k2"}},
		Request: &config.WriteRequestConfig{Method: "PUT", Path: "/db/{{id}}", Body: "{{after}}"}}}
	raw := map[string]any{"_id": "a", "_rev": "3-x", "name": "Ada", "tags": []any{"x"}, "meta": map[string]any{"status": "active", "n": 1}, "key": "azE="}
	got := a.RecordAfter(raw, map[string]any{"status": "archived", "key": "k2"})
	want := map[string]any{"_id": "a", "_rev": "3-x", "name": "Ada", "tags": []any{"x"}, "meta": map[string]any{"status": "archived", "n": 1}, "key": "azI="}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("record after:\n%v\nwant\n%v", got, want)
	}
	if raw["meta"].(map[string]any)["status"] != "active" {
		t.Fatal("the record read was changed in place")
	}
	if !a.WholeRecord() {
		t.Fatal("a body of {{after}} does not send the whole record")
	}
	a.Config.Request.Body = map[string]any{"status": "{{after.status}}"}
	if a.WholeRecord() {
		t.Fatal("{{after.status}} was taken for the whole record")
	}
}
