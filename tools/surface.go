package tools

import (
	"maps"
	"sort"
	"strings"

	"github.com/airlock-mcp/airlock/upstream"
)

// A model pays for every tool it is offered, on every turn: names,
// descriptions and input schemas. So the schemas a client lists are the
// validation schemas without the examples that field errors quote, with
// the configured resources as an enum and each resource's filters named,
// so that
// describe_resources is for detail rather than a first call that every
// session must make. What each problem code means is in docs/errors.md and
// in the problem itself (title, detail, next_action), not in descriptions.

// advertised returns the schema as clients list it: a deep copy without
// the examples, which only the field errors airlock writes quote, and the
// titles that name its Go types.
func advertised(schema map[string]any) map[string]any {
	out := without(schema, func(string, any) bool { return false })
	eachSchema(out, func(s map[string]any) {
		delete(s, "examples")
		delete(s, "title")
	})
	return out
}

// advertisedData returns a data schema as clients list it: without the
// additionalProperties:false that airlock's tests hold its own data to. A
// client that enforced it would refuse an answer that a later version
// adds a member to, and every listing would pay for it.
func advertisedData(schema map[string]any) map[string]any {
	return without(schema, func(k string, v any) bool { return k == "additionalProperties" && v == false })
}

// without returns a deep copy of schema without the keywords drop names.
func without(schema map[string]any, drop func(k string, v any) bool) map[string]any {
	out := make(map[string]any, len(schema))
	for k, v := range schema {
		if drop(k, v) {
			continue
		}
		out[k] = withoutValue(v, drop)
	}
	return out
}

func withoutValue(v any, drop func(k string, v any) bool) any {
	switch x := v.(type) {
	case map[string]any:
		return without(x, drop)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutValue(e, drop)
		}
		return out
	}
	return v
}

// resourceSchema sets the resource property of an advertised schema to the
// configured resources (those only keeps, or all), with each one's filters
// named when filters is set, described by what ("" for the enum alone).
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
		desc = strings.TrimSpace(desc + " Filters: " + strings.Join(parts, "; ") + ".")
	}
	p := maps.Clone(props["resource"].(map[string]any))
	if desc != "" {
		p["description"] = desc
	}
	if len(names) > 0 {
		// With the names listed, a length bound says nothing more, nor
		// does a description that would only say "resource".
		p["enum"] = names
		delete(p, "minLength")
		if desc == "" {
			delete(p, "description")
		}
	}
	props["resource"] = p
	return schema
}
