package config

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// TodoPrefix starts a value that a drafted configuration (airlock init)
// could not decide: TODO(what to decide). Such a configuration is refused
// until every one is replaced, so a guess never runs as a fact.
const TodoPrefix = "TODO("

// Todo is the placeholder value for something a person must decide.
func Todo(what string) string { return TodoPrefix + what + ")" }

// IsTodo reports whether a configuration value holds an unresolved TODO.
func IsTodo(v string) bool { return strings.Contains(v, TodoPrefix) }

// Unresolved lists every value of the configuration file that is still a
// TODO(...) placeholder, with its line: keys and values alike, wherever
// they are.
func (c *Config) Unresolved() Errors {
	if c.root == nil {
		return nil
	}
	return unresolved(c.root)
}

// FindTodos lists the TODO(...) placeholders of a configuration file
// before it is parsed, so that they are reported as what they are rather
// than as the invalid values they stand in for. A file that is not YAML
// has none (parsing reports it).
func FindTodos(b []byte) Errors {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil
	}
	return unresolved(&root)
}

func unresolved(root *yaml.Node) Errors {
	var errs Errors
	var walk func(n *yaml.Node, path []string)
	walk = func(n *yaml.Node, path []string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, ch := range n.Content {
				walk(ch, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := append(append([]string(nil), path...), k.Value)
				errs = append(errs, todoErrors(k, p)...)
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, ch := range n.Content {
				walk(ch, append(append([]string(nil), path...), strconv.Itoa(i)))
			}
		case yaml.ScalarNode:
			errs = append(errs, todoErrors(n, path)...)
		case yaml.AliasNode:
			// An alias repeats a node already walked: its TODO is reported
			// once, where it is written.
		}
	}
	walk(root, nil)
	return errs
}

// todoErrors reports each TODO(...) a scalar holds: a path can hold one
// per parameter.
func todoErrors(n *yaml.Node, path []string) Errors {
	var errs Errors
	rest := n.Value
	for {
		i := strings.Index(rest, TodoPrefix)
		if i < 0 {
			return errs
		}
		what := rest[i+len(TodoPrefix):]
		rest = what
		if end := strings.Index(what, ")"); end >= 0 {
			what, rest = what[:end], what[end+1:]
		}
		errs = append(errs, Error{Line: n.Line, Path: strings.Join(path, "."), Msg: "unresolved TODO left by airlock init: " + what})
	}
}

// DraftErrors reports a configuration file that still holds TODO(...)
// placeholders: every TODO with its line, together with every other error
// of the file, all at once. An error about a value a TODO stands in for
// (on its line, at or under its path, or quoting it) is left out: the TODO
// says it. It returns nil when the file holds no TODO.
func DraftErrors(b []byte) error {
	todos := FindTodos(b)
	if len(todos) == 0 {
		return nil
	}
	_, err := Parse(b)
	var ces Errors
	if !errors.As(err, &ces) {
		return todos
	}
	out := append(Errors(nil), todos...)
	for _, e := range ces {
		if !coveredByTodo(e, todos) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

func coveredByTodo(e Error, todos Errors) bool {
	if strings.Contains(e.Msg, TodoPrefix) {
		return true
	}
	for _, t := range todos {
		if e.Line == t.Line || e.Path == t.Path || strings.HasPrefix(e.Path, t.Path+".") {
			return true
		}
	}
	return false
}
