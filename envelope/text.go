package envelope

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// The text mirror of a result is what most clients put before the model.
// It is the structured content with every member that holds its default
// left out: Text drops them, Expand puts them back, and the two are exact
// inverses (a test holds every tool result to it). The defaults are part of
// the contract, listed in the README ("What the agent sees"): a reader of
// the text treats an absent member as holding its default.

// DefaultVisibility is scope.visibility when the configuration says
// nothing of what the credential can see.
const DefaultVisibility = "records readable by the configured credential"

// TextDefault is one member the text leaves out when it holds its default.
// Path is dotted from the envelope's root; a segment ending in "[]" steps
// into every element of an array. Default returns the member's default in
// its parent object (root is the whole envelope), or false when it has
// none there.
type TextDefault struct {
	Path    string
	Default func(root, parent map[string]any) (any, bool)
}

// Const is a TextDefault whose default is a fixed JSON value.
func Const(path, value string) TextDefault {
	return TextDefault{Path: path, Default: func(map[string]any, map[string]any) (any, bool) {
		var v any
		_ = json.Unmarshal([]byte(value), &v)
		return v, true
	}}
}

// Same is a TextDefault whose default is the value at another path (which
// the text always keeps).
func Same(path, other string) TextDefault {
	return TextDefault{Path: path, Default: func(root, _ map[string]any) (any, bool) {
		return jsonvalue.Get(root, other)
	}}
}

// envelopeDefaults hold for every tool's result.
var envelopeDefaults = []TextDefault{
	// status follows from complete and problem (see Finish).
	{Path: "status", Default: func(root, _ map[string]any) (any, bool) {
		switch {
		case root["problem"] != nil:
			return string(StatusError), true
		case root["complete"] == true:
			return string(StatusComplete), true
		}
		return string(StatusPartial), true
	}},
	Const("incomplete_reasons", `[]`),
	Const("warnings", `[]`),
	Const("continuation", `{"kind":"none"}`),
	Const("scope.filter", `{}`),
	Const("scope.snapshot", `null`),
	Const("scope.visibility", `"`+DefaultVisibility+`"`),
	Const("scope.consistency", `"none"`),
	// A complete answer accounts for the whole scope: its total is exact.
	{Path: "coverage.total_relation", Default: func(root, _ map[string]any) (any, bool) {
		return RelationEq, root["complete"] == true
	}},
	Const("coverage.sources[].status", `"`+SourceComplete+`"`),
	{Path: "coverage.sources[].name", Default: func(root, _ map[string]any) (any, bool) {
		if _, only := onlySource("pages")(root, nil); !only {
			return nil, false
		}
		return jsonvalue.Get(root, "scope.resource")
	}},
	{Path: "coverage.sources[].pages", Default: onlySource("pages")},
	{Path: "coverage.sources[].items_scanned", Default: onlySource("items_scanned")},
}

// onlySource: the only source's work is the coverage's.
func onlySource(member string) func(root, parent map[string]any) (any, bool) {
	return func(root, _ map[string]any) (any, bool) {
		if srcs, _ := jsonvalue.Get(root, "coverage.sources"); srcs != nil {
			if list, ok := srcs.([]any); ok && len(list) == 1 {
				return jsonvalue.Get(root, "coverage."+member)
			}
		}
		return nil, false
	}
}

// Text renders structured content (an envelope as JSON) without the
// members that hold their defaults: the envelope's and data's.
func Text(structured []byte, data ...TextDefault) []byte {
	root, ok := decodeObject(structured)
	if !ok {
		return structured
	}
	rules := append(append([]TextDefault(nil), envelopeDefaults...), data...)
	// Rules whose default reads another member run before anything they
	// read could be dropped: in reverse, since readers come last.
	for i := len(rules) - 1; i >= 0; i-- {
		r := rules[i]
		eachParent(root, r.Path, func(parent map[string]any, key string) {
			v, present := parent[key]
			if !present {
				return
			}
			if def, ok := r.Default(root, parent); ok && sameJSON(v, def) {
				delete(parent, key)
			}
		})
	}
	return marshal(root, structured)
}

// Expand puts back what Text left out: Expand(Text(s)) holds the same JSON
// as s.
func Expand(text []byte, data ...TextDefault) []byte {
	root, ok := decodeObject(text)
	if !ok {
		return text
	}
	rules := append(append([]TextDefault(nil), envelopeDefaults...), data...)
	for _, r := range rules {
		eachParent(root, r.Path, func(parent map[string]any, key string) {
			if _, present := parent[key]; present {
				return
			}
			if def, ok := r.Default(root, parent); ok {
				parent[key] = def
			}
		})
	}
	return marshal(root, text)
}

func decodeObject(b []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var root map[string]any
	if dec.Decode(&root) != nil || root == nil {
		return nil, false
	}
	return root, true
}

func marshal(root map[string]any, fallback []byte) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(root) != nil {
		return fallback
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// eachParent calls fn with every object that may hold the path's last
// member (existing objects only), and that member's name.
func eachParent(root map[string]any, path string, fn func(parent map[string]any, key string)) {
	segs := strings.Split(path, ".")
	var walk func(obj map[string]any, i int)
	walk = func(obj map[string]any, i int) {
		if i == len(segs)-1 {
			fn(obj, segs[i])
			return
		}
		name, each := strings.CutSuffix(segs[i], "[]")
		next, ok := obj[name]
		if !ok {
			return
		}
		if each {
			list, _ := next.([]any)
			for _, el := range list {
				if m, ok := el.(map[string]any); ok {
					walk(m, i+1)
				}
			}
			return
		}
		if m, ok := next.(map[string]any); ok {
			walk(m, i+1)
		}
	}
	walk(root, 0)
}

func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
