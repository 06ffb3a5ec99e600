package write

import (
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestParseBulk_ByPositionNeedsOneResultPerTarget: results matched by
// position answer the targets in the order they were sent; a response
// that holds more or fewer results than targets answers none of them.
func TestParseBulk_ByPositionNeedsOneResultPerTarget(t *testing.T) {
	a := &upstream.Action{Config: config.ActionConfig{Bulk: &config.BulkConfig{Results: "responses", ResultMatch: config.ResultByPosition,
		ResultStatus: "status", Applied: []string{"200"}, NotFound: []string{"404"}}}}
	resp := func(body string) *upstream.Response {
		return upstream.RecordedResponse(200, map[string]string{"Content-Type": "application/json"}, []byte(body))
	}
	got, err := ParseBulk(a, resp(`{"responses":[{"status":200},{"status":404},{"status":500}]}`), []string{"a", "b", "c"})
	if err != nil || got["a"] != BulkApplied || got["b"] != BulkNotFound || got["c"] != BulkFailed {
		t.Fatalf("by position: %v %v", got, err)
	}
	for _, body := range []string{`{"responses":[{"status":200},{"status":200}]}`, `{"responses":[{"status":200},{"status":200},{"status":200},{"status":200}]}`} {
		if got, err := ParseBulk(a, resp(body), []string{"a", "b", "c"}); err == nil {
			t.Fatalf("%s answered %v for three targets", body, got)
		}
	}
}
