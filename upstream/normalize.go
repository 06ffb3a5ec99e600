package upstream

import (
	"maps"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// fieldNorm rewrites one field's values into the declared form: case and
// whitespace (normalize), the upstream's stand-ins for null (null_values)
// and timestamp layouts (layout). A field whose value was rewritten is
// named in VALUE_NORMALIZED.
type fieldNorm struct {
	name, path string
	normalize  string
	nulls      []any
	layout     string
}

func fieldNorms(r *Resource) []fieldNorm {
	var out []fieldNorm
	for _, name := range slices.Sorted(maps.Keys(r.Config.Fields)) {
		f := r.Config.Fields[name]
		if f == nil || (f.Normalize == "" && len(f.NullValues) == 0 && f.Layout == "") {
			continue
		}
		nulls := make([]any, len(f.NullValues))
		for i, v := range f.NullValues {
			nulls[i] = config.NormalizeValue(v)
		}
		out = append(out, fieldNorm{name: name, path: r.FieldPath(name), normalize: f.Normalize, nulls: nulls, layout: f.Layout})
	}
	return out
}

// apply rewrites the field in doc, wherever its path leads (through an
// array by an element's index: custom_fields.1.value), and reports
// whether it changed: a rewrite the item does not show afterwards is
// never reported as done.
func (n fieldNorm) apply(doc map[string]any) bool {
	v, ok := jsonvalue.Get(doc, n.path)
	if !ok || v == nil {
		return false
	}
	for _, nv := range n.nulls {
		if jsonvalue.SameScalar(v, nv) {
			return n.rewrite(doc, nil)
		}
	}
	if n.layout != "" {
		if ts, ok := config.NormalizeTimestamp(v, n.layout); ok {
			return n.rewrite(doc, ts)
		}
	}
	str, isStr := v.(string)
	if !isStr || n.normalize == "" {
		return false
	}
	out := str
	switch n.normalize {
	case "lower":
		out = strings.ToLower(strings.TrimSpace(str))
	case "trim":
		out = strings.TrimSpace(str)
	}
	if out == str {
		return false
	}
	return n.rewrite(doc, out)
}

// rewrite sets the field's value and reports whether the item now holds
// it.
func (n fieldNorm) rewrite(doc map[string]any, v any) bool {
	jsonvalue.Set(doc, n.path, v)
	got, ok := jsonvalue.Get(doc, n.path)
	return ok && (got == nil && v == nil || jsonvalue.SameScalar(got, v))
}
