package selection_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// FuzzCanonical: any JSON document has one canonical encoding. It is valid
// JSON, encoding it again (decoded) gives the same bytes, and the
// document's key order and spacing do not change it.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,null,"x\u0000y"],"c":{"é":1.50,"e":-0.0}}`,
		`[1e2, 100, 1E+2, 0.1e3, 12345678901234567890, 1e400, -1e-400]`,
		`"\ud83d\ude00 \u2028 <>&"`,
		`{"":{"":[[],{}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		v, err := envelope.DecodeJSON(doc)
		if err != nil {
			t.Skip()
		}
		c, err := jsonvalue.Canonical(v)
		if err != nil {
			return // a value the encoder refuses (a number out of range) is refused, not mangled
		}
		if !json.Valid(c) {
			t.Fatalf("not JSON: %s", c)
		}
		v2, err := envelope.DecodeJSON(c)
		if err != nil {
			t.Fatalf("the canonical form does not decode: %v", err)
		}
		c2, err := jsonvalue.Canonical(v2)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("not stable:\n%s\n%s (%v)", c, c2, err)
		}
		spaced, err := json.MarshalIndent(v, " ", "\t")
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		v3, err := envelope.DecodeJSON(spaced)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if c3, err := jsonvalue.Canonical(v3); err != nil || !bytes.Equal(c3, c) {
			t.Fatalf("spacing changed the encoding:\n%s\n%s (%v)", c, c3, err)
		}
	})
}
