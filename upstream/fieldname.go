package upstream

import (
	"maps"
	"slices"
)

// FieldName maps a field an upstream named in a validation error to a name
// airlock may show: the filter argument that sent the query parameter
// (filter.X), or upstream.F when F is a field the resource declares (by
// name or path); "" for anything else.
func (r *Resource) FieldName(name string) string {
	if f := r.paramToFilter(name); f != "" {
		return f
	}
	for _, fname := range slices.Sorted(maps.Keys(r.Config.Fields)) {
		if fname == name || r.FieldPath(fname) == name {
			return "upstream." + fname
		}
	}
	return ""
}

// FieldName maps a field an upstream named in its answer to a write: the
// action parameter the request body took it from (action.params.X), else
// a declared field of the resource (see Resource.FieldName); "" otherwise.
func (a *Action) FieldName(name string) string {
	if p := a.Config.ParamFor(name); p != "" {
		return p
	}
	if a.Resource != nil {
		return a.Resource.FieldName(name)
	}
	return ""
}
