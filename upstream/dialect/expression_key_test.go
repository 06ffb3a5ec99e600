package dialect

import (
	"encoding/json"
	"testing"
)

// TestKeyAbove_OrdersAsDynamoDBOrdersKeys: strings by their bytes (an
// upper-case letter before a lower-case one, é after z), numbers exactly
// (2^53+1 above 2^53, which doubles cannot tell apart).
func TestKeyAbove_OrdersAsDynamoDBOrdersKeys(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{"b", "a", true}, {"a", "b", false}, {"a", "a", false}, {"a", "B", true}, {"é", "z", true},
		{json.Number("9007199254740993"), json.Number("9007199254740992"), true},
		{json.Number("9007199254740992"), json.Number("9007199254740993"), false},
		{json.Number("1e2"), json.Number("99.5"), true}, {json.Number("-1"), json.Number("0"), false},
		{"1", json.Number("0"), false},
	} {
		if got := keyAbove(tc.a, tc.b); got != tc.want {
			t.Errorf("keyAbove(%v, %v) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
