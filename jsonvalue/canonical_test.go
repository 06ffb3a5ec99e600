package jsonvalue

import (
	"bytes"
	"encoding/json"
	"testing"
)

func decode(t testing.TB, b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	return v, true
}

func TestEqual_IsEqualityOfJSONValues(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[true,null]}`, `{"b":[true,null],"a":1}`, true},
		{`1`, `1.0`, true},
		{`1e2`, `100`, true},
		{`12345678901234567890`, `12345678901234567891`, false},
		{`null`, `"null"`, false},
		{`"é"`, `"\u00e9"`, true},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":{}}`, `{"a":[]}`, false},
	} {
		a, _ := decode(t, []byte(tc.a))
		b, _ := decode(t, []byte(tc.b))
		if got := Equal(a, b); got != tc.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if Equal(map[string]any{"f": func() {}}, map[string]any{"f": func() {}}) {
		t.Error("values without an encoding are equal to nothing")
	}
}

func TestGetAndSet_WalkDottedPaths(t *testing.T) {
	doc := map[string]any{"a": map[string]any{"b": "x"}, "n": nil}
	for _, tc := range []struct {
		path string
		want any
		ok   bool
	}{
		{"", doc, true}, {"a.b", "x", true}, {"n", nil, true}, {"a.c", nil, false}, {"a.b.c", nil, false}, {"z", nil, false},
	} {
		got, ok := Get(doc, tc.path)
		if ok != tc.ok || (tc.path != "" && got != tc.want) {
			t.Errorf("Get(%q) = %v, %v; want %v, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
	Set(doc, "a.b", "y")
	Set(doc, "missing.b", "y") // creates nothing
	if v, _ := Get(doc, "a.b"); v != "y" {
		t.Errorf("a.b = %v after Set", v)
	}
	if _, ok := doc["missing"]; ok {
		t.Error("Set created a missing step")
	}
	// Through an array by an element's index, as Get reads it (Redmine's
	// custom_fields.1.value), and into a key that holds dots.
	doc["custom_fields"] = []any{map[string]any{"value": "eu"}, map[string]any{"value": ""}}
	doc["@odata.count"] = 3
	Set(doc, "custom_fields.1.value", nil)
	Set(doc, "custom_fields.2.value", "x") // out of range: nothing
	Set(doc, "@odata.count", 4)
	if v, ok := Get(doc, "custom_fields.1.value"); !ok || v != nil {
		t.Errorf("custom_fields.1.value = %v, %v after Set; want null", v, ok)
	}
	if v, _ := Get(doc, "custom_fields.0.value"); v != "eu" || len(doc["custom_fields"].([]any)) != 2 {
		t.Errorf("Set changed another element or the array's length: %v", doc["custom_fields"])
	}
	if v, _ := Get(doc, "@odata.count"); v != 4 {
		t.Errorf("@odata.count = %v after Set; want 4", v)
	}
	Put(doc, "p.q.r", 1)
	if v, _ := Get(doc, "p.q.r"); v != 1 {
		t.Errorf("p.q.r = %v after Put", v)
	}
}

// TestGet_FindsKeysThatContainDots: Microsoft Graph's "@odata.nextLink"
// and "@odata.count" are one key each, reached by the path as written; a
// nested object of the same name is still preferred step by step.
func TestGet_FindsKeysThatContainDots(t *testing.T) {
	doc := map[string]any{"@odata.nextLink": "https://graph/next", "meta": map[string]any{"x.y": map[string]any{"z": 2}},
		"a": map[string]any{"b": 1}, "a.b": 9}
	for path, want := range map[string]any{"@odata.nextLink": "https://graph/next", "meta.x.y.z": 2, "a.b": 1} {
		if got, ok := Get(doc, path); !ok || got != want {
			t.Errorf("Get(%q) = %v, %v; want %v", path, got, ok, want)
		}
	}
	if _, ok := Get(doc, "@odata.count"); ok {
		t.Error("a missing dotted key was found")
	}
}

// FuzzCanonical_AgainstEncodingJSON: for any JSON document, the canonical
// encoding is JSON that encoding/json reads back as the same value, and
// encoding that again gives the same bytes.
func FuzzCanonical_AgainstEncodingJSON(f *testing.F) {
	for _, seed := range []string{`{"b":1,"a":[null,true,"x\u0000y"]}`, `1e400`, `-0`, `"\ud800"`, `{"é":{"":[]}}`, `12345678901234567890123`, `0.1`, `"<&>"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, ok := decode(t, in)
		if !ok {
			return
		}
		enc, err := Canonical(v)
		if err != nil {
			return // numbers beyond float64 (1e400) have no canonical form
		}
		back, ok := decode(t, enc)
		if !ok {
			t.Fatalf("canonical %q of %q is not JSON", enc, in)
		}
		again, err := Canonical(back)
		if err != nil || !bytes.Equal(enc, again) {
			t.Fatalf("canonical is not stable: %q then %q (%v)", enc, again, err)
		}
		if !Equal(v, back) {
			t.Fatalf("%q and its canonical %q are not Equal", in, enc)
		}
	})
}
