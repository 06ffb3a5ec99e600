package template

import (
	"net/url"
	"testing"
)

func TestRenderURL_EscapesPathAndQueryValuesEachOnce(t *testing.T) {
	v := Vars{ID: "a/b&c=d e", Params: map[string]any{"summary": "x?y#z", "n": 3}}
	path, q, err := v.RenderURL("/wiki/{{id}}/edit?action=edit&pageid={{id}}&summary=bot:+{{params.summary}}&n={{params.n}}&prop=info%7Crevisions")
	if err != nil {
		t.Fatal(err)
	}
	if path != "/wiki/a%2Fb&c=d%20e/edit" {
		t.Errorf("path = %q", path)
	}
	want := url.Values{"action": {"edit"}, "pageid": {"a/b&c=d e"}, "summary": {"bot: x?y#z"}, "n": {"3"}, "prop": {"info|revisions"}}
	if q.Encode() != want.Encode() {
		t.Errorf("query = %v, want %v", q, want)
	}
	if _, q, _ := v.RenderURL("/items/{{id}}"); q != nil {
		t.Errorf("a path without a query has query %v", q)
	}
}
