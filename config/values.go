package config

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config/strictyaml"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// IsNull reports whether v is one of the field's declared stand-ins
// for null.
func IsNull(v any, fd *FieldConfig) bool {
	if fd == nil || len(fd.NullValues) == 0 {
		return false
	}
	for _, nv := range fd.NullValues {
		if jsonvalue.SameScalar(v, strictyaml.JSONValue(nv)) {
			return true
		}
	}
	return false
}

// InEnum reports whether s is one of the field's enum values (by case
// when the field is normalized to lower case).
func InEnum(s string, fd *FieldConfig) bool {
	for _, e := range fd.Enum {
		if e == s || fd.Normalize == "lower" && strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}

// ValueEqual reports whether a value read from the upstream equals a
// configured or requested one under the field's declaration: its stand-ins
// for null read as null, a lower-cased field compares by case, numbers
// compare by value. fd may be nil.
func ValueEqual(got, want any, fd *FieldConfig) bool {
	if fd != nil && len(fd.NullValues) > 0 {
		if want != nil && IsNull(want, fd) {
			want = nil
		}
		if got != nil && IsNull(got, fd) {
			got = nil
		}
	}
	if want == nil {
		return got == nil
	}
	switch w := want.(type) {
	case string:
		g, ok := got.(string)
		if !ok {
			return false
		}
		if fd != nil && fd.Normalize == "lower" {
			return strings.EqualFold(g, w)
		}
		return g == w
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	case json.Number, float64:
		// Exactly: 9007199254740993 is not 9007199254740992, which a
		// double holds for both.
		same, _ := jsonvalue.SameNumber(got, w)
		return same
	}
	return false
}

// DisplayPath is how a configured path into an answer is shown: "." for
// the body itself.
func DisplayPath(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// ConvertScalar converts a caller's scalar value (JSON-decoded: string,
// json.Number, bool) to a field type: a number written as a string becomes
// the number, a number given for a string field its decimal text, "true"
// and "false" booleans. ok is false when the value has no form in that
// type ("abc" for an integer, 1.5 for an integer, an object).
func ConvertScalar(v any, typ string) (any, bool) {
	switch typ {
	case "string":
		switch x := v.(type) {
		case string:
			return x, true
		case json.Number:
			return x.String(), true
		}
	case "timestamp", "array":
		s, ok := v.(string)
		return s, ok
	case "integer", "number":
		var text string
		switch x := v.(type) {
		case json.Number:
			text = x.String()
		case string:
			text = strings.TrimSpace(x)
		case float64:
			text = strconv.FormatFloat(x, 'f', -1, 64)
		case int:
			text = strconv.Itoa(x)
		default:
			return nil, false
		}
		if typ == "integer" {
			n, err := strconv.ParseInt(text, 10, 64)
			if errors.Is(err, strconv.ErrRange) {
				// An id beyond int64 (an unsigned snowflake) is still
				// an integer: its digits, exactly.
				if b, ok := new(big.Int).SetString(text, 10); ok {
					return json.Number(b.String()), true
				}
			}
			if err != nil {
				return nil, false
			}
			return json.Number(strconv.FormatInt(n, 10)), true
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, false
		}
		return json.Number(text), true
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, true
		case string:
			switch strings.TrimSpace(x) {
			case "true":
				return true, true
			case "false":
				return false, true
			}
		}
	}
	return nil, false
}

// EqualInType reports whether an element read from the upstream equals a
// requested value when neither side declares the type: the requested value
// is read in the element's own type, so that 4 and "4" are equal and never
// silently differ.
func EqualInType(got, want any, fd *FieldConfig) bool {
	if ValueEqual(got, want, fd) {
		return true
	}
	switch got.(type) {
	case json.Number, float64:
		c, ok := ConvertScalar(want, "number")
		return ok && ValueEqual(got, c, fd)
	case string:
		c, ok := ConvertScalar(want, "string")
		return ok && ValueEqual(got, c, fd)
	case bool:
		c, ok := ConvertScalar(want, "boolean")
		return ok && ValueEqual(got, c, fd)
	}
	return false
}
