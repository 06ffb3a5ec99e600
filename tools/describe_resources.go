package tools

import (
	"context"
	"sort"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
)

type describeArgs struct {
	Resource string `json:"resource"`
}

var describeInput = describeInputSchema()

func describeInputSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"resource": map[string]any{"type": "string", "minLength": 1, "examples": []any{"subscriptions"},
				"description": "Describe only this resource (default: all)."},
		},
		"additionalProperties": false,
	}
}

func describeDataSchema() map[string]any {
	return map[string]any{
		"type":     "object",
		"required": []any{"environment", "resources"},
		"properties": map[string]any{
			"environment": map[string]any{"type": "string"},
			"resources":   map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"name", "fields", "filters", "pagination", "limits"}}},
		},
	}
}

// DescribeResources is the describe_resources tool: what airlock can read,
// how completely, and within which limits.
func DescribeResources(d *Deps) Spec {
	return Spec{
		Name:        "describe_resources",
		Title:       "Describe the configured resources",
		Description: `Resources in detail: fields, filters, pagination consistency, budgets, actions (parameters, precondition, effect, approval).`,
		Input:       resourceSchema(describeInput, d.Runtime, "Default: all.", false, nil),
		Data:        describeDataSchema(),
		Hints:       NewHints(true, false, true, false),
		Handler:     d.describe,
	}
}

func (d *Deps) describe(_ context.Context, call *Call) *envelope.Envelope {
	var a describeArgs
	errs, bad := decodeArgs("describe_resources", describeInput, call.Raw, &a)
	names := d.Runtime.ResourceNames()
	if a.Resource != "" && !bad["resource"] {
		if _, ok := d.Runtime.Resources[a.Resource]; !ok {
			errs = append(errs, envelope.NewFieldError("resource", envelope.FieldUnknownResource, names))
		}
		names = []string{a.Resource}
	}
	if len(errs) > 0 {
		return invalid(errs)
	}
	var out []map[string]any
	for _, n := range names {
		r := d.Runtime.Resources[n]
		m := describeResource(r)
		m["actions"] = describeActions(d.Runtime, r)
		out = append(out, m)
	}
	return &envelope.Envelope{Data: map[string]any{"environment": d.Runtime.Environment, "resources": out}}
}

func describeResource(r *upstream.Resource) map[string]any {
	var fields []map[string]any
	for _, name := range sortedFieldNames(r) {
		f, _ := r.Field(name)
		m := map[string]any{"name": name, "type": f.Type, "nullable": f.Nullable}
		if len(f.Enum) > 0 {
			m["enum"] = f.Enum
		}
		if f.Sensitive {
			m["sensitive"] = true
			if f.Queryable {
				m["queryable"] = true
			}
		}
		if f.Deprecated {
			m["deprecated"] = true
		}
		if f.Decision || f.Permission {
			m["decision"] = true
		}
		if f.Permission {
			m["permission"] = true
		}
		if f.Required {
			m["required"] = true
		}
		if len(f.Aliases) > 0 {
			var as []string
			for _, a := range f.Aliases {
				as = append(as, a.Name+" until "+a.Until)
			}
			m["aliases"] = as
		}
		if f.Description != "" {
			m["description"] = f.Description
		}
		if name == r.Config.IDField {
			m["id"] = true
		}
		if name == r.Config.VersionField {
			m["version"] = true
		}
		fields = append(fields, m)
	}
	var filters []map[string]any
	for _, name := range sortedFilterNames(r) {
		fc := r.Config.Filters[name]
		m := map[string]any{"name": name, "op": "eq", "sent_upstream": fc.Param != "" || fc.MultiParam != "" || fc.Null != nil}
		if fc.Op != "" {
			m["op"] = fc.Op
		}
		if fc.Field != "" {
			m["field"] = fc.Field
		}
		if fc.Description != "" {
			m["description"] = fc.Description
		}
		filters = append(filters, m)
	}
	var sources []string
	for _, s := range r.Sources {
		sources = append(sources, s.Name)
	}
	l := r.Limits
	out := map[string]any{
		"name": r.Name, "description": r.Description, "upstream": r.Host(),
		"fields": fields, "default_fields": r.DefaultFields(), "filters": filters,
		"pagination": map[string]any{"dialect": r.Pagination.Dialect, "consistency": r.Consistency(), "page_size": r.Pagination.PageSize},
		"sources":    sources,
		"visibility": r.Visibility(),
		"limits": map[string]any{
			"max_items":      map[string]any{"default": defaultMaxItems(r), "cap": l.MaxItems.Cap},
			"max_pages":      map[string]any{"default": l.MaxPages.Default, "cap": l.MaxPages.Cap},
			"deadline_ms":    map[string]any{"default": l.DeadlineMS.Default, "cap": l.DeadlineMS.Cap},
			"response_bytes": l.ResponseBytes,
		},
	}
	if len(r.Config.DefaultFilter) > 0 {
		out["default_filter"] = r.Config.DefaultFilter
	}
	// The credential's form and where its secrets are read: what the
	// answers are visible to, never the secrets.
	if c := r.Upstream.Credential(); c != nil {
		out["credential"] = c
	}
	if r.Config.ResultCap > 0 {
		out["upstream_result_cap"] = r.Config.ResultCap
	}
	return out
}

func sortedFieldNames(r *upstream.Resource) []string {
	out := make([]string, 0, len(r.Config.Fields))
	for k := range r.Config.Fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedFilterNames(r *upstream.Resource) []string {
	out := make([]string, 0, len(r.Config.Filters))
	for k := range r.Config.Filters {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
