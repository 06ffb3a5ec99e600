package draft

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A document is refused only when it is not OpenAPI: every local flaw that
// would stop kin-openapi from reading it is mended or cut out here, on the
// decoded tree, before kin-openapi sees it, and named as a warning with its
// location. What a flaw spoils is left out of the draft (an unreadable
// schema reads as one with no fields, an unreadable path as no path).

// mender mends one file of a document (the root or a file an external
// $ref names).
type mender struct {
	// file is the file's path relative to the root document's directory
	// ("" for the root).
	file     string
	root     map[string]any
	warnings []string
	// read reads another file of the document, mended, by its path
	// relative to the root's directory (nil: external files are not
	// read).
	read func(rel string) (map[string]any, error)
}

// decodeTree decodes a YAML or JSON document into maps, slices and
// scalars with string keys. JSON numbers keep their text.
func decodeTree(doc []byte) (any, error) {
	trimmed := bytes.TrimLeft(doc, " \t\r\n\ufeff")
	if bytes.HasPrefix(trimmed, []byte("{")) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			return v, nil
		}
	}
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	return stringKeys(v), nil
}

// stringKeys turns YAML's non-string keys (a response code written 200)
// into strings, as JSON would have them.
func stringKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = stringKeys(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = stringKeys(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = stringKeys(e)
		}
	}
	return v
}

func (m *mender) warn(at []string, format string, args ...any) {
	where := m.file
	if len(at) > 0 {
		if where != "" {
			where += "#"
		}
		where += strings.Join(at, ".")
	}
	m.warnings = append(m.warnings, where+": "+fmt.Sprintf(format, args...))
}

// nameMaps are the keys whose values map names (or codes, or media types)
// to objects: a key inside such a map is a name, never a keyword.
var nameMaps = map[string]bool{
	"properties": true, "patternProperties": true, "definitions": true, "schemas": true, "responses": true,
	"parameters": true, "securitySchemes": true, "securityDefinitions": true, "headers": true, "examples": true,
	"links": true, "callbacks": true, "requestBodies": true, "pathItems": true, "paths": true, "content": true,
	"encoding": true, "variables": true, "$defs": true, "dependentSchemas": true, "webhooks": true,
}

// schemaMaps are the name maps whose values are schemas.
var schemaMaps = map[string]bool{"properties": true, "patternProperties": true, "definitions": true, "schemas": true, "$defs": true, "dependentSchemas": true}

// schemaKeys are the keys whose value is one schema; schemaLists hold a
// list of schemas.
var (
	schemaKeys  = map[string]bool{"schema": true, "items": true, "additionalProperties": true, "not": true, "additionalItems": true, "contains": true, "propertyNames": true, "if": true, "then": true, "else": true}
	schemaLists = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}
	// stringKeywords hold text: a $ref or an object there is a flaw.
	stringKeywords = map[string]bool{"description": true, "summary": true, "title": true, "operationId": true, "pattern": true, "format": true}
)

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// mend mends the file's tree in place: $refs that name an operation or a
// path item are inlined, dangling $refs cut out, and keyword flaws mended.
func (m *mender) mend() {
	if paths, ok := m.root["paths"].(map[string]any); ok {
		for _, p := range slices.Sorted(maps.Keys(paths)) {
			item, ok := paths[p].(map[string]any)
			if !ok {
				if paths[p] != nil {
					m.warn([]string{"paths", p}, "a path item is not an object: left out")
				}
				delete(paths, p)
				continue
			}
			if ref, ok := item["$ref"].(string); ok && len(item) == 1 {
				target, err := m.inline(ref)
				if err != nil {
					m.warn([]string{"paths", p}, "the path item's $ref %q cannot be read (%v): left out", ref, err)
					delete(paths, p)
					continue
				}
				item = target
				paths[p] = item
			}
			for _, method := range methods {
				op, ok := item[method].(map[string]any)
				if !ok {
					continue
				}
				if ref, ok := op["$ref"].(string); ok {
					target, err := m.inline(ref)
					if err != nil {
						m.warn([]string{"paths", p, method}, "the operation's $ref %q cannot be read (%v): left out", ref, err)
						delete(item, method)
						continue
					}
					item[method] = target
				}
			}
		}
	}
	m.walk(m.root, nil, false, false)
}

// inline reads what a $ref names, as a copy whose own $refs are rewritten
// to be read from this file.
func (m *mender) inline(ref string) (map[string]any, error) {
	file, pointer, _ := strings.Cut(ref, "#")
	var doc map[string]any
	var from string // the target's file, relative to the root's directory
	switch {
	case file == "":
		doc, from = m.root, m.file
	case strings.Contains(file, "://"):
		return nil, fmt.Errorf("a URL")
	case m.read == nil:
		return nil, fmt.Errorf("the document was given without a location to resolve it from")
	default:
		from = path.Join(path.Dir(slashFile(m.file)), file)
		var err error
		if doc, err = m.read(from); err != nil {
			return nil, err
		}
	}
	v, ok := pointerGet(doc, pointer)
	if !ok {
		return nil, fmt.Errorf("it names nothing")
	}
	obj, ok := deepCopy(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("it names no object")
	}
	if from != m.file {
		rebase(obj, from, m.file)
	}
	return obj, nil
}

func slashFile(f string) string {
	if f == "" {
		return "root"
	}
	return f
}

// rebase rewrites the $refs of a part read from file from so that they
// read the same from file to (both relative to the root's directory).
func rebase(v any, from, to string) {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok && !strings.Contains(ref, "://") {
			file, pointer, hasPointer := strings.Cut(ref, "#")
			target := from
			if file != "" {
				target = path.Join(path.Dir(slashFile(from)), file)
			}
			rel := relTo(target, to)
			switch {
			case rel == "" && hasPointer:
				x["$ref"] = "#" + pointer
			case hasPointer:
				x["$ref"] = rel + "#" + pointer
			default:
				x["$ref"] = rel
			}
		}
		for _, e := range x {
			rebase(e, from, to)
		}
	case []any:
		for _, e := range x {
			rebase(e, from, to)
		}
	}
}

// relTo is target's path as seen from file to's directory ("" when it is
// to itself).
func relTo(target, to string) string {
	if target == to {
		return ""
	}
	if target == "" {
		target = "root"
	}
	dir := path.Dir(slashFile(to))
	if dir == "." {
		return target
	}
	up := ""
	for dir != "." && !strings.HasPrefix(target, dir+"/") {
		dir = path.Dir(dir)
		up += "../"
	}
	if dir == "." {
		return up + target
	}
	return up + strings.TrimPrefix(target, dir+"/")
}

// walk mends keyword flaws below v. names says v maps names to objects;
// schema says v is a schema.
func (m *mender) walk(v any, at []string, names, schema bool) {
	switch x := v.(type) {
	case map[string]any:
		if names {
			for _, k := range slices.Sorted(maps.Keys(x)) {
				key := at[len(at)-1]
				child := append(slices.Clone(at), k)
				m.walk(x[k], child, false, schemaMaps[key])
				if key == "responses" {
					m.mendResponse(x, k, child)
				}
			}
			return
		}
		m.mendObject(x, at, schema)
		for _, k := range slices.Sorted(maps.Keys(x)) {
			child := append(slices.Clone(at), k)
			switch {
			case strings.HasPrefix(k, "x-") || k == "example" || k == "examples" && schema || k == "default" || k == "enum" || k == "const" || k == "value":
				// Values, never keywords.
			case schemaLists[k]:
				if list, ok := x[k].([]any); ok {
					for i, e := range list {
						m.walk(e, append(slices.Clone(child), fmt.Sprint(i)), false, true)
					}
				}
			case schemaKeys[k]:
				m.walk(x[k], child, false, true)
			case nameMaps[k] && !(k == "parameters" && isList(x[k])):
				m.walk(x[k], child, true, false)
			default:
				m.walk(x[k], child, false, false)
			}
		}
	case []any:
		for i, e := range x {
			m.walk(e, append(slices.Clone(at), fmt.Sprint(i)), false, false)
		}
	}
}

func isList(v any) bool { _, ok := v.([]any); return ok }

// mendObject mends one object's keywords.
func (m *mender) mendObject(x map[string]any, at []string, schema bool) {
	for _, k := range slices.Sorted(maps.Keys(x)) {
		if !stringKeywords[k] {
			continue
		}
		if _, ok := x[k].(string); ok || x[k] == nil {
			continue
		}
		if k == "format" || k == "pattern" || k == "operationId" {
			m.warn(append(slices.Clone(at), k), "%s is not a string: left out", k)
			delete(x, k)
			continue
		}
		if _, isRef := asMap(x[k])["$ref"]; isRef {
			m.warn(append(slices.Clone(at), k), "a $ref where the %s's text belongs: left out", k)
		} else {
			m.warn(append(slices.Clone(at), k), "%s is not a string: left out", k)
		}
		delete(x, k)
	}
	if !schema {
		return
	}
	if mapping := asMap(asMap(x["discriminator"])["mapping"]); mapping != nil {
		for _, k := range slices.Sorted(maps.Keys(mapping)) {
			ref, _ := mapping[k].(string)
			if !strings.Contains(ref, "#") && !strings.Contains(ref, "/") && !strings.Contains(ref, ".") {
				continue // a schema's name
			}
			if why := m.dangling(ref); why != "" {
				m.warn(append(slices.Clone(at), "discriminator", "mapping", k), "%q %s: left out", ref, why)
				delete(mapping, k)
			}
		}
	}
	if req, ok := x["required"].(bool); ok {
		// JSON Schema draft 3's form: the parent's required list says it.
		m.warn(append(slices.Clone(at), "required"), "required: %v inside a schema (JSON Schema draft 3's form) is not OpenAPI: read as not required", req)
		delete(x, "required")
	}
	if list, ok := x["items"].([]any); ok {
		switch {
		case len(list) == 1:
			x["items"] = list[0]
			m.warn(append(slices.Clone(at), "items"), "items is an array of one schema: read as that schema")
		default:
			x["items"] = map[string]any{}
			m.warn(append(slices.Clone(at), "items"), "items is an array of %d schemas (a tuple): its elements are read as any value", len(list))
		}
	}
	if t, ok := x["type"]; ok {
		switch tt := t.(type) {
		case string:
		case []any:
			for _, e := range tt {
				if _, ok := e.(string); !ok {
					m.warn(append(slices.Clone(at), "type"), "type is not a name: left out")
					delete(x, "type")
					break
				}
			}
		default:
			m.warn(append(slices.Clone(at), "type"), "type is not a name: left out")
			delete(x, "type")
		}
	}
}

// mendResponse mends a response that is a $ref to a request body (a
// component of another kind): it is read as a response with the same
// description and content.
func (m *mender) mendResponse(responses map[string]any, code string, at []string) {
	r, ok := responses[code].(map[string]any)
	if !ok {
		return
	}
	ref, ok := r["$ref"].(string)
	if !ok || !strings.HasPrefix(ref, "#/components/requestBodies/") {
		return
	}
	target, ok := pointerGet(m.root, strings.TrimPrefix(ref, "#"))
	body, isMap := target.(map[string]any)
	if !ok || !isMap {
		return // a dangling $ref: cut out below
	}
	resp := map[string]any{"description": "(read from the request body " + path.Base(ref) + ")"}
	if d, ok := body["description"].(string); ok && d != "" {
		resp["description"] = d
	}
	if c, ok := body["content"]; ok {
		resp["content"] = deepCopy(c)
	}
	responses[code] = resp
	m.warn(at, "a response's $ref names a request body (%s): read as a response with its content", ref)
}

// cutDangling replaces every $ref below v that names nothing: in a list
// (parameters) it is dropped, elsewhere it reads as an empty object (a
// schema with no fields, a response with no content). exists says
// whether an external file is there to read.
func (m *mender) cutDangling(v any, at []string) any {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			if why := m.dangling(ref); why != "" {
				m.warn(at, "$ref %q %s: left out", ref, why)
				if len(at) >= 2 && at[len(at)-2] == "responses" {
					return map[string]any{"description": "(left out: its $ref names nothing)"}
				}
				return nil
			}
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			nv := m.cutDangling(x[k], append(slices.Clone(at), k))
			if nv == nil && x[k] != nil {
				x[k] = map[string]any{}
				continue
			}
			x[k] = nv
		}
		return x
	case []any:
		out := x[:0]
		for i, e := range x {
			nv := m.cutDangling(e, append(slices.Clone(at), fmt.Sprint(i)))
			if nv == nil && e != nil {
				continue
			}
			out = append(out, nv)
		}
		return out
	}
	return v
}

// dangling says why a $ref names nothing ("" when it names something
// that can be read).
func (m *mender) dangling(ref string) string {
	file, pointer, _ := strings.Cut(ref, "#")
	switch {
	case strings.Contains(file, "://"):
		return "" // the loader decides (--remote-refs)
	case file == "":
		if _, ok := pointerGet(m.root, pointer); !ok {
			return "names nothing in the document"
		}
		return ""
	case m.read == nil:
		return "names another file, and the document was given without a location to resolve it from"
	}
	doc, err := m.read(path.Join(path.Dir(slashFile(m.file)), file))
	if err != nil {
		return "cannot be read (" + firstLine(err.Error()) + ")"
	}
	if _, ok := pointerGet(doc, pointer); !ok {
		return "names nothing in " + file
	}
	return ""
}

// pointerGet reads a JSON pointer ("/components/schemas/A", "" for the
// whole document).
func pointerGet(doc any, pointer string) (any, bool) {
	if pointer == "" || pointer == "/" {
		return doc, true
	}
	cur := doc
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(unescapePointer(part))
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			var i int
			if _, err := fmt.Sscanf(part, "%d", &i); err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func unescapePointer(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02x", &c); err == nil {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
