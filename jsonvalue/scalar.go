package jsonvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Float is a decoded number as a float64; ok is false for anything else.
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// String is a scalar's text as a query parameter or header carries it:
// numbers as written, booleans as true and false, null as "".
func String(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// Int is a decoded number that is an integer; ok is false otherwise.
func Int(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		if n == float64(int(n)) {
			return int(n), true
		}
	case int:
		return n, true
	case interface{ Int64() (int64, error) }:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// GetID reads an id at path as a string: a non-empty string, or a number
// formatted as written.
func GetID(item any, path string) (string, bool) {
	v, ok := Get(item, path)
	if !ok || v == nil {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, x != ""
	case fmt.Stringer:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

// IsInteger reports a json.Number written as -?[0-9]+: certainly an
// integer. Other integral forms (1.0, 1e2) are left to the validator.
func IsInteger(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	s := string(n)
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
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

// SameScalar reports whether two decoded scalars are the same value:
// strings and booleans alike, numbers by value whatever their form.
func SameScalar(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case json.Number, float64, int:
		fa, ok1 := Float(a)
		fb, ok2 := Float(b)
		return ok1 && ok2 && fa == fb
	}
	return false
}

// Encode is json.Marshal without HTML escaping: the bytes a request body
// carries, with <, > and & as they are.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
