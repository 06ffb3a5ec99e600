// Package leaktest finds a secret in text the way someone reading the text
// would: raw, split by punctuation, behind JSON or URL escapes, or base64
// encoded at any alignment. Tests use it to prove that nothing airlock
// returns, logs, stores or exports holds a credential. It shares no code
// with the redactor it checks.
package leaktest

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strconv"
)

// Hits names every form in which b reveals secret ("raw", "json-unescaped",
// "url-decoded", "base64"); nil when it reveals none. Letters and digits
// are compared: punctuation and spaces between them are ignored.
func Hits(b []byte, secret string) []string {
	return Find(b, secret)[0]
}

// Find is Hits for several secrets at once, reading each view of b once
// whatever their number: its i-th answer is secrets[i]'s.
func Find(b []byte, secrets ...string) [][]string {
	hits := make([][]string, len(secrets))
	wants := make([][]byte, len(secrets))
	some := false
	for i, s := range secrets {
		wants[i] = skeleton(nil, []byte(s))
		some = some || len(wants[i]) > 0
	}
	if !some {
		return hits
	}
	unescaped := jsonUnescape(b)
	views := []struct {
		name string
		text []byte
	}{
		{"raw", b},
		{"json-unescaped", unescaped},
		{"json-unescaped", jsonUnescape(unescaped)},
		{"url-decoded", percentDecode(b)},
		{"url-decoded", percentDecode(unescaped)},
	}
	add := func(i int, name string) {
		if !slices.Contains(hits[i], name) {
			hits[i] = append(hits[i], name)
		}
	}
	// A view the decoding left unchanged reveals what the same text did.
	type reading struct {
		text         []byte
		plain, coded []bool
	}
	var read []reading
	var sk []byte
	for _, v := range views {
		var r *reading
		for k := range read {
			if bytes.Equal(read[k].text, v.text) {
				r = &read[k]
				break
			}
		}
		if r == nil {
			read = append(read, reading{text: v.text, plain: make([]bool, len(wants)), coded: make([]bool, len(wants))})
			r = &read[len(read)-1]
			sk = skeleton(sk[:0], v.text)
			for i, w := range wants {
				r.plain[i] = len(w) > 0 && bytes.Contains(sk, w)
			}
			base64Reveals(v.text, wants, r.coded)
		}
		for i := range wants {
			if r.plain[i] {
				add(i, v.name)
			}
			if r.coded[i] {
				add(i, "base64")
			}
		}
	}
	return hits
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// skeleton appends the letters and digits of b to dst.
func skeleton(dst, b []byte) []byte {
	for _, c := range b {
		if isAlnum(c) {
			dst = append(dst, c)
		}
	}
	return dst
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
// first four positions, in both alphabets, and sets found[i] when the
// decoded text holds wants[i]. A run too short to decode into a want
// cannot hold it, and is not decoded for it.
func base64Reveals(b []byte, wants [][]byte, found []bool) {
	var dec, sk []byte
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
				size := enc.DecodedLen(len(part))
				if !mayHold(size, wants, found) {
					continue
				}
				dec = slices.Grow(dec[:0], size)[:size]
				n, _ := enc.Decode(dec, part)
				// A decode stops at the first byte of the other alphabet:
				// what it decoded so far still counts.
				sk = skeleton(sk[:0], dec[:n])
				for k, w := range wants {
					if !found[k] && len(w) > 0 && bytes.Contains(sk, w) {
						found[k] = true
					}
				}
			}
		}
	}
}

// mayHold says whether size decoded bytes could hold a want not found yet.
func mayHold(size int, wants [][]byte, found []bool) bool {
	for k, w := range wants {
		if !found[k] && len(w) > 0 && size >= len(w) {
			return true
		}
	}
	return false
}
