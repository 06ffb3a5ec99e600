package configtest

import "strings"

// DialectMinimal is, for every pagination dialect, the list (line 8) and
// pagination (line 9) of a minimal configuration that parses.
var DialectMinimal = map[string][2]string{
	"cursor":          {"{path: /items}", "{dialect: cursor, has_more: has_more}"},
	"link":            {"{path: /items}", "{dialect: link}"},
	"offset":          {"{path: /items}", "{dialect: offset}"},
	"page":            {"{path: /items}", "{dialect: page}"},
	"continue":        {"{path: /items}", "{dialect: continue}"},
	"next_url":        {"{path: /items}", "{dialect: next_url}"},
	"graphql":         {`{path: /graphql, graphql: "query($first: Int, $after: String) { things(first: $first, after: $after) { nodes { id } } }"}`, "{dialect: graphql, connection: things}"},
	"search_after":    {"{path: /_search, method: POST}", "{dialect: search_after}"},
	"continue_object": {"{path: /api.php}", "{dialect: continue_object}"},
	"bookmark":        {"{path: /db/_find, method: POST}", "{dialect: bookmark}"},
}

// PaginationKeyValues is a value of the right type for every pagination
// key a dialect may not read; zero values and a pointer to 0 included,
// since a key set is refused whatever it holds.
var PaginationKeyValues = map[string]string{
	"has_more": "more", "is_last": "last", "cursor_param": "c", "next_cursor": "next",
	"cursor_field": "id", "cursor_exclusive": "nul_suffix",
	"offset_param": "off", "concurrency": "2",
	"page_param": "p", "first_page": "0", "total_pages": "pages", "total_pages_header": "X-Pages",
	"continue_param": "c", "continue_path": "cont", "resource_version": "rv",
	"next": "nxt", "connection": "things",
	"sort_values": "sort", "search_after_param": "sa", "pit": "{open: /i/_pit, id: id, param: pit.id}",
	"batch_complete": "bc", "empty_without_items": "false", "evaluated": "counted",
}

// WithPaginationKey is the dialect's minimal configuration (DialectMinimal)
// with key set to value at the end of its pagination mapping (line 9); no
// key is set when key is "".
func WithPaginationKey(dialect, key, value string) []byte {
	m := DialectMinimal[dialect]
	lines := append(append([]string(nil), MinimalUpstream...), MinimalResource...)
	pg := m[1]
	if key != "" {
		pg = strings.TrimSuffix(pg, "}") + ", " + key + ": " + value + "}"
	}
	lines[7], lines[8] = "    list: "+m[0], "    pagination: "+pg
	return Lines(lines...)
}
