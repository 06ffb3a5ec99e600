package jsonvalue

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestDecode_AMemberNamedTwiceIsNeverReadByOneOfItsValues(t *testing.T) {
	cases := []struct {
		doc, path string
	}{
		{`{"id":"d-0003","status":"active","status":"archived"}`, "status"},
		{`{"id":"d-0006","name":"x","id":"d-0060"}`, "id"},
		{`{"data":{"items":[{"a":1},{"b":{"c":1,"c":1}}]}}`, "data.items.1.b.c"},
		{`{"a\u0062":1,"ab":2}`, "ab"}, // the same name, escaped once
		{`[{"x":[{"y":null,"y":null}]}]`, "0.x.0.y"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.doc))
		var de *DuplicateError
		if !errors.As(err, &de) || de.Path != c.path {
			t.Errorf("Decode(%s) = %v; want a duplicate at %q", c.doc, err, c.path)
		}
	}
}

func TestDecodeRecord_LeavesADuplicatedMemberOutAndSaysWhere(t *testing.T) {
	v, dups, err := DecodeRecord([]byte(`{"id":"d-3","status":"active","status":"archived","status":"x","tags":[{"k":1,"k":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "d-3", "tags": []any{map[string]any{}}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("value = %#v; want %#v (neither value of a duplicated member kept)", v, want)
	}
	if !reflect.DeepEqual(dups, []string{"status", "tags.0.k"}) {
		t.Errorf("dups = %q; want status and tags.0.k, each once", dups)
	}
}

func TestDecode_NumbersKeepTheirExactText(t *testing.T) {
	v, err := Decode([]byte(`{"id":9007199254740993,"n":-0.10,"e":2.50e3,"big":123456789012345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	for k, want := range map[string]string{"id": "9007199254740993", "n": "-0.10", "e": "2.50e3", "big": "123456789012345678901234567890"} {
		if got, ok := m[k].(json.Number); !ok || string(got) != want {
			t.Errorf("%s = %#v; want json.Number(%s)", k, m[k], want)
		}
	}
}

func TestDecode_RefusesWhatIsNotOneJSONDocument(t *testing.T) {
	for _, doc := range []string{``, `{`, `{"a":1}{"b":2}`, `{"a":1} x`, "{\"a\":\"\xff\"}", `{"a":01}`, `[1,]`, `{"a" 1}`} {
		var se *SyntaxError
		if _, err := Decode([]byte(doc)); !errors.As(err, &se) {
			t.Errorf("Decode(%q) = %v; want a syntax error", doc, err)
		}
	}
	if _, err := Decode([]byte(" {\"a\":[1,2]} \n")); err != nil {
		t.Errorf("space around a document: %v", err)
	}
}

func TestDecodeList_LeavesTheItemsUnreadAsSlicesOfTheBody(t *testing.T) {
	body := []byte(`{"meta":{"next":"c2"},"data":{"items":[ {"id":1,"id":2} , {"id":3} ]},"@odata.count":2}`)
	doc, raw, found, err := DecodeList(body, "data.items")
	if err != nil || !found {
		t.Fatalf("DecodeList = %v, found %v", err, found)
	}
	if len(raw) != 2 || string(raw[0].(json.RawMessage)) != `{"id":1,"id":2}` || string(raw[1].(json.RawMessage)) != `{"id":3}` {
		t.Fatalf("raw = %q", raw)
	}
	if got, _ := Get(doc, "data.items"); !reflect.DeepEqual(got, raw) {
		t.Errorf("items in doc = %#v; want the raw items", got)
	}
	if got, _ := Get(doc, "meta.next"); got != "c2" {
		t.Errorf("meta.next = %#v", got)
	}
	// A duplicate inside an item is the item's; outside, it fails the page.
	if _, _, _, err := DecodeList([]byte(`{"next":"a","items":[],"next":"b"}`), "items"); err == nil {
		t.Error("a page naming its next cursor twice was read")
	}
	if _, _, _, err := DecodeList([]byte(`{"items":[],"items":[{"id":1}]}`), "items"); err == nil {
		t.Error("a page naming its items twice was read")
	}
	// A key holding dots, as Get finds it; the document itself.
	if _, raw, found, _ := DecodeList([]byte(`{"value.list":[1,2]}`), "value.list"); !found || len(raw) != 2 {
		t.Errorf("dotted key: found %v, %d items", found, len(raw))
	}
	if _, raw, found, _ := DecodeList([]byte(`[{"id":1}]`), ""); !found || len(raw) != 1 {
		t.Errorf("document array: found %v, %d items", found, len(raw))
	}
	// Not an array there: the value is left for the caller to judge.
	doc, _, found, err = DecodeList([]byte(`{"items":null,"next":"c"}`), "items")
	if err != nil || found {
		t.Fatalf("items null: found %v, %v", found, err)
	}
	if v, ok := Get(doc, "items"); !ok || v != nil {
		t.Errorf("items null read as %#v, %v", v, ok)
	}
}
