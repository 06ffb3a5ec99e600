package write

import (
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// TestParseBulk_ByPositionNeedsOneResultPerTarget: results matched by
// position answer the targets in the order they were sent; a response
// that holds more or fewer results than targets answers none of them.
func TestParseBulk_ByPositionNeedsOneResultPerTarget(t *testing.T) {
	a := &upstream.Action{Config: config.ActionConfig{Bulk: &config.BulkConfig{Results: "responses", ResultMatch: config.ResultByPosition,
		ResultStatus: "status", Applied: []string{"200"}, NotFound: []string{"404"}}}}
	resp := func(body string) *transport.Response {
		return read.RecordedResponse(200, map[string]string{"Content-Type": "application/json"}, []byte(body))
	}
	got, err := ParseBulk(a, resp(`{"responses":[{"status":200},{"status":404},{"status":500}]}`), []string{"a", "b", "c"})
	if err != nil || got["a"].Outcome != BulkApplied || got["b"].Outcome != BulkNotFound || got["c"].Outcome != BulkUnclear {
		t.Fatalf("by position: %v %v", got, err)
	}
	for _, body := range []string{`{"responses":[{"status":200},{"status":200}]}`, `{"responses":[{"status":200},{"status":200},{"status":200},{"status":200}]}`} {
		if got, err := ParseBulk(a, resp(body), []string{"a", "b", "c"}); err == nil {
			t.Fatalf("%s answered %v for three targets", body, got)
		}
	}
}

// TestParseBulk_AStatusProvesOnlyWhatItSays: a 4xx the action does not
// list is a refusal; a 5xx or a word it does not list may have applied
// (unclear); two results for one target answer it not at all; and an
// applied status carries the result's record (result_item) for the judge,
// which alone can prove it.
func TestParseBulk_AStatusProvesOnlyWhatItSays(t *testing.T) {
	res := &upstream.Resource{List: dialect.List{Config: config.ResourceConfig{Fields: map[string]*config.FieldConfig{"tags": {Type: "array"}}}}}
	a := &upstream.Action{Resource: res, Config: config.ActionConfig{
		Effect: []config.EffectConfig{{Field: "tags", Op: config.EffectAdd, To: "x"}},
		Bulk: &config.BulkConfig{Results: "results", ResultID: "id", ResultStatus: "status", ResultItem: "body",
			Applied: []string{"200", "ok"}, Conflict: []string{"409"}}}}
	body := `{"results":[
		{"id":"a","status":422},
		{"id":"b","status":503},
		{"id":"c","status":"maybe"},
		{"id":"d","status":200},{"id":"d","status":409},
		{"id":"e","status":200,"body":{"tags":["y","x"]}},
		{"id":"f","status":"ok"}]}`
	got, err := ParseBulk(a, read.RecordedResponse(200, map[string]string{"Content-Type": "application/json"}, []byte(body)),
		[]string{"a", "b", "c", "d", "e", "f"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]BulkOutcome{"a": BulkFailed, "b": BulkUnclear, "c": BulkUnclear, "e": BulkApplied, "f": BulkApplied}
	for id, w := range want {
		if got[id].Outcome != w {
			t.Errorf("%s: got outcome %d, want %d", id, got[id].Outcome, w)
		}
	}
	if r, ok := got["d"]; ok {
		t.Errorf("d was answered twice (200 and 409) and read as %d", r.Outcome)
	}
	if got["e"].Item == nil || got["f"].Item != nil {
		t.Errorf("items: e %v, f %v; want e's record and none for f", got["e"].Item, got["f"].Item)
	}
}
