package config

import (
	"fmt"
	"maps"
	"slices"

	"github.com/airlock-mcp/airlock/config/strictyaml"
)

// Write body encodings.
const (
	EncodingJSON = "json"
	// EncodingForm sends the body as application/x-www-form-urlencoded:
	// a mapping of scalar values (MediaWiki's action=edit takes its text,
	// summary and token so).
	EncodingForm = "form"
)

// validateEncoding checks a write's body encoding: form needs a body that
// is a mapping of scalars (or templates of them), and no GraphQL.
func validateEncoding(l *errList, rq *WriteRequestConfig, at func(k ...string) []string) {
	switch rq.Encoding {
	case "", EncodingJSON:
		return
	case EncodingForm:
	default:
		l.add("must be json (the default) or form", at("request", "encoding")...)
		return
	}
	if rq.GraphQL != "" {
		l.add("a GraphQL mutation is posted as JSON", at("request", "encoding")...)
	}
	body, ok := strictyaml.JSONValue(rq.Body).(map[string]any)
	if !ok {
		l.add("a form body is a mapping of field: value", at("request", "body")...)
		return
	}
	for _, k := range slices.Sorted(maps.Keys(body)) {
		switch body[k].(type) {
		case string, int, int64, float64, bool:
		default:
			l.add(fmt.Sprintf("a form field is one value: %q is a list or a mapping", k), at("request", "body", k)...)
		}
	}
}
