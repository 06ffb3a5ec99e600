package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
)

// TestOversizedIntegers_AreOverCapNeverTheDefault: a budget too large for
// an int (1e21, 2^63) is refused as over_cap with the cap, like 5000 is,
// instead of silently becoming the default; a whole number written with
// an exponent within the cap is taken at its value.
func TestOversizedIntegers_AreOverCapNeverTheDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, raw := range []string{
		`{"resource":"subscriptions","max_items":1e21,"max_pages":9223372036854775808,"deadline_ms":1e300}`,
		`{"resource":"subscriptions","max_items":5000,"max_pages":1e300,"deadline_ms":18446744073709551616}`,
	} {
		var args map[string]any
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			t.Fatal(err)
		}
		r := h.call("search_all", args)
		got := fieldsOf(r.env.Problem)
		for _, f := range []string{"max_items", "max_pages", "deadline_ms"} {
			if got[f] != envelope.FieldOverCap {
				t.Fatalf("%s: want %s over_cap, got %v", raw, f, got)
			}
		}
	}
	// An exponent past what the schema validator reads once crashed it.
	huge := h.handler("search_all")(context.Background(), &Call{RequestID: "t", Raw: json.RawMessage(`{"resource":"subscriptions","max_items":1e1000001,"max_pages":-1e-1000001}`)})
	if got := fieldsOf(huge.Problem); got["max_items"] != envelope.FieldOverCap || got["max_pages"] == "" {
		t.Fatalf("want max_items over_cap and max_pages refused, got %+v", huge.Problem)
	}
	ok := h.call("search_all", map[string]any{"resource": "subscriptions", "max_items": 1e1, "max_pages": 2e0})
	if ok.env.Problem != nil || len(ok.items()) != 10 {
		t.Fatalf("1e1 items is 10 items: %+v, %d items", ok.env.Problem, len(ok.items()))
	}
}
