package config

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// parserProblems are the YAML parser's own problems (as opposed to the
// scanner's): yaml.v3 reports them on the line before the one they are
// about.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// explainSyntax adds what a person would look for to the YAML parser's
// terse problems.
func explainSyntax(msg string) string {
	switch msg {
	case "did not find expected ',' or ']'":
		return "a [list] that opens on this line is not closed, or its items are not separated by commas (did not find expected ',' or ']')"
	case "did not find expected ',' or '}'":
		return "a {mapping} that opens on this line is not closed, or its entries are not separated by commas (did not find expected ',' or '}')"
	case "did not find expected key":
		return "a line below this one is indented differently from its mapping (did not find expected key)"
	}
	return msg
}

// openerLine moves an unclosed flow collection's error to the line where
// it opens: the nearest line at or above the reported one that opens more
// than it closes.
func openerLine(b []byte, e Error) Error {
	open, closing := "", ""
	switch {
	case strings.HasPrefix(e.Msg, "a [list]"):
		open, closing = "[", "]"
	case strings.HasPrefix(e.Msg, "a {mapping}"):
		open, closing = "{", "}"
	default:
		return e
	}
	lines := strings.Split(string(b), "\n")
	for i := min(e.Line, len(lines)) - 1; i >= 0; i-- {
		if strings.Count(lines[i], open) > strings.Count(lines[i], closing) {
			e.Line = i + 1
			return e
		}
	}
	return e
}

// secondDocument is the line of a second YAML document holding anything
// (after a --- separator), or 0 when the file holds one.
func secondDocument(b []byte) int {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var first, second yaml.Node
	if dec.Decode(&first) != nil {
		return 0
	}
	if dec.Decode(&second) != nil || len(second.Content) == 0 {
		return 0
	}
	n := second.Content[0]
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return 0
	}
	// The separator is the last --- line before the document's content.
	line := n.Line
	lines := bytes.Split(b, []byte("\n"))
	for i := min(n.Line-1, len(lines)) - 1; i >= 0; i-- {
		if bytes.HasPrefix(lines[i], []byte("---")) {
			return i + 1
		}
	}
	return line
}

// tagNames describe YAML's core tags to a person.
var tagNames = map[string]string{
	"!!str": "a string", "!!int": "an integer", "!!float": "a number", "!!bool": "true or false",
	"!!seq": "a list", "!!map": "a mapping", "!!null": "null", "!!timestamp": "a timestamp", "!!binary": "binary data",
}

// goTypeNames describe what a configuration value must be, by the Go type
// yaml names in its message.
var goTypeNames = map[string]string{
	"time.Duration": "a duration such as 10s or 250ms",
	"int":           "an integer", "int64": "an integer", "float64": "a number", "bool": "true or false", "string": "a string",
}

// wrongType reports "!!str `abc` into time.Duration" (what yaml says after
// "cannot unmarshal") against the key that holds the value.
func wrongType(root *yaml.Node, line int, rest string) Error {
	tag, value, into := rest, "", ""
	if i := strings.Index(rest, " into "); i >= 0 {
		tag, into = rest[:i], rest[i+len(" into "):]
	}
	if i := strings.Index(tag, " `"); i >= 0 {
		tag, value = tag[:i], strings.TrimSuffix(tag[i+2:], "`")
	}
	got := tag
	if n, ok := tagNames[tag]; ok {
		got = n
	}
	if value != "" {
		got += " (" + value + ")"
	}
	want := goTypeNames[into]
	switch {
	case want != "":
	case strings.HasPrefix(into, "map["), strings.HasPrefix(into, "upstream."), strings.HasPrefix(into, "*upstream."):
		want = "a mapping"
	case strings.HasPrefix(into, "[]"):
		want = "a list"
	default:
		want = "another type"
	}
	path := valuePathAt(root, line, tag, value)
	if path == "" {
		path = "config"
	}
	return Error{Line: line, Path: path, Msg: "wrong type: " + got + " where " + want + " is expected"}
}

// walkNodes calls fn with every node of the document and the path of keys
// and list indexes that leads to it, stopping when fn returns true.
func walkNodes(root *yaml.Node, fn func(n *yaml.Node, key *yaml.Node, path []string) bool) {
	var walk func(n, key *yaml.Node, path []string) bool
	walk = func(n, key *yaml.Node, path []string) bool {
		if n == nil {
			return false
		}
		if fn(n, key, path) {
			return true
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, ch := range n.Content {
				if walk(ch, nil, path) {
					return true
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if walk(n.Content[i+1], k, append(append([]string(nil), path...), k.Value)) {
					return true
				}
			}
		case yaml.SequenceNode:
			for i, ch := range n.Content {
				if walk(ch, nil, append(append([]string(nil), path...), strconv.Itoa(i))) {
					return true
				}
			}
		}
		return false
	}
	walk(root, nil, nil)
}

// valuePathAt is the path of the value on line that yaml could not read:
// a scalar written as value, or a list or mapping for !!seq and !!map.
func valuePathAt(root *yaml.Node, line int, tag, value string) string {
	var found string
	walkNodes(root, func(n, _ *yaml.Node, path []string) bool {
		if n.Line != line || len(path) == 0 {
			return false
		}
		switch {
		case n.Kind == yaml.ScalarNode && value != "" && n.Value == value,
			n.Kind == yaml.SequenceNode && tag == "!!seq",
			n.Kind == yaml.MappingNode && tag == "!!map",
			n.Kind == yaml.ScalarNode && value == "" && tag == n.Tag:
			found = strings.Join(path, ".")
			return true
		}
		return false
	})
	return found
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// unknownKeys lists every key of the document that the configuration does
// not have, by its path, with the key that was probably meant.
func unknownKeys(root *yaml.Node) Errors {
	var errs Errors
	var walk func(n *yaml.Node, t reflect.Type, path []string)
	walk = func(n *yaml.Node, t reflect.Type, path []string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if n == nil || n.Kind == yaml.AliasNode || reflect.PointerTo(t).Implements(unmarshalerType) {
			return
		}
		at := func(k string) []string { return append(append([]string(nil), path...), k) }
		switch t.Kind() {
		case reflect.Struct:
			if n.Kind != yaml.MappingNode || t.PkgPath() != reflect.TypeOf(Config{}).PkgPath() {
				return
			}
			keys := yamlKeys(t)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == "<<" {
					continue // a merge key: its mapping's keys are checked where it is written
				}
				ft, ok := keys[k.Value]
				if ok {
					walk(v, ft, at(k.Value))
					continue
				}
				if k.Value == "" {
					p := strings.Join(path, ".")
					if p == "" {
						p = "config"
					}
					errs = append(errs, Error{Line: k.Line, Path: p, Msg: "unknown key: an empty key"})
					continue
				}
				msg := "unknown key"
				if k.Tag == "!!null" {
					// YAML reads a bare null (or ~) as no key at all.
					msg = fmt.Sprintf("the key %q is read as null, which is no key: quote it, or for a filter's null form use is_null", k.Value)
				} else if m := didYouMean(k.Value, keys); m != "" {
					msg += fmt.Sprintf("; did you mean %q?", m)
				}
				errs = append(errs, Error{Line: k.Line, Path: strings.Join(at(k.Value), "."), Msg: msg})
			}
		case reflect.Map:
			if n.Kind != yaml.MappingNode {
				return
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], t.Elem(), at(n.Content[i].Value))
			}
		case reflect.Slice:
			if n.Kind != yaml.SequenceNode {
				return
			}
			for i, ch := range n.Content {
				walk(ch, t.Elem(), at(strconv.Itoa(i)))
			}
		}
	}
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	walk(doc, reflect.TypeOf(Config{}), nil)
	return errs
}

// yamlKeys are a struct's YAML keys and their types.
func yamlKeys(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlKeys(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// didYouMean is the known key closest to key, when one is close enough to
// be a slip of the keyboard (an edit or two, a swap of neighbours).
func didYouMean(key string, known map[string]reflect.Type) string {
	best, bestD := "", 3
	for _, k := range slices.Sorted(maps.Keys(known)) {
		d := editDistance(strings.ToLower(key), k)
		if d < bestD && d <= max(1, len(k)/3) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance counts insertions, deletions, substitutions and swaps of
// adjacent letters (optimal string alignment).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// withoutLines drops the errors on lines already reported: a value yaml
// could not read is also missing or zero to the checks that follow.
func withoutLines(errs, reported Errors) Errors {
	lines := map[int]bool{}
	for _, e := range reported {
		lines[e.Line] = true
	}
	var out Errors
	for _, e := range errs {
		if !lines[e.Line] {
			out = append(out, e)
		}
	}
	return out
}

// dropDuplicateKeys reports every key written twice in one mapping, at the
// later one, and removes the later one from the document, so that the rest
// of the mapping is still decoded and checked.
func dropDuplicateKeys(root *yaml.Node) Errors {
	var errs Errors
	walkNodes(root, func(n, _ *yaml.Node, path []string) bool {
		if n.Kind != yaml.MappingNode {
			return false
		}
		seen := map[string]int{}
		kept := n.Content[:0:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode && k.Value != "<<" {
				if first, dup := seen[k.Value]; dup {
					p := strings.Join(append(append([]string(nil), path...), k.Value), ".")
					if k.Value == "" {
						p = strings.Join(append([]string{"config"}, path...), ".")
					}
					errs = append(errs, Error{Line: k.Line, Path: p, Msg: fmt.Sprintf("duplicate key: %q is already defined at line %d", k.Value, first)})
					continue
				}
				seen[k.Value] = k.Line
			}
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
		n.Content = kept
		return false
	})
	return errs
}
