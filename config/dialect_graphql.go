package config

import (
	"fmt"
	"strings"
)

// DialectGraphQL pages a GraphQL connection (pageInfo, nodes/edges).
const DialectGraphQL = "graphql"

// graphqlKeys are the keys the graphql dialect reads beyond sharedKeys:
// the connection, and the names in it of the end flag and cursor.
type graphqlKeys struct {
	Connection  string `yaml:"connection"`
	CursorParam string `yaml:"cursor_param"`
	HasMore     string `yaml:"has_more"`
	NextCursor  string `yaml:"next_cursor"`
}

// resolveGraphQL fills in the graphql dialect's defaults: Relay's
// connection names.
func resolveGraphQL(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "first")
	setDefault(&p.CursorParam, "after")
	setDefault(&p.HasMore, "pageInfo.hasNextPage")
	setDefault(&p.NextCursor, "pageInfo.endCursor")
	setDefault(&p.Total, "totalCount")
	setDefault(&p.Consistency, ConsistencyKeyset)
}

// checkGraphQL checks the query document and the connection.
func checkGraphQL(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	pg := r.Pagination
	if pg.PageSizeParam == NoPageSize {
		l.add("a GraphQL connection takes its page size as a variable", at("pagination", "page_size_param")...)
	}
	if r.List.GraphQL == "" {
		l.add("required: the query document, with its page size and cursor variables", at("list", "graphql")...)
	}
	if pg.Connection == "" {
		l.add("required: the path of the connection under data (allAccounts, repository.issues)", at("pagination", "connection")...)
	}
	rp := pg
	resolveGraphQL(&rp)
	for _, v := range []string{rp.PageSizeParam, rp.CursorParam} {
		if r.List.GraphQL != "" && !strings.Contains(r.List.GraphQL, "$"+v) {
			l.add(fmt.Sprintf("the query uses no $%s variable: airlock sets it on every page", v), at("list", "graphql")...)
		}
	}
}
