package upstream

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// CheckFilter validates a caller's filter against the resource and returns
// every problem at once. Values are JSON-decoded (json.Number for numbers).
func (r *Resource) CheckFilter(filter map[string]any) []envelope.FieldError {
	var errs []envelope.FieldError
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		path := "filter." + name
		fc, ok := r.Config.Filters[name]
		if !ok {
			errs = append(errs, envelope.NewFieldError(path, envelope.FieldUnknownFilter, r.filterExample()))
			continue
		}
		field := fc.FieldOf(name)
		fd, _ := r.Field(field)
		v := filter[name]
		if arr, isArr := v.([]any); isArr {
			if len(arr) == 0 {
				errs = append(errs, envelope.NewFieldError(path, envelope.FieldInvalid, []any{exampleFor(fd)}))
				continue
			}
			for i, e := range arr {
				if fe, bad := checkScalar(path+"["+strconv.Itoa(i)+"]", e, fd, fc); bad {
					errs = append(errs, fe)
				}
			}
			continue
		}
		if fe, bad := checkScalar(path, v, fd, fc); bad {
			errs = append(errs, fe)
		}
	}
	return errs
}

func (r *Resource) filterExample() map[string]any {
	for _, name := range slices.Sorted(maps.Keys(r.Config.Filters)) {
		fd, _ := r.Field(r.Config.Filters[name].FieldOf(name))
		return map[string]any{name: exampleFor(fd)}
	}
	return map[string]any{}
}

func checkScalar(path string, v any, fd *config.FieldConfig, fc *config.FilterConfig) (envelope.FieldError, bool) {
	if fd == nil {
		return envelope.FieldError{}, false
	}
	if v == nil {
		if !fd.Nullable {
			return envelope.NewFieldError(path, envelope.FieldType, exampleFor(fd)), true
		}
		return envelope.FieldError{}, false
	}
	want := fd.Type
	if fc != nil && fc.Op == "contains" {
		want = "string"
	}
	switch want {
	case "string", "timestamp", "array":
		s, ok := v.(string)
		if !ok {
			return envelope.NewFieldError(path, envelope.FieldType, exampleFor(fd)), true
		}
		if len(fd.Enum) > 0 && !config.InEnum(s, fd) {
			return envelope.NewFieldError(path, envelope.FieldEnum, fd.Enum[0]), true
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return envelope.NewFieldError(path, envelope.FieldType, exampleFor(fd)), true
		}
		if want == "integer" {
			if _, err := n.Int64(); err != nil {
				return envelope.NewFieldError(path, envelope.FieldType, exampleFor(fd)), true
			}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return envelope.NewFieldError(path, envelope.FieldType, true), true
		}
	default:
		return envelope.NewFieldError(path, envelope.FieldInvalid, nil), true
	}
	return envelope.FieldError{}, false
}

func exampleFor(fd *config.FieldConfig) any {
	if fd == nil {
		return "value"
	}
	switch {
	case len(fd.Enum) > 0:
		return fd.Enum[0]
	case fd.Type == "integer" || fd.Type == "number":
		return 1
	case fd.Type == "boolean":
		return true
	case fd.Type == "timestamp":
		return "2026-01-31T00:00:00Z"
	}
	return "value"
}

// Matches reports whether an item matches every filter. airlock applies
// every filter itself, including those it also sends upstream: an upstream
// that ignores a parameter must not widen the scope.
func (r *Resource) Matches(doc map[string]any, filter map[string]any) bool {
	for name, want := range filter {
		fc := r.Config.Filters[name]
		field := fc.FieldOf(name)
		fd, _ := r.Field(field)
		got, _ := jsonvalue.Get(doc, r.FieldPath(field))
		contains := fc != nil && fc.Op == "contains"
		if !matchValue(got, want, fd, contains) {
			return false
		}
	}
	return true
}

func matchValue(got, want any, fd *config.FieldConfig, contains bool) bool {
	if arr, ok := want.([]any); ok {
		for _, w := range arr {
			if matchValue(got, w, fd, contains) {
				return true
			}
		}
		return false
	}
	if contains {
		list, ok := got.([]any)
		if !ok {
			return false
		}
		for _, e := range list {
			if config.ValueEqual(e, want, fd) {
				return true
			}
		}
		return false
	}
	return config.ValueEqual(got, want, fd)
}

// Project returns the requested fields of an item (by declared name) and
// the names of requested fields the item lacks (absent, not null).
func (r *Resource) Project(doc map[string]any, fields []string) (map[string]any, []string) {
	out := make(map[string]any, len(fields))
	var missing []string
	for _, f := range fields {
		v, ok := jsonvalue.Get(doc, r.FieldPath(f))
		if !ok {
			missing = append(missing, f)
			continue
		}
		out[f] = v
	}
	return out, missing
}

// CountFromTotal reports whether a counts-only scan with this filter may be
// answered from the upstream's total: the resource declares its total
// exact, and every filter is sent upstream, whole and intact, in a form it
// declares.
func (r *Resource) CountFromTotal(filter map[string]any, groupBy []string) bool {
	if !r.Pagination.TotalExact || len(groupBy) > 0 {
		return false
	}
	for _, form := range r.sendFilters(r.newParams(r.Sources[0]), filter) {
		if !form.sent {
			return false
		}
	}
	return true
}

// paramToFilter maps an upstream query parameter back to the filter that
// sent it, so that an upstream's field error names the tool argument.
func (r *Resource) paramToFilter(param string) string {
	for _, name := range slices.Sorted(maps.Keys(r.Config.Filters)) {
		if fc := r.Config.Filters[name]; fc != nil && slices.Contains(paramNames(fc), param) {
			return "filter." + name
		}
	}
	return ""
}
