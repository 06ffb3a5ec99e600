package dialect

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// CheckFilter validates a caller's filter against the resource and returns
// every problem at once. Values are JSON-decoded (json.Number for numbers).
func (r *List) CheckFilter(filter map[string]any) []envelope.FieldError {
	_, errs := r.TypedFilter(filter)
	return errs
}

// TypedFilter validates a caller's filter and converts each value to the
// type the filtered field holds (an array's declared element type for
// contains), so that 4 and "4" mean the same integer: the result is what
// is sent upstream, compared and fingerprinted. A value that does not
// convert is refused, every one at once. Values are JSON-decoded
// (json.Number for numbers).
func (r *List) TypedFilter(filter map[string]any) (map[string]any, []envelope.FieldError) {
	var errs []envelope.FieldError
	out := make(map[string]any, len(filter))
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		path := "filter." + name
		fc, ok := r.Config.Filters[name]
		if !ok {
			errs = append(errs, envelope.NewFieldError(path, envelope.FieldUnknownFilter, r.filterExample()))
			continue
		}
		if fc != nil && fc.Search {
			v, fe, bad := typedSearch(path, filter[name])
			if bad {
				errs = append(errs, fe)
			}
			out[name] = v
			continue
		}
		field := fc.FieldOf(name)
		fd, _ := r.Field(field)
		v := filter[name]
		if _, isArr := v.([]any); config.Comparison(fc.Op) && (isArr || v == nil) {
			// A comparison takes one value: any-of or null has no order.
			errs = append(errs, envelope.NewFieldError(path, envelope.FieldInvalid, exampleFor(fd, fc)))
			continue
		}
		if arr, isArr := v.([]any); isArr {
			if len(arr) == 0 {
				errs = append(errs, envelope.NewFieldError(path, envelope.FieldInvalid, []any{exampleFor(fd, fc)}))
				continue
			}
			conv := make([]any, len(arr))
			for i, e := range arr {
				c, fe, bad := typedScalar(path+"["+strconv.Itoa(i)+"]", e, fd, fc)
				if bad {
					errs = append(errs, fe)
				}
				conv[i] = c
			}
			out[name] = conv
			continue
		}
		c, fe, bad := typedScalar(path, v, fd, fc)
		if bad {
			errs = append(errs, fe)
		} else if s, isStr := c.(string); config.Comparison(fc.Op) && fd != nil && fd.Type == "timestamp" && (!isStr || !rfc3339(s)) {
			// An instant that does not parse has no order.
			errs = append(errs, envelope.NewFieldError(path, envelope.FieldType, exampleFor(fd, fc)))
		}
		out[name] = c
	}
	return out, errs
}

func (r *List) filterExample() map[string]any {
	for _, name := range slices.Sorted(maps.Keys(r.Config.Filters)) {
		fd, _ := r.Field(r.Config.Filters[name].FieldOf(name))
		return map[string]any{name: exampleFor(fd, r.Config.Filters[name])}
	}
	return map[string]any{}
}

// filterType is the type a filter's value is compared in: the field's, or
// for contains the element type of the array ("" when undeclared: then
// each element is compared in the type the item holds).
func filterType(fd *config.FieldConfig, fc *config.FilterConfig) string {
	if fc != nil && fc.Op == "contains" {
		return fd.Elements
	}
	return fd.Type
}

// typedScalar converts one filter value to the filter's type, or says why
// it cannot be.
func typedScalar(path string, v any, fd *config.FieldConfig, fc *config.FilterConfig) (any, envelope.FieldError, bool) {
	if fd == nil {
		return v, envelope.FieldError{}, false
	}
	refuse := func(code envelope.FieldCode, example any) (any, envelope.FieldError, bool) {
		return v, envelope.NewFieldError(path, code, example), true
	}
	if v == nil {
		if !fd.Nullable {
			return refuse(envelope.FieldType, exampleFor(fd, fc))
		}
		return nil, envelope.FieldError{}, false
	}
	want := filterType(fd, fc)
	if want == "" {
		// An element of an undeclared type: any scalar, compared in the
		// type each item holds.
		switch v.(type) {
		case string, json.Number, bool:
			return v, envelope.FieldError{}, false
		}
		return refuse(envelope.FieldType, exampleFor(fd, fc))
	}
	if want == "object" {
		return refuse(envelope.FieldInvalid, nil)
	}
	c, ok := config.ConvertScalar(v, want)
	if !ok {
		return refuse(envelope.FieldType, exampleFor(fd, fc))
	}
	if s, isStr := c.(string); isStr && want == "string" && len(fd.Enum) > 0 && !config.InEnum(s, fd) {
		return refuse(envelope.FieldEnum, fd.Enum[0])
	}
	return c, envelope.FieldError{}, false
}

func exampleFor(fd *config.FieldConfig, fc *config.FilterConfig) any {
	if fd == nil {
		return "value"
	}
	t := fd.Type
	if fc != nil && fc.Op == "contains" {
		t = fd.Elements
	}
	switch {
	case len(fd.Enum) > 0:
		return fd.Enum[0]
	case t == "integer" || t == "number":
		return 1
	case t == "boolean":
		return true
	case t == "timestamp":
		return "2026-01-31T00:00:00Z"
	}
	return "value"
}

// Matches reports whether an item matches every filter. airlock applies
// every filter itself, including those it also sends upstream: an upstream
// that ignores a parameter must not widen the scope.
func (r *List) Matches(doc map[string]any, filter map[string]any) bool {
	for name, want := range filter {
		fc := r.Config.Filters[name]
		if fc != nil && fc.Search {
			// The upstream's judgment: nothing in the item to re-check it
			// against (SEARCH_MATCHES_UNVERIFIED says so).
			continue
		}
		field := fc.FieldOf(name)
		fd, _ := r.Field(field)
		got, _ := jsonvalue.Get(doc, r.FieldPath(field))
		if fc != nil && config.Comparison(fc.Op) {
			if !compareValue(got, want, fd, fc.Op) {
				return false
			}
			continue
		}
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
			if fd == nil || fd.Elements == "" {
				if config.EqualInType(e, want, fd) {
					return true
				}
			} else if config.ValueEqual(e, want, fd) {
				return true
			}
		}
		return false
	}
	return config.ValueEqual(got, want, fd)
}

// Project returns the requested fields of an item (by declared name) and
// the names of requested fields the item lacks (absent, not null).
func (r *List) Project(doc map[string]any, fields []string) (map[string]any, []string) {
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
func (r *List) CountFromTotal(filter map[string]any, groupBy []string) bool {
	if !r.Pagination.TotalExact || len(groupBy) > 0 {
		return false
	}
	for _, form := range r.SendFilters(r.newParams(r.Sources[0]), filter) {
		if !form.Sent {
			return false
		}
	}
	return true
}

// paramToFilter maps an upstream query parameter back to the filter that
// sent it, so that an upstream's field error names the tool argument.
func (r *List) paramToFilter(param string) string {
	for _, name := range slices.Sorted(maps.Keys(r.Config.Filters)) {
		if fc := r.Config.Filters[name]; fc != nil && slices.Contains(ParamNames(fc), param) {
			return "filter." + name
		}
	}
	return ""
}

// compareValue reports whether an item's value compares with want as the
// operator says, in the field's type: numbers as numbers, timestamps as
// instants, strings by their bytes. A null, missing or uncomparable value
// matches no comparison.
func compareValue(got, want any, fd *config.FieldConfig, op string) bool {
	if got == nil || want == nil {
		return false
	}
	c, ok := 0, false
	switch {
	case fd != nil && fd.Type == "timestamp":
		gs, ok1 := got.(string)
		ws, ok2 := want.(string)
		g, err1 := time.Parse(time.RFC3339Nano, gs)
		w, err2 := time.Parse(time.RFC3339Nano, ws)
		if ok1 && ok2 && err1 == nil && err2 == nil {
			c, ok = g.Compare(w), true
		}
	default:
		g, ok1 := jsonvalue.Float(got)
		w, ok2 := jsonvalue.Float(want)
		gs, isS1 := got.(string)
		ws, isS2 := want.(string)
		switch {
		case (fd == nil || fd.Type == "string") && isS1 && isS2:
			c, ok = strings.Compare(gs, ws), true
		case ok1 && ok2 && !isS1 && !isS2:
			c, ok = cmp.Compare(g, w), true
		}
	}
	if !ok {
		return false
	}
	switch op {
	case "gt":
		return c > 0
	case "gte":
		return c >= 0
	case "lt":
		return c < 0
	}
	return c <= 0
}

func rfc3339(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}
