package draft

import (
	"sort"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/getkin/kin-openapi/openapi3"
)

// mediaSchema is the JSON schema of a response or request body.
func mediaSchema(content openapi3.Content) *openapi3.Schema {
	if content == nil {
		return nil
	}
	keys := make([]string, 0, len(content))
	for k := range content {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// JSON first; then a media type that admits it (DocuSign writes */*).
	for _, admits := range []func(string) bool{
		func(mt string) bool { return mt == "application/json" || strings.HasSuffix(mt, "+json") },
		func(mt string) bool { return mt == "*/*" || mt == "application/*" || mt == "text/json" },
	} {
		for _, k := range keys {
			mt := strings.ToLower(strings.TrimSpace(strings.Split(k, ";")[0]))
			if admits(mt) {
				if m := content[k]; m != nil && m.Schema != nil {
					return resolve(m.Schema)
				}
			}
		}
	}
	return nil
}

// resolve returns a schema with allOf merged into its properties.
func resolve(ref *openapi3.SchemaRef) *openapi3.Schema {
	if ref == nil || ref.Value == nil {
		return nil
	}
	s := ref.Value
	if len(s.AllOf) == 0 && (len(s.Properties) > 0 || len(s.OneOf)+len(s.AnyOf) == 0) {
		return s
	}
	merged := *s
	merged.Properties = openapi3.Schemas{}
	merged.Required = append([]string(nil), s.Required...)
	for k, v := range s.Properties {
		merged.Properties[k] = v
	}
	for _, part := range s.AllOf {
		p := resolve(part)
		if p == nil {
			continue
		}
		if merged.Type == nil || merged.Type.IsEmpty() {
			merged.Type = p.Type
		}
		for k, v := range p.Properties {
			merged.Properties[k] = v
		}
		merged.Required = append(merged.Required, p.Required...)
	}
	// One of several shapes (oneOf, anyOf): every shape's fields, none of
	// them required, since an item may be of another shape.
	if len(s.Properties) == 0 {
		for _, part := range append(append([]*openapi3.SchemaRef(nil), s.OneOf...), s.AnyOf...) {
			p := resolve(part)
			if p == nil || !isType(p, "object") && len(p.Properties) == 0 {
				continue
			}
			if merged.Type == nil || merged.Type.IsEmpty() {
				merged.Type = &openapi3.Types{"object"}
			}
			for k, v := range p.Properties {
				if _, ok := merged.Properties[k]; !ok {
					merged.Properties[k] = v
				}
			}
		}
	}
	return &merged
}

func okResponse(op *openapi3.Operation) *openapi3.Response {
	if op == nil || op.Responses == nil {
		return nil
	}
	for _, code := range []string{"200", "2XX", "201", "default"} {
		if r := op.Responses.Value(code); r != nil && r.Value != nil {
			return r.Value
		}
	}
	return nil
}

func isType(s *openapi3.Schema, typ string) bool {
	return s != nil && s.Type != nil && s.Type.Includes(typ)
}

// findItems finds the items array of a list body: the body itself, or one
// array property (one level of nesting is searched).
//
// hint is the list path's last segment: an array named for it
// (DocuSign's envelopes beside folders) is the list.
func findItems(body *openapi3.Schema, hint string) (string, *openapi3.Schema, bool) {
	if body == nil {
		return "", nil, false
	}
	if isType(body, "array") {
		return "", resolve(body.Items), true
	}
	var arrays []string
	for name, ref := range body.Properties {
		if s := resolve(ref); isType(s, "array") {
			arrays = append(arrays, name)
		}
	}
	sort.Strings(arrays)
	pick := ""
	for _, pref := range itemsNames {
		for _, a := range arrays {
			if a == pref {
				pick = a
			}
		}
		if pick != "" {
			break
		}
	}
	if pick == "" && len(arrays) == 1 {
		pick = arrays[0]
	}
	for _, a := range arrays {
		if pick == "" && hint != "" && snake(a) == hint {
			pick = a
		}
	}
	if pick == "" {
		// Several arrays (Square's customers beside errors): the one
		// array of objects that carry an id.
		var withID []string
		for _, a := range arrays {
			if notItems[a] {
				continue
			}
			if is := resolve(resolve(body.Properties[a]).Items); is != nil && hasIDLike(is, a) {
				withID = append(withID, a)
			}
		}
		if len(withID) == 1 {
			pick = withID[0]
		}
	}
	if pick != "" {
		return pick, resolve(resolve(body.Properties[pick]).Items), true
	}
	for _, name := range sortedProps(body) {
		// An object that carries an id is an item, not an envelope: its
		// arrays are the item's (a user's tags), not a list.
		if inner := resolve(body.Properties[name]); isType(inner, "object") && !hasIDField(inner) {
			if p, s, ok := findItems(inner, hint); ok && p != "" {
				return name + "." + p, s, true
			}
		}
	}
	return "", nil, false
}

// notItems are arrays beside a list that are never its items.
var notItems = map[string]bool{"errors": true, "warnings": true, "messages": true, "links": true, "_links": true}

// hasIDLike says whether an item schema carries an id: an id-like name,
// or one named for the array (envelopes' envelopeId, customers'
// customer_id).
func hasIDLike(s *openapi3.Schema, array string) bool {
	if hasIDField(s) {
		return true
	}
	one := strings.ReplaceAll(singular(snake(array)), "_", "")
	for name := range s.Properties {
		n := strings.ReplaceAll(snake(name), "_", "")
		if n == one+"id" || n == one+"uid" || n == one+"key" {
			return true
		}
	}
	return false
}

func sortedProps(s *openapi3.Schema) []string {
	if s == nil {
		return nil
	}
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func scalarType(s *openapi3.Schema) string {
	switch {
	case isType(s, "integer"):
		return "integer"
	case isType(s, "number"):
		return "number"
	case isType(s, "boolean"):
		return "boolean"
	}
	return "string"
}

// fieldsOf drafts the fields of an item schema; an object property with
// its own properties is flattened one level (parent_child, at
// parent.child).
func fieldsOf(s *openapi3.Schema) []*fieldDraft {
	if s == nil {
		return nil
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var out []*fieldDraft
	for _, name := range sortedProps(s) {
		ps := resolve(s.Properties[name])
		if ps == nil || name == "" {
			continue // a property named "" cannot be asked for by name
		}
		if isType(ps, "object") && len(ps.Properties) > 0 {
			for _, child := range sortedProps(ps) {
				cs := resolve(ps.Properties[child])
				if cs == nil || child == "" || (isType(cs, "object") && len(cs.Properties) > 0) {
					continue
				}
				f := field(safeName(snake(name)+"_"+snake(child)), cs)
				f.path = name + "." + child
				out = append(out, f)
			}
			continue
		}
		f := field(safeName(snake(name)), ps)
		if f.name != name {
			f.path = name
		}
		f.required = required[name]
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func field(name string, s *openapi3.Schema) *fieldDraft {
	f := &fieldDraft{name: name, typ: "string"}
	switch {
	case isType(s, "integer"):
		f.typ = "integer"
	case isType(s, "number"):
		f.typ = "number"
	case isType(s, "boolean"):
		f.typ = "boolean"
	case isType(s, "array"):
		f.typ = "array"
		if s.Items != nil {
			// The document names the elements' type: a filter value is
			// converted to it.
			if is := resolve(s.Items); is != nil {
				switch e := field("", is); {
				case e.typ == "object" || e.typ == "array":
				case e.typ == "string" && !isType(is, "string"):
				default:
					f.elements = e.typ
				}
			}
		}
	case isType(s, "object"):
		f.typ = "object"
	}
	f.nullable = s.Nullable || isType(s, "null")
	for _, e := range s.Enum {
		switch v := e.(type) {
		case nil:
			f.nullable = true
		case string:
			if f.typ == "string" {
				f.enum = append(f.enum, v)
			}
		}
	}
	switch {
	case s.Format == "date-time" && f.typ == "string":
		f.typ = "timestamp"
	case s.Format == "unix-time" && (f.typ == "integer" || f.typ == "number"):
		f.typ, f.layout = "timestamp", config.LayoutUnix
	case knownFormats[s.Format] && f.typ == "string":
		f.format = s.Format
	}
	if sensitiveName.MatchString(name) || s.WriteOnly {
		f.sensitive = true
		f.note = "sensitive, guessed from its name: never leaves airlock"
	}
	f.description = firstSentence(s.Description)
	return f
}

func schemaAt(s *openapi3.Schema, path string) *openapi3.Schema {
	for path != "" {
		if s == nil {
			return nil
		}
		// A key that itself holds dots (@odata.count) is read whole.
		if p, ok := s.Properties[path]; ok {
			return resolve(p)
		}
		part, rest, _ := strings.Cut(path, ".")
		s, path = resolve(s.Properties[part]), rest
	}
	return s
}

// hasIDField says whether an object schema carries an id-like property.
func hasIDField(s *openapi3.Schema) bool {
	for _, n := range idNames {
		if _, ok := s.Properties[n]; ok {
			return true
		}
	}
	return false
}

// safeName is a field name airlock can write: a key whose every character
// snake-cases away (@, $) is named field, and numbered when taken.
func safeName(n string) string {
	if strings.Trim(n, "_") == "" {
		return "field"
	}
	return n
}
