package config

import (
	"strings"

	"github.com/airlock-mcp/airlock/config/template"
)

// checkPathQuery reports a path template whose query does not parse.
func checkPathQuery(l *errList, p string, where []string) {
	if _, _, _, err := template.SplitPathQuery(p); err != nil {
		l.add(err.Error(), where...)
	}
}

// validateListPathQuery refuses a query in list.path: a list's parameters
// are list.params, which the dialect and the filters add to (a query
// written into the path would be sent escaped, as part of the path).
func validateListPathQuery(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	if strings.Contains(r.List.Path, "?") {
		l.add("a list's query parameters go in list.params (action: query, list: allpages), not in its path", at("list", "path")...)
	}
}
