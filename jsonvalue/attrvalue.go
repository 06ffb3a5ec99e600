package jsonvalue

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// DynamoDB's AttributeValue: every attribute of an item is an object
// naming its type, {"S": "x"}, {"N": "20"}, {"BOOL": true}, {"NULL": true},
// {"L": […]}, {"M": {…}}, {"SS": […]}, {"NS": […]}, {"B": "…"}, {"BS": […]}.
// A number is read from its text as it was written (json.Number), never
// through float64: 2^53+1 stays 2^53+1. {"NULL": true} reads as null.

// FromAttributeValue unwraps one AttributeValue into its plain value; an
// object that is not one (no type tag, two, a value not of its tag's
// type) is an error, never guessed at.
func FromAttributeValue(v any) (any, error) { return fromAttributeValue(v, 0) }

// IsAttributeNumber says whether s is a number as DynamoDB writes one.
func IsAttributeNumber(s string) bool { return avNumber.MatchString(s) }

// avNumber is a number as DynamoDB writes one (N, NS): a JSON number.
var avNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

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
