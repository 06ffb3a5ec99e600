package config

import (
	"encoding/json"
	"testing"
)

// Ids beyond 2^53 (snowflakes) compare digit for digit: a double holds
// 9007199254740992 for both 9007199254740992 and 9007199254740993.
func TestValueEqual_IntegersBeyondADoubleCompareExactly(t *testing.T) {
	cases := []struct {
		got, want any
		equal     bool
	}{
		{json.Number("9007199254740993"), json.Number("9007199254740992"), false},
		{json.Number("9223372036854775001"), json.Number("9223372036854775002"), false},
		{json.Number("9223372036854775001"), json.Number("9223372036854775001"), true},
		{json.Number("1.50"), json.Number("1.5"), true},
		{json.Number("2"), float64(2), true},
		{"9007199254740993", json.Number("9007199254740993"), false},
	}
	for _, c := range cases {
		if got := ValueEqual(c.got, c.want, nil); got != c.equal {
			t.Errorf("ValueEqual(%v, %v) = %v, want %v", c.got, c.want, got, c.equal)
		}
	}
}

// A filter value given as a string for an integer field is the number
// with exactly its digits, beyond int64 too.
func TestConvertScalar_IntegerTextKeepsEveryDigit(t *testing.T) {
	for text, want := range map[string]string{
		"9007199254740993":     "9007199254740993",
		"9223372036854775807":  "9223372036854775807",
		"18446744073709551615": "18446744073709551615",
		" 42 ":                 "42",
	} {
		got, ok := ConvertScalar(text, "integer")
		if !ok || got != json.Number(want) {
			t.Errorf("ConvertScalar(%q, integer) = %v, %v; want %s", text, got, ok, want)
		}
	}
	for _, text := range []string{"1.5", "abc", "9e99"} {
		if got, ok := ConvertScalar(text, "integer"); ok {
			t.Errorf("ConvertScalar(%q, integer) = %v; want it refused", text, got)
		}
	}
}
