// Package leaktest finds a secret in text the way someone reading the text
// would: raw, split by punctuation, behind JSON or URL escapes, or base64
// encoded at any alignment. Tests use it to prove that nothing airlock
// returns, logs, stores or exports holds a credential. It shares no code
// with the redactor it checks.
package leaktest

import (
	"bytes"
	"encoding/base64"
	"strconv"
)

// Hits names every form in which b reveals secret ("raw", "json-unescaped",
// "url-decoded", "base64"); nil when it reveals none. Letters and digits
// are compared: punctuation and spaces between them are ignored.
func Hits(b []byte, secret string) []string {
	want := skeleton([]byte(secret))
	if len(want) == 0 {
		return nil
	}
	var hits []string
	views := []struct {
		name string
		text []byte
	}{
		{"raw", b},
		{"json-unescaped", jsonUnescape(b)},
		{"json-unescaped", jsonUnescape(jsonUnescape(b))},
		{"url-decoded", percentDecode(b)},
		{"url-decoded", percentDecode(jsonUnescape(b))},
	}
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			hits = append(hits, name)
		}
	}
	for _, v := range views {
		if bytes.Contains(skeleton(v.text), want) {
			add(v.name)
		}
		if base64Reveals(v.text, want) {
			add("base64")
		}
	}
	return hits
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// skeleton keeps letters and digits.
func skeleton(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if isAlnum(c) {
			out = append(out, c)
		}
	}
	return out
}

// jsonUnescape decodes \uXXXX and the one-character escapes wherever they
// appear.
func jsonUnescape(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		switch c := b[i+1]; c {
		case 'u':
			if i+6 <= len(b) {
				if n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 32); err == nil {
					out = append(out, string(rune(n))...)
					i += 5
					continue
				}
			}
			out = append(out, b[i])
		case 'n', 't', 'r', 'b', 'f':
			out = append(out, ' ')
			i++
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// percentDecode decodes %XX and + wherever they appear.
func percentDecode(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+2 < len(b) {
			if n, err := strconv.ParseUint(string(b[i+1:i+3]), 16, 8); err == nil {
				out = append(out, byte(n))
				i += 2
				continue
			}
		}
		if b[i] == '+' {
			out = append(out, ' ')
			continue
		}
		out = append(out, b[i])
	}
	return out
}

func isBase64(c byte) bool {
	return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_'
}

// base64Reveals decodes every run of base64 characters, from each of its
// first four positions, in both alphabets, and looks for want.
func base64Reveals(b, want []byte) bool {
	for i := 0; i < len(b); {
		if !isBase64(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && isBase64(b[j]) {
			j++
		}
		run := b[i:j]
		i = j
		if len(run) < 8 {
			continue
		}
		for off := 0; off < 4 && off < len(run); off++ {
			part := run[off:]
			if len(part)%4 == 1 {
				part = part[:len(part)-1] // no encoding ends there
			}
			for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				dec := make([]byte, enc.DecodedLen(len(part)))
				n, _ := enc.Decode(dec, part)
				// A decode stops at the first byte of the other alphabet:
				// what it decoded so far still counts.
				if bytes.Contains(skeleton(dec[:n]), want) {
					return true
				}
			}
		}
	}
	return false
}
