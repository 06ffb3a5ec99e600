package config

import "strings"

// DialectSearchAfter continues after the last item's sort values
// (Elasticsearch/OpenSearch search_after), optionally in a point in time.
const DialectSearchAfter = "search_after"

// searchAfterKeys are the keys the search_after dialect reads beyond
// sharedKeys.
type searchAfterKeys struct {
	SortValues  string     `yaml:"sort_values"`
	SearchAfter string     `yaml:"search_after_param"`
	PIT         *PITConfig `yaml:"pit"`
}

// resolveSearchAfter fills in the search_after dialect's defaults:
// Elasticsearch's names, its total and the total's relation.
func resolveSearchAfter(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "size")
	setDefault(&p.SearchAfter, "search_after")
	setDefault(&p.SortValues, "sort")
	if p.TotalHeader == "" {
		setDefault(&p.Total, "hits.total.value")
		if p.Total == "hits.total.value" {
			setDefault(&p.TotalRelation, "hits.total.relation")
		}
	}
	if p.PIT != nil {
		setDefault(&p.Consistency, ConsistencySnapshot)
	}
	setDefault(&p.Consistency, ConsistencyKeyset)
}

// checkSearchAfter checks the point in time, which is the list's
// snapshot.
func checkSearchAfter(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	p := r.Pagination.PIT
	if p == nil {
		return
	}
	if p.Open == "" || !strings.HasPrefix(p.Open, "/") || p.ID == "" || p.Param == "" {
		l.add("open (an absolute path), id and param are required", at("pagination", "pit")...)
	}
	if r.Pagination.Snapshot != nil {
		l.add("a search_after list holds its point in time (pit) as its snapshot", at("pagination", "snapshot")...)
	}
}
