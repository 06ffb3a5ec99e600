package jsonvalue

import (
	"encoding/json"
	"strconv"
	"strings"
)

// I-JSON (RFC 7493, section 2.2) asks for numbers that every reader reads
// as the same value: most readers (JavaScript, and any that decode into an
// IEEE 754 double) keep a number as a double. An integer beyond
// ±(2^53−1) or a decimal with more precision than a double has is read by
// them as a neighbouring value: 9007199254740993 as 9007199254740992.

// MaxSafeInteger is 2^53−1, the largest integer a double holds with its
// neighbours told apart (JavaScript's Number.MAX_SAFE_INTEGER).
const MaxSafeInteger = 1<<53 - 1

// maxSafeDigits is MaxSafeInteger's decimal text.
const maxSafeDigits = "9007199254740991"

// Interoperable reports whether a JSON number literal is read as the same
// value by every reader, doubles included: an integer within
// ±(2^53−1) (whatever its spelling: 12, 1.2e1, 12.0), or a number that is
// not an integer and is exactly the value of the shortest form of the
// double nearest to it (0.1, 2.5e-3). An integer beyond the range, a
// decimal a double would round, and a number beyond a double's range are
// not. A literal that is not a JSON number is not.
func Interoperable(lit string) bool {
	d, ok := parseDecimal(lit)
	if !ok {
		return false
	}
	if d.digits == "" {
		return true // zero
	}
	if d.exp >= 0 {
		// An integer: its digits, then exp zeros.
		n := len(d.digits) + d.exp
		if n != len(maxSafeDigits) {
			return n < len(maxSafeDigits)
		}
		return d.digits+strings.Repeat("0", d.exp) <= maxSafeDigits
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return false // beyond a double's range
	}
	back, ok := parseDecimal(strconv.FormatFloat(f, 'e', -1, 64))
	return ok && back == d
}

// SameNumber reports whether a and b, decoded numbers (json.Number,
// float64, int), are the same value; ok is false when either is not a
// number. Two exact forms (json.Number, int) are compared by
// their decimal values, digit for digit: 9007199254740993 is not
// 9007199254740992, and 1.10 is 1.1. A float64 is compared as a double,
// the only value it has.
func SameNumber(a, b any) (same, ok bool) {
	la, exactA := exactLiteral(a)
	lb, exactB := exactLiteral(b)
	if exactA && exactB {
		da, okA := parseDecimal(la)
		db, okB := parseDecimal(lb)
		return okA && okB && da == db, okA && okB
	}
	fa, okA := Float(a)
	fb, okB := Float(b)
	return okA && okB && fa == fb, okA && okB
}

// exactLiteral is the decimal text of a number held exactly.
func exactLiteral(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case int:
		return strconv.Itoa(x), true
	}
	return "", false
}

// decimal is a number's value as sign × digits × 10^exp, with digits
// holding no leading or trailing zero; zero is the empty digits (and no
// sign), so that two literals of one value have one decimal.
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// maxExp bounds the exponents parseDecimal reads, far beyond a double's
// (10^±308), so that its arithmetic on them never overflows.
const maxExp = 1 << 30

// parseDecimal reads a JSON number literal (-?int(.frac)?([eE][+-]?exp)?).
// ok is false for anything else, and for an exponent beyond ±maxExp (no
// double holds such a value).
func parseDecimal(lit string) (decimal, bool) {
	var d decimal
	s := lit
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ReplaceAll(s, "E", "e"), "e")
	intPart, frac, hasFrac := strings.Cut(mant, ".")
	if !allDigits(intPart) || (hasFrac && !allDigits(frac)) || (len(intPart) > 1 && intPart[0] == '0') {
		return decimal{}, false
	}
	exp := 0
	if hasExp {
		unsigned := strings.TrimPrefix(strings.TrimPrefix(expText, "+"), "-")
		e, err := strconv.Atoi(strings.TrimPrefix(expText, "+"))
		if err != nil || !allDigits(unsigned) || len(expText)-len(unsigned) > 1 || e > maxExp || e < -maxExp {
			return decimal{}, false
		}
		exp = e
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed) - len(frac)
	if trimmed == "" {
		return decimal{}, true
	}
	d.digits, d.exp = trimmed, exp
	return d, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
