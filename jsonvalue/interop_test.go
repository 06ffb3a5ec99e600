package jsonvalue

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

func TestInteroperable_OnlyNumbersADoubleReadsAsThemselves(t *testing.T) {
	cases := []struct {
		lit  string
		want bool
	}{
		{"0", true}, {"-0", true}, {"0.0", true}, {"0e10", true},
		{"12", true}, {"-12", true}, {"1.2e1", true}, {"12.0", true}, {"1200e-2", true},
		{"9007199254740991", true}, {"-9007199254740991", true}, {"9.007199254740991e15", true},
		// 2^53 itself is a double, but so is what 2^53+1 rounds to: a
		// reader cannot tell them apart.
		{"9007199254740992", false}, {"-9007199254740992", false},
		{"9007199254740993", false}, {"9223372036854775001", false}, {"18446744073709551615", false},
		{"9007199254740993.0", false}, {"1e16", false}, {"1E20", false}, {"1e400", false},
		{"0.1", true}, {"0.25", true}, {"-2.5e-3", true}, {"5e-324", true}, {"1.5e-300", true},
		// The largest double is an integer, far beyond the range.
		{"1.7976931348623157e308", false},
		{"0.30000000000000000001", false}, {"9007199254740993.5", false}, {"1.00000000000000001", false},
		{"1e-400", false}, {"123456789.123456789", false},
		{"1e99999999999", false}, {"1e-99999999999", false},
		{"", false}, {"abc", false}, {"01", false}, {"1.", false}, {".5", false}, {"1e", false}, {"1e+-5", false}, {"--1", false}, {"0x10", false},
	}
	for _, c := range cases {
		if got := Interoperable(c.lit); got != c.want {
			t.Errorf("Interoperable(%q) = %v, want %v", c.lit, got, c.want)
		}
	}
}

// Every float64 encoding/json writes that is not an integer beyond the
// range is interoperable: airlock's own numbers never turn into strings.
func TestInteroperable_EveryDoubleGoWrites(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 1.0 / 3, math.Pi, 1e-7, 123456.789, -98765.4321e-100, math.SmallestNonzeroFloat64, 1 << 52, 1<<53 - 1} {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if !Interoperable(string(b)) {
			t.Errorf("Interoperable(%s) = false for a double Go wrote", b)
		}
	}
}

func TestSameNumber_ExactFormsDigitForDigit(t *testing.T) {
	cases := []struct {
		a, b     any
		same, ok bool
	}{
		{json.Number("9007199254740993"), json.Number("9007199254740992"), false, true},
		{json.Number("9223372036854775001"), json.Number("9223372036854775002"), false, true},
		{json.Number("9223372036854775001"), json.Number("9223372036854775001"), true, true},
		{json.Number("1.10"), json.Number("1.1"), true, true},
		{json.Number("1e2"), json.Number("100"), true, true},
		{json.Number("-0"), json.Number("0"), true, true},
		{json.Number("12"), 12, true, true},
		{json.Number("9007199254740993"), strconv.Itoa(1 << 53), false, false},
		{json.Number("0.1"), 0.1, true, true},
		{float64(3), json.Number("3.0"), true, true},
		{json.Number("1"), "1", false, false},
	}
	for _, c := range cases {
		same, ok := SameNumber(c.a, c.b)
		if same != c.same || ok != c.ok {
			t.Errorf("SameNumber(%#v, %#v) = %v, %v; want %v, %v", c.a, c.b, same, ok, c.same, c.ok)
		}
	}
}
