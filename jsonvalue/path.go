package jsonvalue

import "strings"

// Get walks a dotted path through decoded JSON objects. The empty path is
// the document itself; ok is false when a step is missing or not an
// object. A key that itself contains dots (Microsoft Graph's
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

// Set sets the value at a dotted path, creating nothing: when a step is
// missing or not an object, doc is left as it was.
func Set(doc map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	cur := doc
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = v
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
