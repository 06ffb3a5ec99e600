package dialect

import (
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// valueText is one filter value as the API must receive it to read the
// value itself: after a comparison's declared operator (Redmine's
// updated_on=>=2026-01-01T00:00:00Z), else escaped by the filter's
// literal where it starts with an operator (cf_2==^beta). ok is false,
// with why, when no text carries it: the value holds a string the API
// splits values at, is empty, or starts with an operator the API has no
// escape for.
func valueText(fc *config.FilterConfig, s string) (text, why string, ok bool) {
	if fc.Operator == "" {
		return fc.Literal.Literal(s)
	}
	if why := fc.Literal.Uncarried(s); why != "" {
		return "", why, false
	}
	return fc.Operator + s, "", true
}

// joinedText is a list joined by its separator as the API must receive
// it: no member may hold a string the API splits at or be empty, and the
// whole is escaped where it starts with an operator (Redmine reads the
// operator once, then splits: cf_2==^beta|!ops asks for either text).
func joinedText(fc *config.FilterConfig, parts []string) (text, why string, ok bool) {
	for _, s := range parts {
		if why := fc.Literal.Uncarried(s); why != "" {
			return "", why, false
		}
	}
	return fc.Literal.Escaped(strings.Join(parts, separatorOf(fc)))
}

// wireValue is a filter value as placed in the request: its text as
// valueText writes it in a query, and in a body or variables a string
// so written (any other JSON value carries no text to misread, and is
// placed as it is, unless a comparison's operator makes it text).
func wireValue(kind string, fc *config.FilterConfig, v any) (any, string, bool) {
	s, isStr := v.(string)
	if kind != config.ListQuery && !isStr && fc.Operator == "" {
		return v, "", true
	}
	if !isStr {
		s = jsonvalue.String(v)
	}
	return valueText(fc, s)
}
