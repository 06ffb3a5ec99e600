package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

func TestIJSON_NumbersADoubleWouldRoundTravelAsStrings(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"id":9007199254740993}`, `{"id":"9007199254740993"}`},
		{`{"id":9007199254740991}`, `{"id":9007199254740991}`},
		{`[9223372036854775001, -9223372036854775808 ,1.5,0.30000000000000000001]`, `["9223372036854775001", "-9223372036854775808" ,1.5,"0.30000000000000000001"]`},
		// Strings that look like numbers, keys and every other byte stay.
		{`{"9007199254740993":"9007199254740993","a":[true,null,{"b":1e400}]}`, `{"9007199254740993":"9007199254740993","a":[true,null,{"b":"1e400"}]}`},
		{`{"s":"\u003c9007199254740993\u003e","n":12}`, `{"s":"\u003c9007199254740993\u003e","n":12}`},
		{`18446744073709551615`, `"18446744073709551615"`},
		// What is not JSON is rewritten up to where it stops being.
		{`[9007199254740993, nope`, `["9007199254740993", nope`},
	}
	for _, c := range cases {
		if got := string(IJSON([]byte(c.in))); got != c.want {
			t.Errorf("IJSON(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestIJSON_ADocumentWithoutSuchNumbersIsReturnedAsIs(t *testing.T) {
	b := []byte(`{"complete":true,"data":{"items":[{"id":12,"amount":0.1}]}}`)
	if got := IJSON(b); &got[0] != &b[0] {
		t.Error("IJSON copied a document it had nothing to change in")
	}
}

// The boundary: an envelope's structured content and its text copy carry
// the same strings, in items, a problem's members and a reason's values.
func TestEnvelopeMarshal_StructuredAndTextHoldTheSameExactStrings(t *testing.T) {
	env := &Envelope{
		IncompleteReasons: []Reason{{Code: ConflictingEvidence, Message: "m", Filter: "id", Sent: json.Number("9007199254740993"), Seen: json.Number("9007199254740992")}},
		Scope:             &Scope{Resource: "r", Filter: map[string]any{"id": json.Number("9223372036854775001")}},
		Data: map[string]any{"items": []json.RawMessage{
			json.RawMessage(`{"id":9223372036854775001,"n":7}`),
			json.RawMessage(`{"id":9223372036854775002,"n":8}`),
		}},
	}
	env.Finish()
	structured := env.Marshal()
	text := Text(structured)
	for name, b := range map[string][]byte{"structured": structured, "text": text, "expanded text": Expand(text)} {
		var doc struct {
			IncompleteReasons []struct{ Sent, Seen any } `json:"incomplete_reasons"`
			Scope             struct{ Filter map[string]any }
			Data              struct{ Items []map[string]any }
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := []any{doc.IncompleteReasons[0].Sent, doc.IncompleteReasons[0].Seen, doc.Scope.Filter["id"], doc.Data.Items[0]["id"], doc.Data.Items[1]["id"], doc.Data.Items[0]["n"]}
		want := []any{"9007199254740993", "9007199254740992", "9223372036854775001", "9223372036854775001", "9223372036854775002", float64(7)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s holds %v, want %v:\n%s", name, got, want, b)
		}
	}
	if !bytes.Equal(Expand(text), Expand(structured)) {
		t.Errorf("the text and the structured content differ:\n%s\n%s", text, structured)
	}
}

func TestProblemMarshal_FieldErrorExampleTravelsAsAString(t *testing.T) {
	p := InvalidArguments([]FieldError{NewFieldError("ids[0]", FieldType, json.Number("9007199254740993"))})
	if b := p.Marshal(); !strings.Contains(string(b), `"example":"9007199254740993"`) {
		t.Errorf("the problem carries the example as a number: %s", b)
	}
}

func BenchmarkIJSON(b *testing.B) {
	var items []string
	for i := range 200 {
		items = append(items, fmt.Sprintf(`{"id":"sub_%05d","customer_name":"Northwind Parts Ltd","region":"eu","status":"past_due","amount_due":%d,"tags":["vip","annual"],"updated_at":"2026-11-30T12:00:00Z"}`, i, 500+i))
	}
	doc := []byte(`{"status":"complete","complete":true,"data":{"items":[` + strings.Join(items, ",") + `]}}`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		IJSON(doc)
	}
}

func BenchmarkIJSON_Unsafe(b *testing.B) {
	var items []string
	for i := range 200 {
		items = append(items, fmt.Sprintf(`{"id":%d,"customer_name":"Northwind Parts Ltd","region":"eu","status":"past_due","amount_due":%d,"tags":["vip","annual"],"updated_at":"2026-11-30T12:00:00Z"}`, uint64(9223372036854775000)+uint64(i), 500+i))
	}
	doc := []byte(`{"status":"complete","complete":true,"data":{"items":[` + strings.Join(items, ",") + `]}}`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		IJSON(doc)
	}
}

// FuzzIJSON: for any JSON document, IJSON's answer is JSON holding the
// same value with every number that is not interoperable as a string of
// its literal, and no such number left (the quick look never misses one).
func FuzzIJSON(f *testing.F) {
	for _, seed := range []string{
		`{"id":9007199254740993}`, "[1,\n\t9223372036854775807 ,-0.5e-3]", `{"a":"x, 12345678901234567","b":[ 1e400 ]}`,
		`{"t":"2026-11-30T12:00:00.123456789012Z","n":123456789012345678}`, `-9007199254740992`, `[[[[0.30000000000000000001]]]]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		out := IJSON(b)
		want, err := decodeNumbers(b, true)
		if err != nil {
			return
		}
		got, err := decodeNumbers(out, false)
		if err != nil {
			t.Fatalf("IJSON(%s) = %s, not JSON: %v", b, out, err)
		}
		if !equalJSON(got, want) {
			t.Fatalf("IJSON(%s) = %s; want the value %v", b, out, want)
		}
	})
}

// decodeNumbers decodes b with exact numbers, turning the ones that are
// not interoperable into strings when convert is set, and failing on one
// when it is not.
func decodeNumbers(b []byte, convert bool) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(v any) (any, error)
	walk = func(v any) (any, error) {
		switch x := v.(type) {
		case json.Number:
			if jsonvalue.Interoperable(string(x)) {
				return x, nil
			}
			if !convert {
				return nil, fmt.Errorf("the number %s is left", x)
			}
			return string(x), nil
		case []any:
			for i := range x {
				e, err := walk(x[i])
				if err != nil {
					return nil, err
				}
				x[i] = e
			}
		case map[string]any:
			for k := range x {
				e, err := walk(x[k])
				if err != nil {
					return nil, err
				}
				x[k] = e
			}
		}
		return v, nil
	}
	return walk(v)
}

func equalJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
