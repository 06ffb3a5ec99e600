package dialect

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// TestListBody_ReadsItemsOneAtATimeAsAWholeDecodeWould: a page whose
// items stay raw until read gives the same document and the same items,
// in the same order, as decoding the body whole; a body without an array
// where the items belong is returned for itemsOf to judge, and one that is
// not one strict JSON document is a bad response.
func TestListBody_ReadsItemsOneAtATimeAsAWholeDecodeWould(t *testing.T) {
	cases := []struct {
		name, path, body string
		lazy             bool
		bad              bool
	}{
		{"items under a key", "data", `{"has_more":true,"data":[{"id":"a","n":1},{"id":"b","n":2.50}],"next":"x"}`, true, false},
		{"nested path, spaces, escapes", "result.items",
			"{ \"result\" : {\"total\": 3, \"items\" : [ {\"id\":\"a\\\"]}\"} ,\n {\"id\":\"b\",\"o\":{\"x\":[1,{}]}} , {\"id\":\"c\"} ] } }", true, false},
		{"an escaped key", "data", `{"da\u0074a":[{"id":"a"}]}`, true, false},
		{"the body is the array", "", `[{"id":"a"},{"id":"b"},{"id":"c"}]`, true, false},
		{"one item", "data", `{"data":[{"id":"only"}]}`, true, false},
		{"no items", "data", `{"data":[],"has_more":false}`, true, false},
		{"items null", "data", `{"data":null}`, false, false},
		{"items not an array", "data", `{"data":{"id":"a"}}`, false, false},
		{"a key given twice", "data", `{"data":[{"id":"a"}],"data":[{"id":"b"}]}`, false, true},
		{"a signal given twice", "data", `{"next":"a","data":[{"id":"a"}],"next":"b"}`, false, true},
		{"the key missing", "data", `{"items":[{"id":"a"}]}`, false, false},
		{"not JSON", "data", `{"data":[{"id":"a"}`, false, true},
		{"data after the document", "data", `{"data":[]} {}`, false, true},
		{"big numbers stay exact", "data", `{"data":[{"id":12345678901234567890,"x":1e400}]}`, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := &transport.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(tc.body)}
			doc, items, ok, err := transport.DecodeListBody(resp, tc.path)
			if tc.bad {
				if !transport.IsBadResponse(err) {
					t.Fatalf("DecodeListBody = %v; want a bad response", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			path := tc.path
			whole, werr := transport.DecodeJSONBody(resp, true)
			if ok != tc.lazy {
				t.Fatalf("read lazily: %v, want %v", ok, tc.lazy)
			}
			if !ok {
				return
			}
			if werr != nil {
				t.Fatalf("the whole decode fails (%v) where the lazy one did not", werr)
			}
			var d ItemDecoder
			got := make([]any, len(items))
			for i, it := range items {
				if got[i], _, err = d.Item(it); err != nil {
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
	resp := &transport.Response{Status: 200, Body: []byte(`{"ok":false,"data":[{"id":"a"}]}`)}
	if _, _, _, err := transport.DecodeListBody(resp, "data"); err == nil {
		t.Fatal(`"ok": false behind a 200 was read as a page`)
	}
	resp = &transport.Response{Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(`{"data":[]}`)}
	if _, _, _, err := transport.DecodeListBody(resp, "data"); err == nil {
		t.Fatal("an HTML answer was read as a page")
	}
}
