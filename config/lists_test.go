package config

import (
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

// TestParseConfig_ListStylesAreCheckedWithLines: every way the new list
// styles and filter forms can be declared wrong is named with its line.
func TestParseConfig_ListStylesAreCheckedWithLines(t *testing.T) {
	// Lines 1-4 are configtest.MinimalUpstream, 5-12 configtest.MinimalResource; line 8 is list,
	// 9 pagination; a filter block adds lines 13-14.
	with := func(list, pagination string, extra ...string) []byte {
		lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
		lines[7], lines[8] = "    list: "+list, "    pagination: "+pagination
		return configtest.Lines(append(lines, extra...)...)
	}
	filter := func(f string) []string {
		return []string{"    filters:", "      id: " + f} // 13, 14
	}
	gql := `{path: /graphql, graphql: "query($first: Int, $after: String) { things(first: $first, after: $after) { nodes { id } } }"}`
	for _, tc := range []struct {
		name string
		yaml []byte
		want []wantErr
	}{
		{"graphql without a query", with("{path: /graphql}", "{dialect: graphql, connection: things}"),
			[]wantErr{{8, "resources.items.list.graphql", "required: the query document"}}},
		{"graphql without a connection", with(gql, "{dialect: graphql}"),
			[]wantErr{{9, "resources.items.pagination.connection", "required: the path of the connection"}}},
		{"graphql query without the cursor variable", with(`{path: /graphql, graphql: "query($first: Int) { things(first: $first) { nodes { id } } }"}`, "{dialect: graphql, connection: things}"),
			[]wantErr{{8, "resources.items.list.graphql", "the query uses no $after variable"}}},
		{"a query on another dialect", with(gql, "{dialect: link}"),
			[]wantErr{{8, "resources.items.list.graphql", "needs pagination.dialect: graphql"}}},
		{"search_after read with GET", with("{path: /_search}", "{dialect: search_after}"),
			[]wantErr{{8, "resources.items.list.method", "set list.method: POST"}}},
		{"a point in time without its id path", with("{path: /_search, method: POST}", "{dialect: search_after, pit: {open: /i/_pit, param: pit.id}}"),
			[]wantErr{{9, "resources.items.pagination.pit", "open (an absolute path), id and param are required"}}},
		{"a body on a GET list", with("{path: /items, body: {q: x}}", "{dialect: link}"),
			[]wantErr{{8, "resources.items.list.body", "a body is sent only by a POST list"}}},
		{"a method that is not GET or POST", with("{path: /items, method: PUT}", "{dialect: link}"),
			[]wantErr{{8, "resources.items.list.method", "must be GET or POST"}}},
		{"both end flags", with("{path: /items}", "{dialect: cursor, next_cursor: next, has_more: more, is_last: last}"),
			[]wantErr{{9, "resources.items.pagination.is_last", "set one end flag"}}},
		{"an end flag on a dialect without one", with("{path: /items}", "{dialect: offset, is_last: last}"),
			[]wantErr{{9, "resources.items.pagination.is_last", "the offset dialect does not read is_last; cursor and next_url read it"}}},
		{"an expiry pattern that does not compile", with("{path: /items}", "{dialect: next_url, expiry: {match: \"(\"}}"),
			[]wantErr{{9, "resources.items.pagination.expiry.match", "not a regular expression"}}},
		{"an expiry status that is no status", with("{path: /items}", "{dialect: next_url, expiry: {status: [42]}}"),
			[]wantErr{{9, "resources.items.pagination.expiry.status.0", "an HTTP status"}}},
		{"total_relation without a total", with("{path: /items, method: POST}", "{dialect: search_after, total: none, total_relation: rel}"),
			[]wantErr{{9, "resources.items.pagination.total_relation", "set total too"}}},
		{"total_exact without a total", with("{path: /items}", "{dialect: page, total: none, total_exact: true}"),
			[]wantErr{{9, "resources.items.pagination.total_exact", "only a dialect that reads a total can declare it exact"}}},
		{"repeat in a POST body", with("{path: /items, method: POST}", "{dialect: cursor, next_cursor: next}", filter("{param: filter.id, multi: repeat}")...),
			[]wantErr{{14, "resources.items.filters.id.multi", "a repeated parameter is a query form"}}},
		{"an array in a query", with("{path: /items}", "{dialect: link}", filter("{param: id, multi: array}")...),
			[]wantErr{{14, "resources.items.filters.id.multi", "an array is sent in a JSON body or a GraphQL variable"}}},
		{"a separator without a comma list", with("{path: /items}", "{dialect: link}", filter("{param: id, multi: repeat, separator: \"|\"}")...),
			[]wantErr{{14, "resources.items.filters.id.separator", "separator joins a comma list"}}},
		{"multi_param without multi", with("{path: /items}", "{dialect: link}", filter("{param: id, multi_param: id__in}")...),
			[]wantErr{{14, "resources.items.filters.id.multi_param", "multi_param needs multi"}}},
		{"a null form without a value in a query", with("{path: /items}", "{dialect: link}", filter("{param: id, is_null: {param: id__isnull}}")...),
			[]wantErr{{14, "resources.items.filters.id.is_null.value", "a query cannot carry null"}}},
		{"two null forms", with("{path: /items}", "{dialect: link}", filter("{param: id, null_param: none, is_null: {param: id__isnull, value: 1}}")...),
			[]wantErr{{14, "resources.items.filters.id.is_null", "set one of is_null"}}},
		{"bookmark read with GET", with("{path: /db/_find}", "{dialect: bookmark}"),
			[]wantErr{{8, "resources.items.list.method", "set list.method: POST"}}},
		{"a Mango selector on a GET list", with("{path: /db/_all_docs, expression: {param: selector, language: mango}}", "{dialect: offset}", filter("{expression: _id}")...),
			[]wantErr{{8, "resources.items.list.expression.language", "a Mango selector is sent in a POST body"}}},
		{"a Mango selector with a text template", with("{path: /db/_find, method: POST, expression: {param: selector, language: mango, eq: \"{{field}} = {{value}}\"}}", "{dialect: bookmark}", filter("{expression: _id}")...),
			[]wantErr{{8, "resources.items.list.expression.eq", "a Mango selector is JSON built by airlock: it reads no eq"}}},
		{"a null key", with("{path: /items}", "{dialect: link}", filter("{param: id, null: {param: id__isnull, value: 1}}")...),
			[]wantErr{{14, "resources.items.filters.id.null", `the key "null" is read as null, which is no key`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, tc.yaml), tc.want)
		})
	}
	// And the styles the issue names parse as written.
	for name, y := range map[string][]byte{
		"drf":     with("{path: /api/accounts/, items: results}", "{dialect: next_url, total: count, page_size_param: page_size}", filter("{param: team, multi: comma, multi_param: team__in, is_null: {param: id__isnull, value: \"true\"}}")...),
		"graph":   with("{path: /v1.0/users, items: value}", `{dialect: next_url, next: "@odata.nextLink", total: "@odata.count", page_size_param: "$top"}`),
		"jira":    with("{path: /rest/api/3/search/jql, method: POST, items: issues, body: {jql: \"project = X\"}}", "{dialect: cursor, next_cursor: nextPageToken, cursor_param: nextPageToken, is_last: isLast, page_size_param: maxResults}"),
		"graphql": with(gql, "{dialect: graphql, connection: things, total: none}"),
		"couchdb": with("{path: /db/_find, method: POST, body: {selector: {type: account}}, expression: {param: selector, language: mango}}", "{dialect: bookmark}", filter("{expression: _id}")...),
		"es":      with("{path: /_search, method: POST, items: hits.hits, body: {sort: [{created: asc}]}}", "{dialect: search_after, pit: {open: \"/items/_pit?keep_alive=1m\", id: id, param: pit.id, response: pit_id}, expiry: {status: [404], match: search_context_missing_exception}}"),
	} {
		if _, err := Parse(y); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
