package dialect

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// DynamoDB's AttributeValue (item_encoding: dynamodb): every attribute of an
// item is an object naming its type, {"S": "x"}, {"N": "20"}, {"BOOL":
// true}, {"NULL": true}, {"L": […]}, {"M": {…}}, {"SS": […]}, {"NS": […]},
// {"B": "…"}, {"BS": […]}. Items are unwrapped once, where the fields the
// API encodes are decoded (package upstream's Resource.DecodeFields), so
// that filters, contracts, normalization, review and digests see the values
// themselves; writes wrap them again (Encode). A number is read from its
// text as it was written (json.Number), never through float64: 2^53+1 stays
// 2^53+1. {"NULL": true} reads as null, as an absent attribute does.

// FromAttributeValues unwraps an item in place: each member's
// AttributeValue is replaced by its plain value.
func FromAttributeValues(doc map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		v, err := jsonvalue.FromAttributeValue(doc[k])
		if err != nil {
			return transport.BadResponse("attribute %q is not a DynamoDB AttributeValue as item_encoding declares: %s", k, err.Error())
		}
		doc[k] = v
	}
	return nil
}

// ToAttributeValue wraps a plain value as DynamoDB reads it: a string as
// S (as N when the field's type is a number, its text kept), a number as
// N from its exact text, a boolean as BOOL, null as NULL, a list as L (as
// SS or NS where the field declares a set), an object as M.
func ToAttributeValue(v any, fd *config.FieldConfig) any {
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
		if (typ == "integer" || typ == "number") && jsonvalue.IsAttributeNumber(x) {
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
			out[i] = ToAttributeValue(e, efd)
		}
		return map[string]any{"L": out}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = ToAttributeValue(e, nil)
		}
		return map[string]any{"M": out}
	}
	return map[string]any{"S": jsonvalue.String(v)}
}
