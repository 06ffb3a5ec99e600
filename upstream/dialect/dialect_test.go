package dialect

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

func TestNextLink_FindsRelNext(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   string
	}{
		{"no header", nil, ""},
		{"only next", []string{`<https://api.example.com/items?page=2>; rel="next"`}, "https://api.example.com/items?page=2"},
		{"several links, next in the middle", []string{`<https://a.example/x?page=1>; rel="prev", <https://a.example/x?page=3>; rel="next", <https://a.example/x?page=9>; rel="last"`}, "https://a.example/x?page=3"},
		{"rel with several values", []string{`<https://a.example/x?page=5>; rel="last next"`}, "https://a.example/x?page=5"},
		{"rel with several values, next first", []string{`<https://a.example/x?page=5>; rel="next prefetch"`}, "https://a.example/x?page=5"},
		{"commas inside the URLs", []string{`<https://a.example/x?ids=1,2,3&page=2>; rel="next", <https://a.example/x?ids=1,2,3&page=7>; rel="last"`}, "https://a.example/x?ids=1,2,3&page=2"},
		{"commas inside the URL of a link before next", []string{`<https://a.example/x?ids=1,2&page=7>; rel="last", <https://a.example/x?ids=1,2&page=2>; rel="next"`}, "https://a.example/x?ids=1,2&page=2"},
		{"no next", []string{`<https://a.example/x?page=1>; rel="first", <https://a.example/x?page=9>; rel="last"`}, ""},
		{"next-archive is not next", []string{`<https://a.example/x?page=2>; rel="next-archive"`}, ""},
		{"unquoted rel", []string{`<https://a.example/x?page=2>; rel=next`}, "https://a.example/x?page=2"},
		{"case of rel and its value", []string{`<https://a.example/x?page=2>; REL="Next"`}, "https://a.example/x?page=2"},
		{"other parameters before rel", []string{`<https://a.example/x?page=2>; title="Page 2"; rel="next"`}, "https://a.example/x?page=2"},
		{"relative reference", []string{`</items?page=2&per_page=50>; rel="next"`}, "/items?page=2&per_page=50"},
		{"next in a second header field", []string{`<https://a.example/x?page=9>; rel="last"`, `<https://a.example/x?page=2>; rel="next"`}, "https://a.example/x?page=2"},
		{"blank space around everything", []string{`  <https://a.example/x?page=2>  ;  rel = "next" , <https://a.example/x?page=9>;rel="last"`}, "https://a.example/x?page=2"},
		{"angle brackets inside a quoted parameter", []string{`<https://a.example/x?page=1>; rel="prev"; title="<< previous", <https://a.example/x?page=3>; rel="next"`}, "https://a.example/x?page=3"},
		{"semicolon inside the URL", []string{`<https://a.example/x;v=2?page=2>; rel="next"`}, "https://a.example/x;v=2?page=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.values {
				h.Add("Link", v)
			}
			if got := nextLink(h); got != tc.want {
				t.Errorf("nextLink(%q) = %q, want %q", tc.values, got, tc.want)
			}
		})
	}
}

// TestDialects_EveryKindHasItsRuntime: config's table of dialects and the
// constructors here name the same dialects, so that a dialect configured
// is never one without a runtime.
func TestDialects_EveryKindHasItsRuntime(t *testing.T) {
	kinds := map[string]bool{}
	for _, k := range config.DialectKinds() {
		kinds[k.Name] = true
		p := config.ResolvePagination(config.PaginationConfig{Dialect: k.Name})
		if New(p, "id") == nil {
			t.Errorf("dialect %s has no runtime", k.Name)
		}
	}
	for name := range dialects {
		if !kinds[name] {
			t.Errorf("runtime %s has no kind in config's table", name)
		}
	}
}

// TestFollowingByNumber: the page after a page is derived only where its
// rel="prev" link names the page before it by number, every other part of
// the URL the same.
func TestFollowingByNumber(t *testing.T) {
	for _, tc := range []struct {
		own, prev, want string
	}{
		{"https://api.example/items?page=3&per_page=30", "https://api.example/items?page=2&per_page=30", "https://api.example/items?page=4&per_page=30"},
		{"https://api.example/items?page=1&size=2", "/items?page=0&size=2", "https://api.example/items?page=2&size=2"},
		{"https://api.example/items?page=3&per_page=30", "", ""},
		{"https://api.example/items?page=3&per_page=30", "https://api.example/items?page=1&per_page=30", ""},
		{"https://api.example/items?page=3&per_page=30", "https://api.example/items?page=2&per_page=20", ""},
		{"https://api.example/items?page=3&per_page=30", "https://other.example/items?page=2&per_page=30", ""},
		{"https://api.example/items?page=03", "https://api.example/items?page=2", ""},
		{"https://api.example/items?after=r4", "https://api.example/items?before=r3", ""},
		{"https://api.example/items?offset=40&limit=20", "https://api.example/items?offset=20&limit=20", ""},
	} {
		own, err := url.Parse(tc.own)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		if tc.prev != "" {
			h.Set("Link", `<`+tc.prev+`>; rel="prev", <https://api.example/items>; rel="first"`)
		}
		got := followingByNumber(&transport.Response{URL: own, Header: h})
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("%s after %s: got %s, want none", tc.own, tc.prev, got)
		case tc.want != "" && (got == nil || got.String() != tc.want):
			t.Errorf("%s after %s: got %v, want %s", tc.own, tc.prev, got, tc.want)
		}
	}
}
