// Package jsonvalue is airlock's one notion of a JSON value as decoded
// (map[string]any, []any, string, bool, nil, json.Number, float64): its
// canonical encoding (what digests hash, docs/digest.md), equality by that
// encoding, access by dotted path, and the stores' document codec, which
// writes and reads exactly what encoding/json does, faster.
//
// It depends on nothing of airlock's and must never produce bytes or values
// that encoding/json would not read back as the same value.
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Canonical encoding (docs/digest.md): JSON with object keys sorted by their
// UTF-8 bytes, no insignificant whitespace, strings escaping only '"', '\'
// and control characters (as \u00XX), numbers by value. The same value
// always encodes to the same bytes, whatever the map order, the process or
// the machine.

// AppendCanonical appends the canonical encoding of v to b. v is a value
// decoded from JSON (map[string]any, []any, string, bool, nil, json.Number,
// float64) or an int.
func AppendCanonical(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if x {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return AppendString(b, x), nil
	case json.Number:
		return appendNumber(b, string(x))
	case float64:
		return appendFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = AppendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case []string:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, e)
		}
		return append(b, ']'), nil
	case map[string]any:
		return AppendObject(b, x)
	}
	// Any other Go value goes through encoding/json first.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("canonical: %w", err)
	}
	return AppendCanonical(b, generic)
}

// Canonical returns the canonical encoding of v.
func Canonical(v any) ([]byte, error) { return AppendCanonical(nil, v) }

// AppendObject appends the canonical encoding of a map with its keys in byte order. Small maps sort
// their keys in a buffer on the stack.
func AppendObject(b []byte, x map[string]any) ([]byte, error) {
	var buf [16]string
	keys := MapKeys(buf[:0], x)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = AppendCanonical(b, x[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends the canonical encoding of a string.
func AppendString(b []byte, s string) []byte {
	// Fast path: printable ASCII with nothing to escape is copied as is.
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			break
		}
	}
	if i == len(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// isIntLiteral reports whether lit is -?[0-9]+.
func isIntLiteral(lit string) bool {
	if len(lit) > 0 && lit[0] == '-' {
		lit = lit[1:]
	}
	if lit == "" {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] < '0' || lit[i] > '9' {
			return false
		}
	}
	return true
}

// appendNumber: an integer literal keeps its exact digits (without leading
// zeros); any other number is encoded by its float64 value.
func appendNumber(b []byte, lit string) ([]byte, error) {
	if isIntLiteral(lit) {
		neg := strings.HasPrefix(lit, "-")
		digits := strings.TrimLeft(strings.TrimPrefix(lit, "-"), "0")
		if digits == "" {
			return append(b, '0'), nil
		}
		if neg {
			b = append(b, '-')
		}
		return append(b, digits...), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, fmt.Errorf("canonical: number %q: %w", lit, err)
	}
	return appendFloat(b, f)
}

// appendFloat: integral values up to 2^53 as integers, others in Go's
// shortest round-trip 'g' form.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("canonical: %v is not a JSON number", f)
	}
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return strconv.AppendInt(b, int64(f), 10), nil
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64), nil
}

// Equal reports whether two values have the same canonical encoding: the
// same JSON value, whatever the map order or the number's spelling. Values
// that have no encoding are equal to nothing.
func Equal(a, b any) bool {
	ea, err1 := Canonical(a)
	eb, err2 := Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}
