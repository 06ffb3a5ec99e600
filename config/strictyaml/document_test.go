package strictyaml

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

// The one function that reads the YAML parser's wording: the line of a
// scanner's problem is the parser's, a parser's problem is reported one
// line early and moved down, and an unclosed flow collection is moved to
// the line that opens it.
func TestSyntaxError_ReadsTheParsersLineAndProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want Problem
	}{
		{"scanner: a tab where indentation belongs", "environment: test\n\tupstreams: {}\n",
			Problem{Line: 2, Path: "config", Msg: "found a tab character that violates indentation"}},
		{"scanner: on the first line, yaml names no line", "environment: a: b\n",
			Problem{Path: "config", Msg: "mapping values are not allowed in this context"}},
		{"parser: a key indented differently, reported a line early", "upstreams:\n  api: {}\n bad: 1\n",
			Problem{Line: 3, Path: "config", Msg: "a line below this one is indented differently from its mapping (did not find expected key)"}},
		{"parser: an unclosed list", "environment: test\nupstreams: [a,\n  b\nresources: {}\n",
			Problem{Line: 2, Path: "config", Msg: "a [list] that opens on this line is not closed, or its items are not separated by commas (did not find expected ',' or ']')"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			err := yaml.Unmarshal([]byte(tc.yaml), &n)
			if err == nil {
				t.Fatal("the YAML parsed")
			}
			if got := SyntaxError([]byte(tc.yaml), err); got != tc.want {
				t.Errorf("SyntaxError(%q) = %+v, want %+v", err, got, tc.want)
			}
		})
	}
}

// Line finds the line of the deepest key or list item of a path the
// document has, so that a problem about a missing key is still shown
// where its mapping is.
func TestLine_IsTheDeepestPartOfThePathTheDocumentHas(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("a:\n  b:\n    - x\n    - c: 1\nd: 2\n"), &root); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path []string
		want int
	}{
		{nil, 1}, {[]string{"a"}, 1}, {[]string{"a", "b"}, 2}, {[]string{"a", "b", "1"}, 4},
		{[]string{"a", "b", "1", "c"}, 4}, {[]string{"a", "b", "7"}, 2}, {[]string{"d"}, 5}, {[]string{"a", "nope"}, 1},
	} {
		if got := Line(&root, tc.path...); got != tc.want {
			t.Errorf("Line(%q) = %d, want %d", tc.path, got, tc.want)
		}
	}
	if got := Line(&yaml.Node{}); got != 0 {
		t.Errorf("an empty document: line %d, want 0", got)
	}
}

// Decode reports an unknown key with the key meant, a value of the wrong
// type in airlock's words, and the line of every key set, null included.
func TestDecode_ReportsEveryProblemAndWhereEachKeyIs(t *testing.T) {
	type inner struct {
		Count int `yaml:"count"`
	}
	type doc struct {
		Name  string `yaml:"name"`
		Inner *inner `yaml:"inner"`
		Off   bool   `yaml:"off"`
	}
	b := []byte("name: x\ninner: {cuont: 1, count: many}\noff: ~\nname: y\n")
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	problems := DropDuplicateKeys(&root)
	decoded, keyLines := Decode(&root, &doc{})
	problems = append(problems, decoded...)
	want := []Problem{
		{Line: 4, Column: 1, Path: "name", Msg: `duplicate key: "name" is already defined at line 1`},
		{Line: 2, Column: 9, Path: "inner.cuont", Msg: `unknown key; did you mean "count"?`},
		{Line: 2, Column: 26, Path: "inner.count", Msg: "wrong type: a string (many) where an integer is expected"},
	}
	if len(problems) != len(want) {
		t.Fatalf("problems %+v, want %+v", problems, want)
	}
	for i := range want {
		if problems[i] != want[i] {
			t.Errorf("problem %d = %+v, want %+v", i, problems[i], want[i])
		}
	}
	for path, line := range map[string]int{"name": 1, "inner": 2, "inner.count": 2, "off": 3} {
		if keyLines[path] != line {
			t.Errorf("key %s at line %d, want %d", path, keyLines[path], line)
		}
	}
}

// A key YAML reads as null is no key: Decode skips it, NullKeys says so
// where it is written.
func TestNullKeys_AreReportedWhereTheyAreWritten(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("a:\n  null: {x: 1}\n  ~: 2\n  \"null\": 3\n"), &root); err != nil {
		t.Fatal(err)
	}
	got := NullKeys(&root)
	if len(got) != 2 || got[0].Line != 2 || got[1].Line != 3 || got[0].Path != "config" {
		t.Errorf("NullKeys = %+v, want lines 2 and 3 (the quoted \"null\" is a key)", got)
	}
}
