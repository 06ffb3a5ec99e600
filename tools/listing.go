package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-mcp/airlock/envelope"
)

// Every client that lists the tools receives every output schema, and
// pays for it in bytes (a model rarely reads them: clients validate
// structured content against them). So the listed output schema is the
// exact data schema written once: a shape that occurs more than once (a
// resource's limits, a principals restriction, a manifest record) is
// written once under $defs, and keywords that a validator does not read
// or that repeat what another keyword fixes are left out. It accepts and
// refuses exactly what the schema it is built from does.

// listedOutput returns a tool's outputSchema as clients list it: the
// envelope around advertisedData(data), compacted.
// Building it searches for repeated shapes, so each distinct schema is
// built once per process and shared (callers never write into it).
func listedOutput(data map[string]any, problems ...envelope.ProblemCode) json.RawMessage {
	k := listedArgs(data, problems)
	if b, ok := listedOutputs.Load(k); ok {
		return b.(json.RawMessage)
	}
	b, ok := builtSchemas().Listed[listedKey(k)]
	if !ok || !readBuilt {
		b = buildListedOutput(data, problems...)
	}
	listedOutputs.Store(k, b)
	return b
}

// listedArgs is listedOutput's arguments as one string (its cache key).
func listedArgs(data map[string]any, problems []envelope.ProblemCode) string {
	key, err := json.Marshal(data)
	if err != nil {
		panic("tools: output schema: " + err.Error())
	}
	return fmt.Sprint(problems) + string(key)
}

// listedOutputs caches listedOutput by its arguments.
var listedOutputs sync.Map

func buildListedOutput(data map[string]any, problems ...envelope.ProblemCode) json.RawMessage {
	var doc map[string]any
	if err := json.Unmarshal(envelope.CompactOutputSchema(advertisedData(data), problems...), &doc); err != nil {
		panic("tools: output schema: " + err.Error())
	}
	eachSchema(doc, enumFixesType)
	shareRepeats(doc)
	eachSchema(doc, func(s map[string]any) { delete(s, "title") })
	b, err := json.Marshal(doc)
	if err != nil {
		panic("tools: output schema: " + err.Error())
	}
	return b
}

// enumFixesType drops the type beside an enum whose values all have it:
// the enum alone accepts exactly the same values.
func enumFixesType(s map[string]any) {
	values, ok := s["enum"].([]any)
	if !ok || len(values) == 0 {
		return
	}
	typ, _ := s["type"].(string)
	for _, v := range values {
		switch v.(type) {
		case string:
			if typ != "string" {
				return
			}
		case bool:
			if typ != "boolean" {
				return
			}
		default:
			// A number's JSON type (integer or number) is not the Go
			// type it decodes to; leave those be.
			return
		}
	}
	delete(s, "type")
}

// eachSchema calls fn on s and on every schema within it.
func eachSchema(s map[string]any, fn func(map[string]any)) {
	fn(s)
	for _, k := range []string{"properties", "$defs"} {
		if m, ok := s[k].(map[string]any); ok {
			for _, sub := range m {
				if sub, ok := sub.(map[string]any); ok {
					eachSchema(sub, fn)
				}
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "propertyNames"} {
		if sub, ok := s[k].(map[string]any); ok {
			eachSchema(sub, fn)
		}
	}
	if list, ok := s["anyOf"].([]any); ok {
		for _, sub := range list {
			if sub, ok := sub.(map[string]any); ok {
				eachSchema(sub, fn)
			}
		}
	}
}

// eachSlot calls fn on every place within s that holds a schema (not s
// itself, nor the $defs entries, which are the targets of references):
// the value fn returns takes the schema's place.
func eachSlot(s map[string]any, fn func(sub map[string]any) map[string]any) {
	visit := func(sub map[string]any) map[string]any {
		if out := fn(sub); out != nil {
			return out
		}
		eachSlot(sub, fn)
		return sub
	}
	if m, ok := s["properties"].(map[string]any); ok {
		for k, sub := range m {
			if sub, ok := sub.(map[string]any); ok {
				m[k] = visit(sub)
			}
		}
	}
	if m, ok := s["$defs"].(map[string]any); ok {
		for _, sub := range m {
			if sub, ok := sub.(map[string]any); ok {
				eachSlot(sub, fn)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "propertyNames"} {
		if sub, ok := s[k].(map[string]any); ok {
			s[k] = visit(sub)
		}
	}
	if list, ok := s["anyOf"].([]any); ok {
		for i, sub := range list {
			if sub, ok := sub.(map[string]any); ok {
				list[i] = visit(sub)
			}
		}
	}
}

// canonical is a schema's JSON with sorted keys: equal for equal schemas.
func canonical(s map[string]any) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic("tools: output schema: " + err.Error())
	}
	return string(b)
}

// shareRepeats writes each shape that occurs more than once in doc once,
// under doc's $defs, and refers to it wherever it occurred; one at a
// time, the one that saves the most bytes first, for as long as one
// saves bytes. A shape is shared when it has a name: the Go type's
// (generate titles named struct types) or, for an array of one plain
// type, that type's plural.
func shareRepeats(doc map[string]any) {
	for {
		count := map[string]int{}
		shape := map[string]map[string]any{}
		eachSlot(doc, func(sub map[string]any) map[string]any {
			if shareName(sub) != "" {
				c := canonical(sub)
				count[c]++
				shape[c] = sub
			}
			return nil
		})
		best, saved := "", 0
		for c, n := range count {
			ref := len(`{"$ref":"#/$defs/"}`) + len(shareName(shape[c]))
			// n copies become n references and one definition.
			if s := (n-1)*len(c) - n*ref - len(shareName(shape[c])) - 4; n > 1 && s > saved {
				best, saved = c, s
			}
		}
		if best == "" {
			return
		}
		defs, _ := doc["$defs"].(map[string]any)
		if defs == nil {
			defs = map[string]any{}
			doc["$defs"] = defs
		}
		name := shareName(shape[best])
		for base, i := name, 2; defs[name] != nil; i++ {
			name = base + string(rune('0'+i))
		}
		defs[name] = shape[best]
		ref := map[string]any{"$ref": "#/$defs/" + name}
		eachSlot(doc, func(sub map[string]any) map[string]any {
			if canonical(sub) == best {
				return ref
			}
			return nil
		})
	}
}

// shareName is the name under $defs that a shape is shared by, or "" if
// it has none.
func shareName(s map[string]any) string {
	if t, ok := s["title"].(string); ok && t != "" {
		t = strings.TrimSuffix(t, "Info")
		r, n := utf8.DecodeRuneInString(t)
		return string(unicode.ToLower(r)) + t[n:]
	}
	if s["type"] == "array" {
		if items, ok := s["items"].(map[string]any); ok && len(items) == 1 {
			if t, ok := items["type"].(string); ok {
				return t + "s"
			}
		}
	}
	return ""
}
