package tools

import (
	"maps"
	"sort"
	"strings"

	"github.com/airlock-mcp/airlock/upstream"
)

// A model pays for every tool it is offered, on every turn: names,
// descriptions and input schemas. So the schemas a client lists are the
// validation schemas without what only airlock needs (the examples that
// field errors quote, the bounds it checks itself), with the configured
// resources as an enum and each resource's filters named, so that
// describe_resources is for detail rather than a first call that every
// session must make. What each problem code means is in docs/errors.md and
// in the problem itself (title, detail, next_action), not in descriptions.

// filterValue is one filter's value, in single-type branches that
// function-calling dialects with one type per schema (Gemini) accept.
var filterValue = map[string]any{"anyOf": []any{
	map[string]any{"type": "string"}, map[string]any{"type": "number"}, map[string]any{"type": "boolean"}, map[string]any{"type": "null"},
	map[string]any{"type": "array"},
}}

// advertised returns the schema as clients list it: a deep copy without
// examples and bounds (airlock checks them; its field errors name them).
func advertised(schema map[string]any) map[string]any {
	out := make(map[string]any, len(schema))
	for k, v := range schema {
		switch k {
		case "examples", "minLength", "maxLength", "minimum", "maximum", "maxItems", "pattern":
			continue
		}
		out[k] = advertisedValue(v)
	}
	return out
}

func advertisedValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return advertised(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = advertisedValue(e)
		}
		return out
	}
	return v
}

// resourceSchema sets the resource property of an advertised schema to the
// configured resources (those only keeps, or all), with each one's filters
// named when filters is set.
func resourceSchema(schema map[string]any, rt *upstream.Runtime, what string, filters bool, only func(*upstream.Resource) bool) map[string]any {
	schema = advertised(schema)
	props := maps.Clone(schema["properties"].(map[string]any))
	schema["properties"] = props
	var names []any
	var parts []string
	var all []string
	if rt != nil {
		all = rt.ResourceNames()
	}
	for _, n := range all {
		r := rt.Resources[n]
		if only != nil && !only(r) {
			continue
		}
		names = append(names, n)
		filters := make([]string, 0, len(r.Config.Filters))
		for f := range r.Config.Filters {
			filters = append(filters, f)
		}
		sort.Strings(filters)
		parts = append(parts, n+" ("+strings.Join(filters, ", ")+")")
	}
	desc := what
	if filters && len(parts) > 0 {
		desc += " Filters: " + strings.Join(parts, "; ") + "."
	}
	p := map[string]any{"type": "string", "description": desc}
	if len(names) > 0 {
		p["enum"] = names
	}
	props["resource"] = p
	return schema
}
