package jsonvalue

import (
	"strconv"
	"strings"
)

// Get walks a dotted path through decoded JSON objects, and arrays by a
// step that is an element's index (items.0). The empty path is the
// document itself; ok is false when a step is missing, out of range, or
// neither an object nor an array. A key that itself contains dots (Microsoft Graph's
// "@odata.nextLink") is found as written: where a step is missing, the
// step joined with the ones after it is tried as one key.
func Get(doc any, path string) (any, bool) {
	if path == "" {
		return doc, true
	}
	return walk(doc, strings.Split(path, "."))
}

func walk(cur any, parts []string) (any, bool) {
	for len(parts) > 0 {
		if arr, ok := cur.([]any); ok {
			// An array's element by its index (MediaWiki's
			// query.pages.0, a page's revisions.0.revid).
			i, err := strconv.Atoi(parts[0])
			if err != nil || i < 0 || i >= len(arr) || strconv.Itoa(i) != parts[0] {
				return nil, false
			}
			cur, parts = arr[i], parts[1:]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if next, ok := m[parts[0]]; ok {
			cur, parts = next, parts[1:]
			continue
		}
		found := false
		for n := 2; n <= len(parts); n++ {
			if next, ok := m[strings.Join(parts[:n], ".")]; ok {
				cur, parts, found = next, parts[n:], true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return cur, true
}

// Set sets the value where Get finds one: through objects, arrays by an
// element's index (custom_fields.1.value) and keys that hold dots, as Get
// walks them. It creates nothing but a last key of an object that is
// there: when an earlier step is missing, out of range, or neither an
// object nor an array, doc is left as it was.
func Set(doc map[string]any, path string, v any) {
	set(doc, strings.Split(path, "."), v)
}

func set(cur any, parts []string, v any) {
	switch c := cur.(type) {
	case []any:
		i, err := strconv.Atoi(parts[0])
		if err != nil || i < 0 || i >= len(c) || strconv.Itoa(i) != parts[0] {
			return
		}
		if len(parts) == 1 {
			c[i] = v
			return
		}
		set(c[i], parts[1:], v)
	case map[string]any:
		for n := 1; n <= len(parts); n++ {
			k := strings.Join(parts[:n], ".")
			next, ok := c[k]
			switch {
			case !ok:
				continue
			case n == len(parts):
				c[k] = v
			default:
				set(next, parts[n:], v)
			}
			return
		}
		if len(parts) == 1 {
			c[parts[0]] = v
		}
	}
}

// Put sets the value at a dotted path, creating the objects on the way
// (replacing a step that is not an object). It builds request bodies.
func Put(doc map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	cur := doc
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = v
}
