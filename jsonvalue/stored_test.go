package jsonvalue

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestStoredJSON_EncoderWritesWhatEncodingJSONWrites: Marshal's fast
// encoder writes json.Marshal's bytes for every value it accepts and
// declines (falling back to json.Marshal) for the rest.
func TestStoredJSON_EncoderWritesWhatEncodingJSONWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	extra := []any{json.Number(""), json.Number("01"), json.Number("1."), json.Number(".5"), json.Number("+1"), json.Number("1e"),
		json.Number("abc"), json.Number("-0.0e-0"), json.Number("1E+400"), "\u2028\u2029", "<a href='x'>&amp;</a>", "\x7f\x00\b\f\n\r\t",
		map[string]any(nil), []any(nil), []string(nil), []any{}, map[string]any{}}
	accepted := 0
	for i := range 30000 {
		var v any
		if i%10 == 0 {
			v = map[string]any{genString(rng): extra[rng.IntN(len(extra))], "k": genValue(rng, 1)}
		} else {
			v = genMap(rng, 0)
		}
		m, _ := v.(map[string]any)
		want, wantErr := json.Marshal(v)
		got, ok := appendStoredJSON([]byte("x"), v)
		if ok {
			accepted++
			if wantErr != nil || !bytes.Equal(got, append([]byte("x"), want...)) {
				t.Fatalf("value %#v:\nfast %s\njson x%s (%v)", v, got, want, wantErr)
			}
		}
		if m == nil {
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != nil && wantErr == nil {
					t.Fatalf("Marshal panicked on %#v: %v", m, r)
				}
			}()
			if s := Marshal(m); wantErr != nil || s != string(want) {
				t.Fatalf("Marshal(%#v) = %s, json %s (%v)", m, s, want, wantErr)
			}
		}()
	}
	if accepted < 10000 {
		t.Fatalf("the fast encoder took only %d values", accepted)
	}
	// Frames: maps of strings, through Marshal.
	for i := range 3000 {
		f := map[string]string{}
		for range rng.IntN(6) {
			f[genString(rng)] = genString(rng)
		}
		if i%7 == 0 {
			f["<&>"] = "\u2028\u2029\x7f\x00\xff"
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := Marshal(f); got != string(want) {
			t.Fatalf("Marshal(%#v) = %s, json %s", f, got, want)
		}
	}
	if got := Marshal(map[string]string(nil)); got != "null" {
		t.Fatalf("Marshal of a nil frame = %s, want null", got)
	}
}

// storedDocs are documents the decoder must read as encoding/json does,
// or leave to it: escapes, surrogates, whitespace, duplicate keys, numbers
// at the edges of the grammar, malformed documents and trailing data.
var storedDocs = []string{
	`{}`, ` { } `, `{"a":1}`, "{\n\t\"a\" : [ 1 , 2 ] ,\r\"b\":{}}", `{"a":null,"b":true,"c":false}`,
	`{"a":1,"a":2}`, `{"s":"\u003chtml\u003e \u0026 \"q\" \\ \/ \b\f\n\r\t"}`, `{"s":"\u00e9\u2028"}`,
	`{"s":"\ud83d\ude00"}`, `{"s":"\ud83d"}`, `{"s":"\ude00\ud83d"}`, `{"s":"\ud83dx"}`, `{"s":"\u12"}`, `{"s":"\u12zz"}`,
	`{"s":"\x"}`, `{"s":"\'"}`, "{\"s\":\"a\x01b\"}", "{\"s\":\"\xff\"}", "{\"s\":\"é日本\"}", "{\"\xff\":1}",
	`{"n":-0}`, `{"n":0.5e-3}`, `{"n":1E+2}`, `{"n":01}`, `{"n":1.}`, `{"n":.5}`, `{"n":-}`, `{"n":1e}`, `{"n":+1}`, `{"n":1-2}`,
	`{"n":123456789012345678901234567890}`, `{"a":[]}`, `{"a":[[],[{}]]}`, `{"a":[1,]}`, `{"a":{"b":1,}}`, `{"a"}`, `{"a":}`,
	`{"a":1}x`, `{"a":1} {"b":2}`, `{"a":1}  `, `[1]`, `null`, `"s"`, ``, `{`, `{"a":tru}`, `{"a":nul}`, `{"a":truex}`,
	`{"a":1"b":2}`, `{1:2}`, `{"a":[1 2]}`, strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100),
	strings.Repeat(`[`, 70) + strings.Repeat(`]`, 70),
}

func reference(doc string) (map[string]any, error) {
	var m map[string]any
	err := Unmarshal(doc, &m)
	return m, err
}

// TestStoredJSON_DecoderReadsWhatEncodingJSONReads: the fast decoder
// gives the value encoding/json (numbers as json.Number) gives, or its
// error, for documents it reads and documents it leaves to encoding/json.
func TestStoredJSON_DecoderReadsWhatEncodingJSONReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	docs := append([]string(nil), storedDocs...)
	for range 20000 {
		raw, err := json.Marshal(genMap(rng, 0))
		if err != nil {
			continue
		}
		docs = append(docs, string(raw))
		// Mangle a byte now and then: a malformed document must fail the
		// same way.
		if rng.IntN(4) == 0 && len(raw) > 2 {
			b := []byte(string(raw))
			const junk = "{}[]\",:\\ 0a-.e\x00\xff"
			b[rng.IntN(len(b))] = junk[rng.IntN(len(junk))]
			docs = append(docs, string(b))
		}
	}
	fast := 0
	for _, doc := range docs {
		want, wantErr := reference(doc)
		var got map[string]any
		err := UnmarshalMap(doc, &got)
		if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) || !reflect.DeepEqual(got, want) {
			t.Fatalf("document %q:\nfast %#v (%v)\njson %#v (%v)", doc, got, err, want, wantErr)
		}
		p := storedParser{s: doc}
		p.ws()
		if p.i < len(doc) && doc[p.i] == '{' {
			if _, ok := p.object(); ok {
				if p.ws(); p.i == len(doc) {
					fast++
				}
			}
		}
	}
	if fast < 12000 {
		t.Fatalf("the fast decoder read only %d of %d documents", fast, len(docs))
	}
	// A map that already holds keys is merged into by encoding/json: left
	// to it.
	m := map[string]any{"old": true}
	if err := UnmarshalMap(`{"new":1}`, &m); err != nil || m["old"] != true || m["new"] != json.Number("1") {
		t.Fatalf("decoding into a map that holds keys: %v %v", m, err)
	}
}

// genString draws strings that exercise every branch of the string
// encoder: plain ASCII, escapes, control bytes, multi-byte UTF-8 and
// invalid UTF-8.
func genString(rng *rand.Rand) string {
	pieces := []string{"", "a", "sub_0001", "past_due", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f", " ", "<html>&",
		"é", "Müller & Söhne", "日本", "\U0001F600", "\xff", "\xc3", "\xed\xa0\x80", "\xe2\x82", "~", "-0"}
	n := rng.IntN(5)
	var sb strings.Builder
	for range n {
		sb.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return sb.String()
}

func genNumber(rng *rand.Rand) any {
	lits := []string{"0", "-0", "00", "-007", "1", "42", "123456789012345678901234567890", "-1", "1.0", "1.5", "0.1",
		"1e2", "1E2", "1e-7", "-2.5e+3", "10.250", "9007199254740993", "9007199254740993.0", "1e21", "1e400"}
	switch rng.IntN(4) {
	case 0:
		return json.Number(lits[rng.IntN(len(lits))])
	case 1:
		fs := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e21, 1e-7, 1 << 53, 1<<53 + 2, 1234567.5, math.NaN(), math.Inf(1)}
		return fs[rng.IntN(len(fs))]
	case 2:
		return rng.IntN(2000) - 1000
	}
	return int64(rng.IntN(1 << 40))
}

func genValue(rng *rand.Rand, depth int) any {
	k := rng.IntN(9)
	if depth > 2 {
		k = rng.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2, 3:
		return genString(rng)
	case 4:
		return genNumber(rng)
	case 5:
		n := rng.IntN(4)
		out := make([]any, n)
		for i := range out {
			out[i] = genValue(rng, depth+1)
		}
		return out
	case 6:
		return []string{genString(rng), genString(rng)}
	case 7:
		return struct {
			A string `json:"a"`
			B int    `json:"b"`
		}{genString(rng), rng.IntN(10)}
	}
	return genMap(rng, depth+1)
}

func genMap(rng *rand.Rand, depth int) map[string]any {
	if rng.IntN(8) == 0 {
		return nil
	}
	n := rng.IntN(20) // past the 16 keys sorted on the stack
	m := make(map[string]any, n)
	for range n {
		m[genString(rng)] = genValue(rng, depth)
	}
	return m
}
