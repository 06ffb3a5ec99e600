package probe

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/airlock-mcp/airlock/config"
)

// The file being fixed, as a YAML node tree: reading it, editing it in
// place and writing it back with the user's layout and comments.

type kv struct{ k, v *yaml.Node }

func mapping(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	return n
}

func pairs(n *yaml.Node) []kv {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []kv
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, kv{n.Content[i], n.Content[i+1]})
	}
	return out
}

func get(n *yaml.Node, key string) *yaml.Node {
	for _, p := range pairs(n) {
		if p.k.Value == key {
			return p.v
		}
	}
	return nil
}

func keyNode(n *yaml.Node, key string) *yaml.Node {
	for _, p := range pairs(n) {
		if p.k.Value == key {
			return p.k
		}
	}
	return nil
}

// hintLiteral reads the flow mapping a literal check's hint declares
// ("declare literal: {operators: [...], split: [...]}"); nil when there is
// none.
func hintLiteral(hint string) *yaml.Node {
	const lead = "declare literal: "
	i := strings.Index(hint, lead)
	if i < 0 {
		return nil
	}
	rest := hint[i+len(lead):]
	depth, quoted, end := 0, false, -1
	for j := 0; j < len(rest) && end < 0; j++ {
		switch c := rest[j]; {
		case quoted && c == '\\':
			j++
		case c == '"':
			quoted = !quoted
		case !quoted && c == '{':
			depth++
		case !quoted && c == '}':
			depth--
			if depth == 0 {
				end = j + 1
			}
		}
	}
	n := &yaml.Node{}
	if end < 0 || yaml.Unmarshal([]byte(rest[:end]), n) != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	n.Content[0].Style = yaml.FlowStyle
	return n.Content[0]
}

// setNode sets key to v in a mapping, in place when the key is there
// (keeping the key node, whose line is where a patch goes).
func setNode(n *yaml.Node, key string, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v.Line = n.Content[i+1].Line
			if v.Line == 0 {
				v.Line = n.Content[i].Line
			}
			n.Content[i+1] = v
			return
		}
	}
	line := 0
	if len(n.Content) > 0 {
		line = n.Content[len(n.Content)-1].Line
	}
	k := scalar(key)
	// A key the file did not have: written on a line of its own after the
	// mapping's last line (Column -1 marks it).
	k.Line, v.Line, k.Column = line, line, -1
	n.Content = append(n.Content, k, v)
}

func deleteKey(n *yaml.Node, key string) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return
		}
	}
}

// setParam adds a query parameter to list.params (as a flow mapping).
func setParam(res *yaml.Node, k, v string) {
	list := get(res, "list")
	if list == nil {
		return
	}
	params := get(list, "params")
	if params == nil {
		params = &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		setNode(list, "params", params)
	}
	n := &yaml.Node{}
	if yaml.Unmarshal([]byte(v), n) == nil && len(n.Content) > 0 {
		setNode(params, k, n.Content[0])
	} else {
		setNode(params, k, scalar(v))
	}
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func intNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s} }

func flowSeq(items ...string) *yaml.Node {
	n := &yaml.Node{}
	_ = yaml.Unmarshal([]byte("["+strings.Join(items, ", ")+"]"), n)
	seq := n.Content[0]
	seq.Style = yaml.FlowStyle
	return seq
}

// flowMap builds a flow mapping from keys and values written as YAML.
func flowMap(kvs [][2]string) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Tag: "!!map"}
	for _, p := range kvs {
		v := &yaml.Node{}
		if err := yaml.Unmarshal([]byte(p[1]), v); err != nil || len(v.Content) == 0 {
			m.Content = append(m.Content, scalar(p[0]), scalar(p[1]))
			continue
		}
		m.Content = append(m.Content, scalar(p[0]), v.Content[0])
	}
	return m
}

func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = cloneNode(ch)
	}
	return &c
}

func todosUnder(n *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.ScalarNode && config.IsTodo(n.Value) {
			out = append(out, n)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return out
}

// patchKey marks the line of key (in mapping n) to be written anew, ending
// with the evidence as its comment.
func (f *fixer) patchKey(n *yaml.Node, key, evidence string) {
	f.patch(n, key, evidence)
}

func (f *fixer) patch(n *yaml.Node, key, evidence string) {
	k := keyNode(n, key)
	if k == nil {
		return
	}
	ev := strings.Join(strings.Fields(evidence), " ")
	if len(ev) > 240 {
		ev = ev[:237] + "..."
	}
	if old, ok := f.patched[k]; ok && ev == "" {
		ev = old
	}
	f.patched[k] = ev
}

// render writes the file: each patched key's line is written anew (its
// value as one flow line, its comment the evidence), every other line as
// it was. A patched value that spans several lines is written by
// re-encoding the whole tree, which keeps comments but not every layout
// choice.
func (f *fixer) render() ([]byte, error) {
	if len(f.patched) == 0 {
		return []byte(strings.Join(f.lines, "")), nil
	}
	byLine := map[int]*yaml.Node{}
	var values = map[*yaml.Node]*yaml.Node{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for _, p := range pairs(n) {
			values[p.k] = p.v
			walk(p.v)
		}
		if n != nil && n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				walk(c)
			}
		}
	}
	walk(f.root)
	inserted := map[int][]*yaml.Node{}
	for k := range f.patched {
		v := values[k]
		switch {
		case v == nil || k.Line == 0 || k.Line > len(f.lines):
			return f.reencode()
		case k.Column == -1:
			inserted[k.Line] = append(inserted[k.Line], k)
		case !oneLine(f.lines[k.Line-1], k, v):
			return f.reencode()
		default:
			byLine[k.Line] = k
		}
	}
	line := func(indent string, k *yaml.Node) string {
		text := indent + flowKey(k.Value) + ": " + flow(values[k])
		if ev := f.patched[k]; ev != "" {
			text += "  # probe --fix: " + ev
		}
		return text + "\n"
	}
	var b strings.Builder
	for i, l := range f.lines {
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
		if k := byLine[i+1]; k != nil {
			b.WriteString(line(indent, k))
		} else {
			b.WriteString(l)
		}
		for _, k := range inserted[i+1] {
			b.WriteString(line(indent, k))
		}
	}
	return []byte(b.String()), nil
}

// oneLine says whether a key and its value were written on one line
// (a scalar or a flow collection), so that the line can be replaced whole.
func oneLine(line string, k, v *yaml.Node) bool {
	if v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode {
		if v.Style&yaml.FlowStyle == 0 {
			return false
		}
	}
	trimmed := strings.TrimLeft(line, " ")
	if !strings.HasPrefix(trimmed, k.Value+":") && !strings.HasPrefix(trimmed, strconv.Quote(k.Value)+":") {
		return false
	}
	// A flow value that continues on the next lines cannot be replaced as
	// one line.
	open := strings.Count(line, "{") + strings.Count(line, "[") - strings.Count(line, "}") - strings.Count(line, "]")
	return open <= 0 || strings.Contains(line, "TODO(")
}

// reencode writes the whole tree with yaml.v3, comments included.
func (f *fixer) reencode() ([]byte, error) {
	for k, ev := range f.patched {
		if ev != "" {
			k.LineComment = "probe --fix: " + ev
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f.doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// flow writes a node as a one-line YAML value.
func flow(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		var parts []string
		for _, p := range pairs(n) {
			parts = append(parts, flowKey(p.k.Value)+": "+flow(p.v))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case yaml.SequenceNode:
		var parts []string
		for _, c := range n.Content {
			parts = append(parts, flow(c))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case yaml.AliasNode:
		return "*" + n.Value
	}
	switch n.Tag {
	case "!!int", "!!float", "!!bool", "!!null":
		return n.Value
	}
	return quoteYAML(n.Value)
}

func flowKey(k string) string { return quoteYAML(k) }

var plainYAML = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./-]*$`)

var yamlWords = map[string]bool{"true": true, "false": true, "null": true, "yes": true, "no": true, "on": true, "off": true, "y": true, "n": true, "~": true}

// quoteYAML writes a string as a YAML scalar that reads back as the same
// string: plain when that is safe, else double-quoted.
func quoteYAML(s string) string {
	if plainYAML.MatchString(s) && !yamlWords[strings.ToLower(s)] {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}
