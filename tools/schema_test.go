package tools

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// freeForm are the members whose values are the upstream's or the
// operator's (records, JSON Schemas, filter values): objects of any
// members, as they come.
var freeForm = map[string]bool{
	"search_all:items[]":                              true,
	"preview_selection:action.params":                 true,
	"preview_selection:ambiguous[].fields":            true,
	"preview_selection:ambiguous[].before":            true,
	"preview_selection:manifest.items[].fields":       true,
	"preview_selection:manifest.items[].before":       true,
	"get_selection:items[].fields":                    true,
	"get_selection:items[].before":                    true,
	"commit_bulk_action:action.params":                true,
	"commit_bulk_action:results[].before":             true,
	"commit_bulk_action:results[].after":              true,
	"commit_bulk_action:results[].restore":            true,
	"get_operation:action.params":                     true,
	"get_operation:results[].before":                  true,
	"get_operation:results[].after":                   true,
	"get_operation:results[].restore":                 true,
	"describe_resources:resources[].default_filter":   true,
	"describe_resources:resources[].actions[].params": true,
}

// TestDataSchemas_AreExact: every array in a tool's data schema says what
// its items are, and every object of airlock's own names its members and
// refuses any other (which it requires follows from the struct: a member
// without omitempty is always there); only the upstream's and the
// operator's values are left open.
func TestDataSchemas_AreExact(t *testing.T) {
	t.Parallel()
	for _, s := range bareDeps().Specs() {
		var problems []string
		var walk func(path string, node map[string]any)
		walk = func(path string, node map[string]any) {
			types := fmt.Sprint(node["type"])
			switch {
			case strings.Contains(types, "array"):
				items, ok := node["items"].(map[string]any)
				if !ok {
					problems = append(problems, path+": an array without items")
					return
				}
				walk(path+"[]", items)
			case strings.Contains(types, "object"):
				if freeForm[s.Name+":"+path] {
					return
				}
				if ap, ok := node["additionalProperties"].(map[string]any); ok {
					walk(path+".*", ap) // a map: its values' schema
					return
				}
				props, ok := node["properties"].(map[string]any)
				if !ok || node["additionalProperties"] != false {
					problems = append(problems, path+": an object without properties or open to others")
					return
				}
				names := make([]string, 0, len(props))
				for k := range props {
					names = append(names, k)
				}
				sort.Strings(names)
				for _, k := range names {
					p, _ := props[k].(map[string]any)
					walk(strings.TrimPrefix(path+"."+k, "."), p)
				}
			}
		}
		walk("", s.Data)
		for _, p := range problems {
			t.Errorf("%s data %s", s.Name, p)
		}
	}
}
