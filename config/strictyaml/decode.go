// Package strictyaml reads a YAML document strictly into Go values, as
// airlock's configuration is read: by a walk of the YAML tree against the
// values' types (their yaml struct tags) that reports every key the types
// do not have (with the key that was probably meant), every value of the
// wrong type, every key written twice and every key YAML reads as null,
// each with its line, column and key path (a problem about the whole
// document is at path "config"), and goes on past them. It also says where
// a YAML syntax error is, and on which line a key path is written.
//
// It must never stop at the first problem, word a problem in the YAML
// library's terms or name a Go type, or depend on the configuration whose
// types it decodes into.
package strictyaml

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A document is decoded by airlock's own walk of the YAML tree against
// the Go types of the value it fills (their yaml struct tags), never by
// decoding the whole document with yaml and reading its error messages:
// the walk knows each value's key path, line and column, and says what
// was expected in airlock's words. It follows yaml's decoding rules
// (pointers, nulls, inline structs, aliases, merge keys, and a value of
// the wrong type leaves its field zero and drops its list item or map
// entry) so that a document decodes to what yaml itself would make of
// it. Scalars, free-form values (the `any` fields) and types with
// their own UnmarshalYAML are decoded by yaml one node at a time; its
// error then only says that the node does not fit, and its wording is
// not read.

// maxDecodeSteps bounds the walk: aliases can make a small document
// expand exponentially (a "billion laughs"), and no configuration comes
// near this many values.
const maxDecodeSteps = 1 << 20

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// Problem is one thing wrong with a document.
type Problem struct {
	// Line is the problem's line (from 1); 0 when it has none.
	Line int
	// Column is the column (from 1) of the key or value at fault, when
	// the problem is about one (0 otherwise).
	Column int
	// Path is the dotted path of keys and list indexes to the value at
	// fault, "config" for the document as a whole.
	Path string
	// Msg says what is wrong, in airlock's words.
	Msg string
}

// decoder is one walk of a document into a value.
type decoder struct {
	// unknown are the keys the value's types do not have; types the
	// values that do not fit their type (or cannot be read).
	unknown, types []Problem
	// reported keeps a value reached through several aliases from being
	// reported once per alias.
	reported map[reportedValue]bool
	// expanding are the aliases being followed: one met again contains
	// itself.
	expanding map[*yaml.Node]bool
	// steps counts the values decoded, sizes the values each free-form
	// value holds (see spend).
	steps int
	sizes map[*yaml.Node]int
	// keyLines are the line of every struct key the document sets, by its
	// dotted path, null values included: what a key the value's zero
	// would hide (first_page: 0, total_exact: false) still says.
	keyLines map[string]int
}

type reportedValue struct {
	n *yaml.Node
	t reflect.Type
}

// Decode decodes the document root into the value out points to and
// returns every unknown key, then every value that does not fit its type
// (DropDuplicateKeys first reports the keys written twice), and the line
// of every struct key the document sets, by its dotted path: null values
// included, what a key the value's zero would hide (first_page: 0) still
// says.
func Decode(root *yaml.Node, out any) (problems []Problem, keyLines map[string]int) {
	d := &decoder{reported: map[reportedValue]bool{}, expanding: map[*yaml.Node]bool{}, sizes: map[*yaml.Node]int{}, keyLines: map[string]int{}}
	doc := root
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil, d.keyLines
		}
		doc = doc.Content[0]
	}
	if doc.Kind != 0 {
		d.value(doc, reflect.ValueOf(out).Elem(), nil, true)
	}
	return append(d.unknown, d.types...), d.keyLines
}

// value decodes n into out and reports whether it was set (false drops a
// list item or a map entry, as yaml does). written is false for what is
// reached through an alias: its unknown keys are reported where it is
// written.
func (d *decoder) value(n *yaml.Node, out reflect.Value, path []string, written bool) bool {
	if !d.spend(n, 1) {
		return false
	}
	if n.Kind == yaml.AliasNode {
		target, ok := d.enter(n, path)
		if !ok {
			return false
		}
		defer delete(d.expanding, n)
		return d.value(target, out, path, false)
	}
	t := out.Type()
	if t.Kind() == reflect.Interface {
		return d.byYAML(n, out, path)
	}
	// yaml reads a null-tagged node as null before anything else: no
	// pointer is allocated and no UnmarshalYAML is called for it.
	null := n.ShortTag() == "!!null"
	if null && n.Kind == yaml.ScalarNode || n.Kind == 0 {
		switch t.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice:
			out.Set(reflect.Zero(t))
			return true
		}
		return false
	}
	if !null {
		for t.Kind() == reflect.Pointer {
			if out.IsNil() {
				out.Set(reflect.New(t.Elem()))
			}
			out, t = out.Elem(), t.Elem()
		}
		if reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() == reflect.Interface {
			return d.byYAML(n, out, path)
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		switch t.Kind() {
		case reflect.Struct:
			return d.structMapping(n, out, path, written, nil)
		case reflect.Map:
			return d.mapMapping(n, out, path, written, nil)
		}
	case yaml.SequenceNode:
		if t.Kind() == reflect.Slice {
			s := reflect.MakeSlice(t, 0, len(n.Content))
			for i, item := range n.Content {
				e := reflect.New(t.Elem()).Elem()
				if d.value(item, e, at(path, strconv.Itoa(i)), written) {
					s = reflect.Append(s, e)
				}
			}
			out.Set(s)
			return true
		}
	case yaml.ScalarNode:
		switch t.Kind() {
		case reflect.Struct, reflect.Map, reflect.Slice, reflect.Pointer:
		default:
			return d.byYAML(n, out, path)
		}
	}
	d.wrongType(n, t, path)
	return false
}

// spend counts the values a step decodes (with its aliases expanded)
// against maxDecodeSteps; past it, the walk stops, reporting it once.
func (d *decoder) spend(n *yaml.Node, values int) bool {
	if d.steps > maxDecodeSteps {
		return false
	}
	if d.steps += values; d.steps > maxDecodeSteps {
		d.types = append(d.types, Problem{Line: n.Line, Column: n.Column, Path: "config",
			Msg: "the document's aliases expand it to more values than a configuration holds"})
		return false
	}
	return true
}

// size is how many values n holds with its aliases expanded (capped past
// maxDecodeSteps), each node counted once however often it is asked.
func (d *decoder) size(n *yaml.Node) int {
	if s, ok := d.sizes[n]; ok {
		return s
	}
	d.sizes[n] = 1 // an alias met again inside its own value is yaml's to refuse
	s := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		s = d.size(n.Alias)
	}
	for _, c := range n.Content {
		s = min(s+d.size(c), maxDecodeSteps+1)
	}
	d.sizes[n] = s
	return s
}

// enter follows an alias, unless it is already being followed (its value
// contains it).
func (d *decoder) enter(n *yaml.Node, path []string) (*yaml.Node, bool) {
	if d.expanding[n] || n.Alias == nil {
		d.report(n, nil, path, fmt.Sprintf("the alias *%s refers to a value that contains it", n.Value))
		return nil, false
	}
	d.expanding[n] = true
	return n.Alias, true
}

// byYAML has yaml decode n into out: a scalar, a free-form value, or a
// type that decodes itself. A failure is reported in airlock's words.
func (d *decoder) byYAML(n *yaml.Node, out reflect.Value, path []string) bool {
	if !d.spend(n, d.size(n)) {
		return false
	}
	if err := n.Decode(out.Addr().Interface()); err != nil {
		if out.Kind() != reflect.Interface {
			d.wrongType(n, out.Type(), path)
			return false
		}
		// The cause is somewhere inside the value: reported where it is.
		at := n
		line, column, why := unreadable(n)
		if line > 0 {
			at = &yaml.Node{Line: line, Column: column}
		}
		d.reportAt(n, out.Type(), at, path, why)
		return false
	}
	return true
}

// structMapping decodes a mapping into a struct. merged, when not nil,
// holds the keys already set by the mappings a merge (<<) is read into:
// those keep their value.
func (d *decoder) structMapping(n *yaml.Node, out reflect.Value, path []string, written bool, merged map[string]bool) bool {
	fields := Fields(out.Type())
	done := map[string]int{}
	var merge *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			merge = d.mergeKey(merge, k, v, path)
			continue
		}
		if k.Kind == yaml.ScalarNode && (k.Value == "" || k.ShortTag() == "!!null") {
			if written {
				d.unknownKey(k, path, fields)
			}
			continue
		}
		name, ok := d.key(k, path)
		if !ok {
			continue
		}
		if merged != nil {
			if merged[name] {
				continue
			}
			merged[name] = true
		}
		f, known := fields[name]
		if !known {
			if written {
				d.unknownKey(k, path, fields)
			}
			continue
		}
		if first, dup := done[name]; dup {
			// Only keys written as aliases get here: DropDuplicateKeys
			// removed the others.
			d.unknown = append(d.unknown, Problem{Line: k.Line, Column: k.Column, Path: joinPath(at(path, name)),
				Msg: fmt.Sprintf("duplicate key: %q is already defined at line %d", name, first)})
			continue
		}
		done[name] = k.Line
		if p := joinPath(at(path, name)); d.keyLines[p] == 0 {
			d.keyLines[p] = k.Line
		}
		d.value(v, out.FieldByIndex(f.Index), at(path, name), written)
	}
	if merge != nil {
		d.merge(n, merge, out, path, written, merged)
	}
	return true
}

// mapMapping decodes a mapping into a map with string keys.
func (d *decoder) mapMapping(n *yaml.Node, out reflect.Value, path []string, written bool, merged map[string]bool) bool {
	t := out.Type()
	if t.Key().Kind() != reflect.String {
		return d.byYAML(n, out, path)
	}
	isNew := out.IsNil()
	if isNew {
		out.Set(reflect.MakeMap(t))
	}
	var merge *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			merge = d.mergeKey(merge, k, v, path)
			continue
		}
		name, ok := d.key(k, path)
		if !ok {
			continue
		}
		if merged != nil {
			if merged[name] {
				continue
			}
			merged[name] = true
		}
		kv := reflect.ValueOf(name).Convert(t.Key())
		e := reflect.New(t.Elem()).Elem()
		// A null value is an entry holding the zero value, unless the
		// entry is already there (from the mapping a merge is read into).
		if d.value(v, e, at(path, name), written) || v.ShortTag() == "!!null" && (isNew || !out.MapIndex(kv).IsValid()) {
			out.SetMapIndex(kv, e)
		}
	}
	if merge != nil {
		d.merge(n, merge, out, path, written, merged)
	}
	return true
}

// mergeKey keeps the first merge (<<) of a mapping and reports another.
func (d *decoder) mergeKey(first, k, v *yaml.Node, path []string) *yaml.Node {
	if first == nil {
		return v
	}
	d.unknown = append(d.unknown, Problem{Line: k.Line, Column: k.Column, Path: joinPath(at(path, "<<")),
		Msg: "duplicate key: a mapping merges (<<) once; list the mappings to merge in one <<"})
	return first
}

// merge reads a merge's mappings (<<: *defaults, or a list of them) into
// out, where the mapping's own keys and the earlier merged ones win.
func (d *decoder) merge(parent, m *yaml.Node, out reflect.Value, path []string, written bool, merged map[string]bool) {
	if merged == nil {
		merged = map[string]bool{}
		for i := 0; i+1 < len(parent.Content); i += 2 {
			if k := parent.Content[i]; !isMergeKey(k) && k.Kind == yaml.ScalarNode {
				merged[k.Value] = true
			}
		}
	}
	into := func(src *yaml.Node, written bool) {
		if out.Kind() == reflect.Struct {
			d.structMapping(src, out, path, written, merged)
		} else {
			d.mapMapping(src, out, path, written, merged)
		}
	}
	one := func(n *yaml.Node) {
		switch {
		case n.Kind == yaml.MappingNode:
			into(n, written)
		case n.Kind == yaml.AliasNode && n.Alias != nil && n.Alias.Kind == yaml.MappingNode:
			target, ok := d.enter(n, path)
			if !ok {
				return
			}
			into(target, false)
			delete(d.expanding, n)
		default:
			d.report(n, nil, at(path, "<<"), "a merge (<<) takes a mapping, an alias of one, or a list of them")
		}
	}
	if m.Kind == yaml.SequenceNode {
		for _, item := range m.Content {
			one(item)
		}
		return
	}
	one(m)
}

// key reads a mapping key as a string: a scalar, or an alias of one. A
// null key is skipped without a word here (NullKeys reports it); a list
// or mapping is reported.
func (d *decoder) key(k *yaml.Node, path []string) (string, bool) {
	n := k
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return "", false
		}
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		d.report(k, nil, path, "a key must be a name or a number, not "+describeNode(n))
		return "", false
	}
	if n.ShortTag() == "!!null" {
		return "", false
	}
	var s string
	if err := n.Decode(&s); err != nil {
		d.report(k, nil, path, "a key that cannot be read: "+describeNode(n))
		return "", false
	}
	return s, true
}

// unknownKey reports a key of a struct's mapping that the struct does not
// have, with the key that was probably meant.
func (d *decoder) unknownKey(k *yaml.Node, path []string, fields map[string]Field) {
	if k.Value == "" {
		d.unknown = append(d.unknown, Problem{Line: k.Line, Column: k.Column, Path: joinPath(path), Msg: "unknown key: an empty key"})
		return
	}
	msg := "unknown key"
	if k.ShortTag() == "!!null" {
		// YAML reads a bare null (or ~) as no key at all.
		msg = fmt.Sprintf("the key %q is read as null, which is no key: quote it, or for a filter's null form use is_null", k.Value)
	} else if m := didYouMean(k.Value, fields); m != "" {
		msg += fmt.Sprintf("; did you mean %q?", m)
	}
	d.unknown = append(d.unknown, Problem{Line: k.Line, Column: k.Column, Path: joinPath(at(path, k.Value)), Msg: msg})
}

// wrongType reports a value that does not fit t.
func (d *decoder) wrongType(n *yaml.Node, t reflect.Type, path []string) {
	d.report(n, t, path, "wrong type: "+describeNode(n)+" where "+describeType(t)+" is expected")
}

// report records one problem with the value n at path, once per node and
// type however many aliases lead to it.
func (d *decoder) report(n *yaml.Node, t reflect.Type, path []string, msg string) {
	d.reportAt(n, t, n, path, msg)
}

// reportAt is report with the line and column of another node: where in
// n the problem is.
func (d *decoder) reportAt(n *yaml.Node, t reflect.Type, at *yaml.Node, path []string, msg string) {
	key := reportedValue{n, t}
	if d.reported[key] {
		return
	}
	d.reported[key] = true
	d.types = append(d.types, Problem{Line: at.Line, Column: at.Column, Path: joinPath(path), Msg: msg})
}

// unreadable says why yaml could not read a free-form value, and where:
// a key that is a list or a mapping, a value that does not fit the tag
// written on it, an alias that contains itself, a merge of something
// that is not a mapping. Line 0 means none of these was found. Each node
// is searched once, however many aliases lead to it.
func unreadable(n *yaml.Node) (line, column int, why string) {
	const searching, searched = 1, 2
	state := map[*yaml.Node]int{}
	var find func(n *yaml.Node) bool
	find = func(n *yaml.Node) bool {
		if state[n] == searched {
			return false
		}
		state[n] = searching
		defer func() { state[n] = searched }()
		switch n.Kind {
		case yaml.AliasNode:
			if n.Alias == nil || state[n.Alias] == searching {
				line, column, why = n.Line, n.Column, fmt.Sprintf("the alias *%s refers to a value that contains it", n.Value)
				return true
			}
			return find(n.Alias)
		case yaml.ScalarNode:
			var v any
			if n.Decode(&v) != nil {
				line, column, why = n.Line, n.Column, "a value that does not fit its tag: "+describeNode(n)
				return true
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				kt := k
				if kt.Kind == yaml.AliasNode && kt.Alias != nil {
					kt = kt.Alias
				}
				if kt.Kind == yaml.MappingNode || kt.Kind == yaml.SequenceNode {
					line, column, why = k.Line, k.Column, "a key must be a name or a number, not "+describeNode(kt)
					return true
				}
				if isMergeKey(k) && !mergeable(v) {
					line, column, why = v.Line, v.Column, "a merge (<<) takes a mapping, an alias of one, or a list of them"
					return true
				}
				if find(k) || find(v) {
					return true
				}
			}
		case yaml.SequenceNode:
			for _, item := range n.Content {
				if find(item) {
					return true
				}
			}
		}
		return false
	}
	if find(n) {
		return line, column, why
	}
	return 0, 0, "a value yaml cannot read: its aliases expand it too far"
}

func mergeable(v *yaml.Node) bool {
	isMap := func(n *yaml.Node) bool {
		return n.Kind == yaml.MappingNode || n.Kind == yaml.AliasNode && n.Alias != nil && n.Alias.Kind == yaml.MappingNode
	}
	if v.Kind == yaml.SequenceNode {
		for _, item := range v.Content {
			if !isMap(item) {
				return false
			}
		}
		return true
	}
	return isMap(v)
}

// isMergeKey is yaml's merge key: << without another tag.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

// Field is a struct field's place, through inlined structs.
type Field struct {
	// Index is the field's index sequence (reflect.Value.FieldByIndex).
	Index []int
	Type  reflect.Type
}

// Fields are a struct's YAML keys, as yaml names them and Decode reads
// them: the tag's name, else the field's name in lower case; inlined
// structs' keys are the struct's own.
func Fields(t reflect.Type) map[string]Field {
	out := map[string]Field{}
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
			for k, v := range Fields(f.Type) {
				out[k] = Field{Index: append([]int{i}, v.Index...), Type: v.Type}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = Field{Index: []int{i}, Type: f.Type}
	}
	return out
}

// nodeKinds describe YAML's core tags to a person.
var nodeKinds = map[string]string{
	"!!str": "a string", "!!int": "an integer", "!!float": "a number", "!!bool": "true or false",
	"!!seq": "a list", "!!map": "a mapping", "!!null": "null", "!!timestamp": "a timestamp", "!!binary": "binary data",
}

// describeNode says what a node holds: its kind, and a scalar's value
// (cut short, as a long one may be a secret written in the wrong place).
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	tag := n.ShortTag()
	got, ok := nodeKinds[tag]
	if !ok || n.Style&yaml.TaggedStyle != 0 {
		got = "a value tagged " + tag
	}
	v := []rune(n.Value)
	switch {
	case len(v) == 0:
		return got
	case len(v) > 10:
		v = append(v[:7], []rune("...")...)
	}
	return got + " (" + string(v) + ")"
}

// describeType says what a value of t must be, never naming a Go type.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType {
		return "a duration such as 10s or 250ms"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	}
	return "a value"
}

func at(path []string, k string) []string { return append(append([]string(nil), path...), k) }

// joinPath is a key path as errors name it: "config" for the document.
func joinPath(path []string) string {
	if len(path) == 0 {
		return "config"
	}
	return strings.Join(path, ".")
}
