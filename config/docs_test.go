package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestDocs_EveryActionKeyCheckAcceptsIsDocumented: the decoder refuses a
// key no struct declares; every key it accepts under actions is written in
// docs/config.md's Actions section (as a YAML key or in backquotes), so
// that nothing check lets through is a key a reader cannot look up.
// Response field contracts are the Field contracts section's.
func TestDocs_EveryActionKeyCheckAcceptsIsDocumented(t *testing.T) {
	doc := readDoc(t, "../docs/config.md")
	start := strings.Index(doc, "\n## Actions\n")
	if start < 0 {
		t.Fatal("docs/config.md has no Actions section")
	}
	actions := doc[start:]
	if end := strings.Index(actions[1:], "\n## "); end >= 0 {
		actions = actions[:end+1]
	}
	for _, key := range yamlKeys(ActionConfig{}, "", "response.fields") {
		last := key[strings.LastIndex(key, ".")+1:]
		if !strings.Contains(actions, last+":") && !strings.Contains(actions, "`"+last+"`") && !strings.Contains(actions, "`"+key+"`") {
			t.Errorf("actions.%s is accepted but docs/config.md's Actions section does not document it", key)
		}
	}
}

// yamlKeys lists the dotted keys the decoder accepts under a value of v's
// type (from its yaml tags), not descending under the keys in skip.
func yamlKeys(v any, prefix string, skip ...string) []string {
	var out []string
	var walk func(t reflect.Type, prefix string, seen map[reflect.Type]bool)
	walk = func(t reflect.Type, prefix string, seen map[reflect.Type]bool) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || slices.Contains(skip, strings.TrimSuffix(prefix, ".")) {
			return
		}
		seen[t] = true
		defer delete(seen, t)
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			switch {
			case opts == "inline":
				walk(f.Type, prefix, seen)
				continue
			case name == "" || name == "-":
				continue
			}
			out = append(out, prefix+name)
			walk(f.Type, prefix+name+".", seen)
		}
	}
	walk(reflect.TypeOf(v), prefix, map[reflect.Type]bool{})
	return out
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
