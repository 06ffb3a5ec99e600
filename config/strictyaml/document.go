package strictyaml

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SyntaxError is a YAML syntax error (yaml.Unmarshal's error for b) on the
// line a person should look at. It is the one place airlock reads the YAML
// library's wording: the
// parser reports a syntax error only as text ("yaml: line N: problem"),
// with no type or position to read, so the line and the problem are cut
// out of that text here and nowhere else (decoding errors come from
// airlock's own walk, decode.go). The parser's own problems (as opposed to
// the scanner's) are reported one line early, which is corrected, and an
// unclosed flow collection is moved to the line where it opens.
func SyntaxError(b []byte, err error) Problem {
	problem := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(problem, "line "); ok {
		if n, p, ok := strings.Cut(rest, ": "); ok {
			if l, convErr := strconv.Atoi(n); convErr == nil {
				line, problem = l, p
			}
		}
	}
	if line > 0 && parserProblems[problem] {
		line++
	}
	return openerLine(b, Problem{Line: line, Path: "config", Msg: explainSyntax(problem)}, problem)
}

// parserProblems are the YAML parser's own problems (as opposed to the
// scanner's): the parser reports them on the line before the one they are
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
func openerLine(b []byte, e Problem, problem string) Problem {
	open, closing := "", ""
	switch problem {
	case "did not find expected ',' or ']'":
		open, closing = "[", "]"
	case "did not find expected ',' or '}'":
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

// SecondDocument is the line of a second YAML document holding anything
// (after a --- separator), or 0 when the file holds one.
func SecondDocument(b []byte) int {
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

// didYouMean is the known key closest to key, when one is close enough to
// be a slip of the keyboard (an edit or two, a swap of neighbours).
func didYouMean[V any](key string, known map[string]V) string {
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

// DropDuplicateKeys reports every key written twice in one mapping, at the
// later one, and removes the later one from the document, so that the rest
// of the mapping is still decoded and checked. Call it before Decode.
func DropDuplicateKeys(root *yaml.Node) []Problem {
	var errs []Problem
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
					errs = append(errs, Problem{Line: k.Line, Column: k.Column, Path: p, Msg: fmt.Sprintf("duplicate key: %q is already defined at line %d", k.Value, first)})
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

// NullKeys reports every mapping key YAML reads as null (null, ~ or
// nothing): the decoder drops such a key and its value without a word,
// so `null: {param: …}` would silently configure nothing. Decode, which
// skips such a key, leaves it to this.
func NullKeys(root *yaml.Node) []Problem {
	var errs []Problem
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Tag == "!!null" {
					errs = append(errs, Problem{Line: k.Line, Path: "config",
						Msg: fmt.Sprintf("the key %q is read as null, which is no key: quote it, or for a filter's null form use is_null", k.Value)})
				}
			}
		}
		for _, ch := range n.Content {
			walk(ch)
		}
	}
	walk(root)
	return errs
}

// Line finds the line of a dotted path in the document root (the document
// node), 0 when the document is empty: the line of the path's last key or
// list item the document has. Path elements are map keys or list indexes.
func Line(root *yaml.Node, path ...string) int {
	if root == nil || len(root.Content) == 0 {
		return 0
	}
	n := root.Content[0]
	best := n.Line
	for _, p := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
					best = n.Content[i].Line
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(p); err == nil && i < len(n.Content) {
				next = n.Content[i]
				best = next.Line
			}
		}
		if next == nil {
			return best
		}
		n = next
	}
	return best
}
