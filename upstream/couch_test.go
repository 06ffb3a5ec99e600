package upstream

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// couchFind is a fake CouchDB _find: it serves docs by bookmark ("" is the
// first page, then b1, b2, ...), answering each page with the next
// bookmark as CouchDB does, the last and the empty one included, unless
// page says otherwise.
func couchFind(docs []string, limit int, page func(n int, body map[string]any, answer map[string]any)) *scripted {
	s := &scripted{}
	s.fn = func(n int, r *http.Request, body map[string]any) (int, any) {
		if r.Method != http.MethodPost || r.URL.Path != "/db/_find" {
			return 404, map[string]any{"error": "not_found"}
		}
		start := 0
		if bm, _ := body["bookmark"].(string); bm != "" {
			start = int(bm[1]-'0') * limit
		}
		var out []any
		for i := start; i < min(start+limit, len(docs)); i++ {
			out = append(out, map[string]any{"_id": docs[i], "_rev": "1-x", "status": "active"})
		}
		if out == nil {
			out = []any{}
		}
		next := start/limit + 1
		if len(out) == 0 {
			next = start / limit
		}
		a := map[string]any{"docs": out, "bookmark": "b" + string(rune('0'+next))}
		if page != nil {
			page(n, body, a)
		}
		return 200, a
	}
	return s
}

const couchResource = `  docs:
    upstream: api
    list: {path: /db/_find, method: POST, body: {selector: {type: account}}, expression: {param: selector, language: mango}}
    pagination: {dialect: bookmark, page_size: 2}
    id_field: _id
    fields: {_id: {type: string}, status: {type: string}, owner: {type: string, nullable: true, null_values: [""]}, "a.b": {type: string}, n: {type: integer}, tags: {type: array, elements: string}}
    filters:
      status: {expression: status, multi: ""}
      owner: {expression: owner}
      dotted: {field: a.b, expression: a.b}
      n: {expression: n}
      tag: {field: tags, op: contains, expression: tags}
`

// TestBookmark_AnEmptyPageEndsTheListNeverTheBookmark: CouchDB hands out a
// bookmark on every page, the last one included: the bookmark is sent
// back in the body until a page comes back empty, which alone proves the
// end.
func TestBookmark_AnEmptyPageEndsTheListNeverTheBookmark(t *testing.T) {
	s := couchFind([]string{"a", "b", "c", "d", "e"}, 2, nil)
	r := runtimeFor(t, listConfig(serve(t, s), couchResource)).Resources["docs"]
	sink, out, err := scanAll(t, r, nil, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	checkSameSet(t, sink.ids, []string{"a", "b", "c", "d", "e"})
	if !out.ScanComplete || endOf(t, out).EndSignal != dialect.SignalEmptyPage || len(s.bodies) != 4 {
		t.Errorf("complete %v, coverage %+v, %d requests; want complete on the empty fourth page", out.ScanComplete, out.Sources, len(s.bodies))
	}
	if s.bodies[0]["bookmark"] != nil || s.bodies[1]["bookmark"] != "b1" || s.bodies[3]["bookmark"] != "b3" {
		t.Errorf("bodies %v; want no bookmark first, then each page's", s.bodies)
	}
}

// TestBookmark_WhatDoesNotProveTheEndLeavesItUnproven: documents without a
// bookmark (PouchDB Server implements none), a bookmark that is not a
// string, and one that does not move are never the end.
func TestBookmark_WhatDoesNotProveTheEndLeavesItUnproven(t *testing.T) {
	cases := []struct {
		name   string
		page   func(n int, body, a map[string]any)
		signal string
	}{
		{"no_bookmark", func(_ int, _, a map[string]any) { delete(a, "bookmark") }, dialect.SignalNotSeen},
		{"bookmark_an_object", func(_ int, _, a map[string]any) { a["bookmark"] = map[string]any{"k": 1} }, dialect.SignalUnreadable},
		{"bookmark_that_does_not_move", func(n int, _, a map[string]any) {
			a["bookmark"] = "b1"
			docs := a["docs"].([]any)
			for i := range docs {
				docs[i].(map[string]any)["_id"] = docs[i].(map[string]any)["_id"].(string) + string(rune('0'+n))
			}
		}, dialect.SignalRepeatedPage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := couchFind([]string{"a", "b", "c", "d", "e"}, 2, c.page)
			r := runtimeFor(t, listConfig(serve(t, s), couchResource)).Resources["docs"]
			_, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if out.ScanComplete || endOf(t, out).EndSignal != c.signal {
				t.Errorf("complete %v, coverage %+v; want not complete, %s", out.ScanComplete, out.Sources, c.signal)
			}
		})
	}
}

// TestMango_SelectorBindsEveryValueAndMeansWhatAirlocksFilterMeans: the
// selector is JSON built from the typed filter, joined with the list's
// own selector under $and; a hostile value stays one string; a dot in a
// member's name is escaped; null selects absent, null and the declared
// stand-ins, as airlock's null does (Mango's bare null is only the
// second); an integer a double cannot hold is airlock's alone.
func TestMango_SelectorBindsEveryValueAndMeansWhatAirlocksFilterMeans(t *testing.T) {
	null := `{"$or":[{"owner":{"$exists":false}},{"owner":{"$eq":null}},{"owner":{"$eq":""}}]}`
	cases := []struct {
		name   string
		filter map[string]any
		want   string
	}{
		{"one_value", map[string]any{"status": "active"},
			`{"$and":[{"type":"account"},{"status":{"$eq":"active"}}]}`},
		{"hostile_value_stays_a_string", map[string]any{"status": `x"},"$or":[{"_id":{"$gt":null}}],"y":{"a":"`},
			`{"$and":[{"type":"account"},{"status":{"$eq":"x\"},\"$or\":[{\"_id\":{\"$gt\":null}}],\"y\":{\"a\":\""}}]}`},
		{"operator_looking_value_is_a_value", map[string]any{"status": "$gt"},
			`{"$and":[{"type":"account"},{"status":{"$eq":"$gt"}}]}`},
		{"null_is_absent_null_or_stand_in", map[string]any{"owner": nil},
			`{"$and":[{"type":"account"},` + null + `]}`},
		{"stand_in_is_null", map[string]any{"owner": ""},
			`{"$and":[{"type":"account"},` + null + `]}`},
		{"any_of_with_null", map[string]any{"owner": []any{"ann", nil}},
			`{"$and":[{"type":"account"},{"$or":[{"owner":{"$in":["ann"]}},` + null + `]}]}`},
		{"dot_in_a_name_escaped", map[string]any{"dotted": "v"},
			`{"$and":[{"type":"account"},{"a\\.b":{"$eq":"v"}}]}`},
		{"contains", map[string]any{"tag": "vip"},
			`{"$and":[{"type":"account"},{"tags":{"$elemMatch":{"$eq":"vip"}}}]}`},
		{"exact_number", map[string]any{"n": json.Number("9007199254740992")},
			`{"$and":[{"type":"account"},{"n":{"$eq":9007199254740992}}]}`},
		{"number_beyond_a_double_is_airlocks", map[string]any{"n": json.Number("9007199254740993")},
			`{"type":"account"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := couchFind(nil, 2, nil)
			r := runtimeFor(t, listConfig(serve(t, s), couchResource)).Resources["docs"]
			if _, _, err := scanAll(t, r, c.filter, Budget{}); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(s.bodies[0]["selector"])
			if string(got) != c.want {
				t.Errorf("selector %s\nwant     %s", got, c.want)
			}
		})
	}
}
