package redact_test

import (
	"bytes"
	"encoding/json"
	"github.com/airlock-mcp/airlock/redact"
	"strings"
	"testing"
)

// credentialLike reports whether s looks like a credential: at least
// eight bytes of the characters tokens are made of, with a letter other
// than an exponent's e. (The marker's own words are not secrets.)
func credentialLike(s string) bool {
	if len(s) < 8 || strings.Contains(redact.Redacted, s) {
		return false
	}
	letter := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			if c != 'e' && c != 'E' {
				letter = true
			}
		case c >= '0' && c <= '9', strings.IndexByte("._~+/=-", c) >= 0:
		default:
			return false
		}
	}
	return letter
}

// FuzzRedactor: whatever the text and the (credential-like) secret, the
// redacted text holds the secret in none of the literal forms, is the
// same bytes when there was nothing to redact, and a valid JSON document
// stays valid.
func FuzzRedactor(f *testing.F) {
	f.Add("cnry-3f9a1c7e-demo-credential", `{"errors":[{"field":"upstream.cnry-3f9a1c7e-demo-credential"}]}`)
	f.Add("sk_live_4eC39HqLyjWDarjtT1zdp7dc", `{"a":"Bearer sk_live_4eC39HqLyjWDarjtT1zdp7dc","n":1e5}`)
	f.Add("abcd1234efgh", `{"v":"abcd\u002d1234efgh","w":abcd1234efgh}`)
	f.Add("Zm9vYmFyYmF6", `["Zm9vYmFyYmF6","x\\Zm9vYmFyYmF6\\"]`)
	f.Add("tok.en/with+chars=", `{"q":"tok%2Een%2Fwith%2Bchars%3D","p":"tok en with chars"}`)
	f.Add("k9Rz+Qw/7xTf2Lm0=Vb8nC4j", `{"next":"https://x.example/v1?c=YXBpX2tleT1rOVJ6JTJCUXclMkY3eFRmMkxtMCUzRFZiOG5DNGomcGFnZT0yJmFmdGVyPX5%2Bfj8%2FPw%3D%3D"}`)
	f.Fuzz(func(t *testing.T, secret, text string) {
		if !credentialLike(secret) {
			t.Skip()
		}
		r := redact.New(secret)
		in := []byte(text)
		out := r.Bytes(in)
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("the secret survived: %q", out)
		}
		if !bytes.Equal(out, in) && !bytes.Contains(out, []byte(redact.Redacted)) {
			t.Fatalf("changed without a marker: %q -> %q", in, out)
		}
		if json.Valid(in) && !json.Valid(out) {
			t.Fatalf("redaction broke valid JSON:\n%s\n%s", in, out)
		}
		if r.String(text) != string(out) {
			t.Fatal("String and Bytes disagree")
		}
	})
}
