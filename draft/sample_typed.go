package draft

import (
	"mime"
	"net/http"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// typedItems reads items whose every attribute is a DynamoDB
// AttributeValue ({"S": "x"}, {"N": "20"}): it returns them unwrapped, so
// that the fields are drafted from the values, and true. Items of which
// one attribute is a plain value are not typed: they are returned as
// they are, and false.
func typedItems(items []any) ([]any, bool) {
	if len(items) == 0 {
		return items, false
	}
	out := make([]any, len(items))
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok || len(obj) == 0 {
			return items, false
		}
		plain := make(map[string]any, len(obj))
		for k, v := range obj {
			d, err := jsonvalue.FromAttributeValue(v)
			if err != nil {
				return items, false
			}
			plain[k] = d
		}
		out[i] = plain
	}
	return out, true
}

// tableKey is a DynamoDB table's key as a Scan's answer shows it: the one
// attribute its LastEvaluatedKey names (a key with a sort key, or no
// LastEvaluatedKey at all, is a decision left to the user: no field of an
// item says which of them is its key).
func tableKey(doc any) string {
	lek, _ := jsonvalue.Get(doc, "LastEvaluatedKey")
	if m, ok := lek.(map[string]any); ok && len(m) == 1 {
		for k := range m {
			if k != "" && !strings.ContainsAny(k, ".[]") {
				return k
			}
		}
	}
	return config.Todo("the table's key attribute: a Scan's answer names it only in LastEvaluatedKey, which this sample did not show with one attribute")
}

// sampleMediaType is the sample answer's media type when it is JSON that
// airlock would not take as JSON without a declaration
// (application/x-amz-json-1.0): json_media_types then names it. "" for
// application/json, any +json, and anything that is not JSON by name.
func sampleMediaType(h http.Header) string {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt == "application/json" || strings.HasSuffix(mt, "+json") || !strings.Contains(mt, "json") {
		return ""
	}
	return mt
}
