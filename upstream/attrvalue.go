package upstream

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// DynamoDB's AttributeValue (item_encoding: dynamodb): every attribute of
// an item is an object naming its type, {"S": "x"}, {"N": "20"},
// {"BOOL": true}, {"NULL": true}, {"L": […]}, {"M": {…}}, {"SS": […]},
// {"NS": […]}, {"B": "…"}, {"BS": […]}. Items are unwrapped once, where
// the fields the API encodes are decoded (decodeFields), so that filters,
// contracts, normalization, review and digests see the values
// themselves; writes wrap them again (Encode). A number is read from its
// text as it was written (json.Number), never through float64: 2^53+1
// stays 2^53+1. {"NULL": true} reads as null, as an absent attribute
// does.

// avNumber is a number as DynamoDB writes one (N, NS): a JSON number.
var avNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// fromAttributeValues unwraps an item in place: each member's
// AttributeValue is replaced by its plain value.
func fromAttributeValues(doc map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		v, err := fromAttributeValue(doc[k], 0)
		if err != nil {
			return BadResponse("attribute %q is not a DynamoDB AttributeValue as item_encoding declares: %s", k, err.Error())
		}
		doc[k] = v
	}
	return nil
}

// maxAVDepth bounds nesting (DynamoDB allows 32 levels).
const maxAVDepth = 64

// fromAttributeValue unwraps one AttributeValue: an object with exactly
// one member, whose name is a type tag and whose value has that type's
// form. Anything else is unreadable, never guessed at.
func fromAttributeValue(v any, depth int) (any, error) {
	if depth > maxAVDepth {
		return nil, fmt.Errorf("nested too deep")
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, fmt.Errorf("not an object with one type tag")
	}
	for tag, x := range m {
		switch tag {
		case "S", "B":
			if s, ok := x.(string); ok {
				return s, nil
			}
		case "N":
			if n, ok := avNum(x); ok {
				return n, nil
			}
		case "BOOL":
			if b, ok := x.(bool); ok {
				return b, nil
			}
		case "NULL":
			// {"NULL": false} is not a value DynamoDB writes.
			if b, ok := x.(bool); ok && b {
				return nil, nil
			}
		case "L":
			if l, ok := x.([]any); ok {
				out := make([]any, len(l))
				for i, e := range l {
					d, err := fromAttributeValue(e, depth+1)
					if err != nil {
						return nil, err
					}
					out[i] = d
				}
				return out, nil
			}
		case "M":
			if mm, ok := x.(map[string]any); ok {
				out := make(map[string]any, len(mm))
				for k, e := range mm {
					d, err := fromAttributeValue(e, depth+1)
					if err != nil {
						return nil, err
					}
					out[k] = d
				}
				return out, nil
			}
		case "SS", "BS", "NS":
			if l, ok := x.([]any); ok {
				out := make([]any, len(l))
				for i, e := range l {
					var ok bool
					if tag == "NS" {
						out[i], ok = avNum(e)
					} else {
						out[i], ok = e.(string)
					}
					if !ok {
						return nil, fmt.Errorf("a member of %s is not of its type", tag)
					}
				}
				return out, nil
			}
		default:
			return nil, fmt.Errorf("unknown type tag %q", tag)
		}
		return nil, fmt.Errorf("the %s value is not of its type", tag)
	}
	return nil, nil // unreachable: one member
}

// avNum reads a DynamoDB number: a string holding a JSON number.
func avNum(x any) (json.Number, bool) {
	s, ok := x.(string)
	if !ok || !avNumber.MatchString(s) {
		return "", false
	}
	return json.Number(s), true
}

// toAttributeValue wraps a plain value as DynamoDB reads it: a string as
// S (as N when the field's type is a number, its text kept), a number as
// N from its exact text, a boolean as BOOL, null as NULL, a list as L (as
// SS or NS where the field declares a set), an object as M.
func toAttributeValue(v any, fd *config.FieldConfig) any {
	typ, elems := "", ""
	if fd != nil {
		typ, elems = fd.Type, fd.Elements
	}
	switch x := v.(type) {
	case nil:
		return map[string]any{"NULL": true}
	case bool:
		return map[string]any{"BOOL": x}
	case json.Number:
		return map[string]any{"N": x.String()}
	case float64:
		return map[string]any{"N": jsonvalue.String(x)}
	case int:
		return map[string]any{"N": fmt.Sprint(x)}
	case int64:
		return map[string]any{"N": fmt.Sprint(x)}
	case string:
		if (typ == "integer" || typ == "number") && avNumber.MatchString(x) {
			return map[string]any{"N": x}
		}
		return map[string]any{"S": x}
	case []any:
		if fd != nil && fd.Set != "" {
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = jsonvalue.String(e)
			}
			return map[string]any{fd.Set: out}
		}
		out := make([]any, len(x))
		for i, e := range x {
			var efd *config.FieldConfig
			if elems != "" {
				efd = &config.FieldConfig{Type: elems}
			}
			out[i] = toAttributeValue(e, efd)
		}
		return map[string]any{"L": out}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toAttributeValue(e, nil)
		}
		return map[string]any{"M": out}
	}
	return map[string]any{"S": jsonvalue.String(v)}
}
