package upstream

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// TestListBody_ReadsItemsOneAtATimeAsAWholeDecodeWould: a page whose
// items stay raw until read gives the same document and the same items,
// in the same order, as decoding the body whole; a body it cannot read
// that way is left to the whole decode, which says what is wrong.
func TestListBody_ReadsItemsOneAtATimeAsAWholeDecodeWould(t *testing.T) {
	cases := []struct {
		name, path, body string
		lazy             bool
	}{
		{"items under a key", "data", `{"has_more":true,"data":[{"id":"a","n":1},{"id":"b","n":2.50}],"next":"x"}`, true},
		{"nested path, spaces, escapes", "result.items",
			"{ \"result\" : {\"total\": 3, \"items\" : [ {\"id\":\"a\\\"]}\"} ,\n {\"id\":\"b\",\"o\":{\"x\":[1,{}]}} , {\"id\":\"c\"} ] } }", true},
		{"an escaped key", "data", `{"da\u0074a":[{"id":"a"}]}`, true},
		{"the body is the array", "", `[{"id":"a"},{"id":"b"},{"id":"c"}]`, true},
		{"one item", "data", `{"data":[{"id":"only"}]}`, true},
		{"no items", "data", `{"data":[],"has_more":false}`, true},
		{"items null", "data", `{"data":null}`, false},
		{"items not an array", "data", `{"data":{"id":"a"}}`, false},
		{"a key given twice", "data", `{"data":[{"id":"a"}],"data":[{"id":"b"}]}`, false},
		{"the key missing", "data", `{"items":[{"id":"a"}]}`, false},
		{"not JSON", "data", `{"data":[{"id":"a"}`, false},
		{"data after the document", "data", `{"data":[]} {}`, false},
		{"big numbers stay exact", "data", `{"data":[{"id":12345678901234567890,"x":1e400}]}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := &Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(tc.body)}
			doc, items, ok, err := decodeListBody(resp, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			path := tc.path
			whole, werr := DecodeJSONBody(resp, true)
			if ok != tc.lazy {
				t.Fatalf("read lazily: %v, want %v", ok, tc.lazy)
			}
			if !ok {
				return
			}
			if werr != nil {
				t.Fatalf("the whole decode fails (%v) where the lazy one did not", werr)
			}
			var d itemDecoder
			got := make([]any, len(items))
			for i, it := range items {
				if got[i], err = d.item(it); err != nil {
					t.Fatal(err)
				}
			}
			want, _ := jsonvalue.Get(whole, path)
			if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want.([]any)) == 0) {
				t.Fatalf("items %v, want %v", got, want)
			}
			// The rest of the document is the same, items aside.
			if path != "" {
				b, _ := json.Marshal(doc)
				w, _ := json.Marshal(whole)
				var x, y map[string]any
				json.Unmarshal(b, &x)
				json.Unmarshal(w, &y)
				delete(x, "data")
				delete(y, "data")
				delete(x, "result")
				delete(y, "result")
				if !reflect.DeepEqual(x, y) {
					t.Fatalf("document %s, want %s", b, w)
				}
			}
		})
	}
}

// TestListBody_AnErrorBehindASuccessIsRefusedAsBefore: the raw reading
// keeps the check for an error object behind a 2xx.
func TestListBody_AnErrorBehindASuccessIsRefusedAsBefore(t *testing.T) {
	resp := &Response{Status: 200, Body: []byte(`{"ok":false,"data":[{"id":"a"}]}`)}
	if _, _, _, err := decodeListBody(resp, "data"); err == nil {
		t.Fatal(`"ok": false behind a 200 was read as a page`)
	}
	resp = &Response{Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(`{"data":[]}`)}
	if _, _, _, err := decodeListBody(resp, "data"); err == nil {
		t.Fatal("an HTML answer was read as a page")
	}
}
