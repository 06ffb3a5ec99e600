package tools

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// A tool's argument and data structs are the one source of its schemas:
// generate reflects a struct (json tags name the members and, without
// omitempty, require them; jsonschema tags describe them), then calls the
// struct's schema hook for what tags cannot say (bounds, enums, examples,
// the shapes of free-form values). The validation schema, the schema
// clients list and the output schema all come from there.

// schemaHook is implemented by argument and data structs whose schema
// needs more than the reflector infers.
type schemaHook interface {
	schema(s *jsonschema.Schema)
}

// typeSchemas are the schemas of types the reflector would misread: raw
// JSON is any JSON value, not an array of bytes.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
}

// generate returns T's schema as a JSON value: a fresh copy on every
// call, since callers may change it, of what is reflected once per type.
func generate[T any]() map[string]any {
	t := reflect.TypeFor[T]()
	b, ok := generated.Load(t)
	if !ok {
		reflectors.LoadOrStore(t, reflectSchema[T])
		if raw, found := builtSchemas().Types[t.String()]; found && readBuilt {
			b, _ = generated.LoadOrStore(t, []byte(raw))
		} else {
			b, _ = generated.LoadOrStore(t, reflectSchema[T]())
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b.([]byte), &m); err != nil {
		panic("tools: schema of " + t.String() + ": " + err.Error())
	}
	return emptyAsObject(m).(map[string]any)
}

// generated holds each type's schema as JSON, reflected once (or read
// from schemas.json).
var generated sync.Map

// reflectors holds, for each type generate was asked for, the function
// that reflects its schema: the test that keeps schemas.json current
// compares each with what the file holds.
var reflectors sync.Map // reflect.Type -> func() []byte

func reflectSchema[T any]() []byte {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		panic("tools: schema of " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	tidy(s)
	applyHooks(reflect.TypeFor[T](), s)
	b, err := json.Marshal(s)
	if err != nil {
		panic("tools: schema of " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	return b
}

// tidy removes what the reflector adds that airlock's values never are:
// null for nil slices, maps and pointers (an absent argument is left out,
// and data holds no null a hook does not declare), and "any member" on
// maps of any value (which a schema says by saying nothing).
func tidy(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	if ap := s.AdditionalProperties; ap != nil && reflect.ValueOf(*ap).IsZero() {
		s.AdditionalProperties = nil
	}
	for _, p := range s.Properties {
		tidy(p)
	}
	tidy(s.Items)
	tidy(s.AdditionalProperties)
}

// applyHooks calls the schema hooks of t and of the structs within it,
// the inner ones first so that an outer hook has the last word.
func applyHooks(t reflect.Type, s *jsonschema.Schema) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil {
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		applyHooks(t.Elem(), s.Items)
	case reflect.Map:
		applyHooks(t.Elem(), s.AdditionalProperties)
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if p := s.Properties[name]; p != nil && f.IsExported() && !f.Anonymous {
				applyHooks(f.Type, p)
			}
		}
	}
	if t.Kind() == reflect.Struct && t.Name() != "" && s.Title == "" {
		// The type's name names the shape where the listing shares it.
		s.Title = t.Name()
	}
	if h, ok := reflect.Zero(t).Interface().(schemaHook); ok {
		h.schema(s)
	}
}

// emptyAsObject writes the schema that accepts anything as {}, not true:
// the form some clients' validators require.
func emptyAsObject(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "properties":
				props, _ := e.(map[string]any)
				for name, p := range props {
					props[name] = emptyAsObject(asSchema(p))
				}
			case "items", "additionalProperties":
				x[k] = emptyAsObject(asSchema(e))
			case "anyOf":
				list, _ := e.([]any)
				for i, el := range list {
					list[i] = emptyAsObject(asSchema(el))
				}
			}
		}
		return x
	}
	return v
}

func asSchema(v any) any {
	if v == true {
		return map[string]any{}
	}
	return v
}

// prop returns the schema at a path of property names under s; "[]" steps
// into an array's items and "*" into a map's values. It panics on a path
// the struct does not have: a hook that names a missing member is a bug.
func prop(s *jsonschema.Schema, path ...string) *jsonschema.Schema {
	for _, name := range path {
		var next *jsonschema.Schema
		switch name {
		case "[]":
			next = s.Items
		case "*":
			next = s.AdditionalProperties
		default:
			next = s.Properties[name]
		}
		if next == nil {
			panic("tools: schema hook names a missing member " + name)
		}
		s = next
	}
	return s
}

// nullable lets the schema's value also be null.
func nullable(s *jsonschema.Schema) {
	if s.Type != "" {
		s.Types, s.Type = []string{s.Type, "null"}, ""
	}
}

// enum restricts the schema's value to values.
func enum[T any](s *jsonschema.Schema, values ...T) {
	s.Enum = make([]any, len(values))
	for i, v := range values {
		s.Enum[i] = v
	}
}

// filterValue is one filter's value, in single-type branches that
// function-calling dialects with one type per schema (Gemini) accept.
func filterValue() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string"}, {Type: "number"}, {Type: "boolean"}, {Type: "null"}, {Type: "array"},
	}}
}

// digestPattern is the form of every digest airlock issues.
const digestPattern = "^sha256:[0-9a-f]{64}$"

// setBudget bounds the budget arguments a tool's arguments hold.
func setBudget(s *jsonschema.Schema) {
	if p := s.Properties["max_items"]; p != nil {
		p.Minimum, p.Examples = jsonschema.Ptr(0.0), []any{50}
	}
	if p := s.Properties["max_pages"]; p != nil {
		p.Minimum, p.Examples = jsonschema.Ptr(1.0), []any{100}
	}
	if p := s.Properties["deadline_ms"]; p != nil {
		p.Minimum, p.Examples = jsonschema.Ptr(100.0), []any{15000}
	}
}
