package tools

import (
	"encoding/json"
	"math"
	"testing"
)

func TestIntegral_SaturatesWholeNumbers(t *testing.T) {
	t.Parallel()
	for lit, want := range map[string]int{"1e3": 1000, "1e21": math.MaxInt, "-1e21": math.MinInt, "9223372036854775808": math.MaxInt,
		"1e999999999999": math.MaxInt, "12": 12} {
		if n, ok := integral(json.RawMessage(lit)); !ok || n != want {
			t.Errorf("%s: got %d %v, want %d", lit, n, ok, want)
		}
	}
	for _, lit := range []string{"1.5", "1e-5", `"7"`, "true", ""} {
		if _, ok := integral(json.RawMessage(lit)); ok {
			t.Errorf("%s is not a whole number", lit)
		}
	}
}
