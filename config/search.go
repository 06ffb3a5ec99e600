package config

// SearchFilterConfig declares a filter that is an upstream search
// (MediaWiki's list=search&srsearch=, GitHub's search q=, a Lucene query
// string): its value is sent in param as the caller wrote it, and what it
// matches is the upstream's judgment, which airlock cannot re-check on the
// items it reads. Every answer whose filter holds one says so
// (SEARCH_MATCHES_UNVERIFIED, scope.search), never complete: an absence
// found through a search proves nothing. It is inlined in FilterConfig.
type SearchFilterConfig struct {
	Search bool `yaml:"search"`
}

// validateSearchFilter checks a search filter: a parameter to carry it,
// and nothing that would compare a field, which a search does not.
func validateSearchFilter(l *errList, f *FilterConfig, p func(k ...string) []string) {
	if f.Param == "" {
		l.add("a search is sent upstream: set param (srsearch, q)", p("param")...)
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"field", f.Field != ""}, {"op", f.Op != ""}, {"multi", f.Multi != ""}, {"multi_param", f.MultiParam != ""},
		{"separator", f.Separator != ""}, {"null_param", f.NullParam != ""}, {"is_null", f.Null != nil},
		{"literal", f.Literal != nil}, {"operator", f.Operator != ""}, {"param_compares", f.ParamCompares}} {
		if k.set {
			l.add("a search matches what the upstream judges, not a field's value: "+k.key+" does not apply", p(k.key)...)
		}
	}
}
