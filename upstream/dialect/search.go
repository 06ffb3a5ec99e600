package dialect

import (
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/airlock-mcp/airlock/envelope"
)

// SignalSearch is SEARCH_MATCHES_UNVERIFIED's signal: a filter of the
// scope is an upstream search.
const SignalSearch = "upstream_search"

// maxSearchBytes bounds a search's text.
const maxSearchBytes = 1000

// typedSearch checks a search filter's value: one non-empty string, sent
// as written (a list, a number or null is no search text).
func typedSearch(path string, v any) (any, envelope.FieldError, bool) {
	s, ok := v.(string)
	if !ok || s == "" || len(s) > maxSearchBytes || !utf8.ValidString(s) {
		return v, envelope.NewFieldError(path, envelope.FieldType, "words to search for"), true
	}
	return s, envelope.FieldError{}, false
}

// SearchScope names the filters of filter that are upstream searches, and
// the parameters that carry them, for scope.search; nil when there are
// none. Their matches are the upstream's claim: every answer over such a
// scope is SEARCH_MATCHES_UNVERIFIED.
func (r *List) SearchScope(filter map[string]any) *envelope.ScopeSearch {
	var out *envelope.ScopeSearch
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		fc := r.Config.Filters[name]
		if fc == nil || !fc.Search {
			continue
		}
		if out == nil {
			out = &envelope.ScopeSearch{Filters: []string{}, Params: []string{}, MatchedBy: "upstream"}
		}
		out.Filters = append(out.Filters, name)
		out.Params = append(out.Params, fc.Param)
	}
	return out
}

// sendSearches places the filter's searches alone: a probe leaves out the
// filters that narrow a list, but a search endpoint (MediaWiki's
// list=search) answers nothing without its search, and a probe that is
// refused proves nothing.
func (r *List) sendSearches(p *Params, filter map[string]any) {
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		if fc := r.Config.Filters[name]; fc != nil && fc.Search {
			r.placeFilter(p, name, fc, filter[name])
		}
	}
}
