// Package leaktest finds a secret in text the way someone reading the text
// would: raw, split by punctuation, behind JSON or URL escapes, or base64
// encoded at any alignment, and inside containers nested in each other (a
// base64 cursor of a query that holds the secret percent-escaped, base64
// inside base64, a base64 run a URL broke with %2B, %2F and %3D). Tests use
// it to prove that nothing airlock returns, logs, stores or exports holds a
// credential. It shares no code with the redactor it checks.
package leaktest

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strconv"
)

// maxDepth is how many base64 layers, one inside the other, Find decodes;
// the text of each is read again in every view (JSON and URL escapes).
const maxDepth = 3

// Hits names every form in which b reveals secret ("raw", "json-unescaped",
// "url-decoded", "base64"); nil when it reveals none. Letters and digits
// are compared: punctuation and spaces between them are ignored. A secret
// found inside base64, at any depth and behind any escape there, is
// "base64".
func Hits(b []byte, secret string) []string {
	return Find(b, secret)[0]
}

// Find is Hits for several secrets at once, reading each view of b once
// whatever their number: its i-th answer is secrets[i]'s.
func Find(b []byte, secrets ...string) [][]string {
	f := &finder{hits: make([][]string, len(secrets)), wants: make([][]byte, len(secrets)), coded: make([]bool, len(secrets))}
	some := false
	for i, s := range secrets {
		f.wants[i] = skeleton(nil, []byte(s))
		some = some || len(f.wants[i]) > 0
	}
	if !some {
		return f.hits
	}
	f.read(b, 0)
	return f.hits
}

// finder is one reading of a text for several secrets.
type finder struct {
	wants [][]byte
	hits  [][]string
	// coded[i]: wants[i] was found inside base64 (at any depth).
	coded []bool
	// dec and sk are scratch buffers, one per depth.
	dec [maxDepth][]byte
	sk  [maxDepth + 1][]byte
}

func (f *finder) add(i int, name string) {
	if !slices.Contains(f.hits[i], name) {
		f.hits[i] = append(f.hits[i], name)
	}
}

// read looks for the wants in every view of b, which was decoded from
// depth layers of base64 (0: the text itself, whose views name the hits;
// inside base64 every hit is "base64").
func (f *finder) read(b []byte, depth int) {
	unescaped := jsonUnescape(b)
	views := [...]struct {
		name string
		text []byte
	}{
		{"raw", b},
		{"json-unescaped", unescaped},
		{"json-unescaped", jsonUnescape(unescaped)},
		{"url-decoded", percentDecode(b, true)},
		{"url-decoded", percentDecode(unescaped, true)},
		// A base64 run whose + was kept and whose / was escaped.
		{"url-decoded", percentDecode(b, false)},
	}
	// A view the decoding left unchanged reveals what the same text did.
	var read [len(views)][]byte
	var plain [len(views)][]bool
	n := 0
	for _, v := range views {
		k := 0
		for k < n && !bytes.Equal(read[k], v.text) {
			k++
		}
		if k == n {
			read[n], plain[n] = v.text, make([]bool, len(f.wants))
			n++
			sk := skeleton(f.sk[depth][:0], v.text)
			f.sk[depth] = sk
			for i, w := range f.wants {
				plain[k][i] = len(w) > 0 && bytes.Contains(sk, w)
			}
			f.base64Reveals(v.text, depth)
		}
		for i := range f.wants {
			if !plain[k][i] {
				continue
			}
			if depth == 0 {
				f.add(i, v.name)
			} else {
				f.coded[i] = true
			}
		}
		if depth == 0 {
			for i, c := range f.coded {
				if c {
					f.add(i, "base64")
				}
			}
		}
	}
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
	if bytes.IndexByte(b, '\\') < 0 {
		return b
	}
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

// percentDecode decodes %XX wherever it appears, and + as a space when
// plus is set.
func percentDecode(b []byte, plus bool) []byte {
	if bytes.IndexByte(b, '%') < 0 && (!plus || bytes.IndexByte(b, '+') < 0) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+2 < len(b) {
			if n, err := strconv.ParseUint(string(b[i+1:i+3]), 16, 8); err == nil {
				out = append(out, byte(n))
				i += 2
				continue
			}
		}
		if plus && b[i] == '+' {
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

// base64Reveals decodes every run of base64 characters of b, from each
// of its first four positions, in both alphabets, and reads what it
// decoded as text of its own (one layer deeper): coded[i] is set when that
// reveals wants[i]. A run too short to decode into a want not found yet
// cannot hold it, and is not decoded for it.
func (f *finder) base64Reveals(b []byte, depth int) {
	if depth == maxDepth {
		return
	}
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
				if !f.mayHold(size) {
					continue
				}
				dec := slices.Grow(f.dec[depth][:0], size)[:size]
				f.dec[depth] = dec
				// A decode stops at the first byte of the other alphabet:
				// what it decoded so far still counts.
				n, _ := enc.Decode(dec, part)
				f.readDecoded(dec[:n], depth+1)
			}
		}
	}
}

// readDecoded reads text decoded from base64. Past the last layer, or
// when what was decoded is not text or holds no container, its letters
// and digits are all it can reveal.
func (f *finder) readDecoded(b []byte, depth int) {
	if depth < maxDepth && mayNest(b) {
		f.read(b, depth)
		return
	}
	sk := skeleton(f.sk[depth][:0], b)
	f.sk[depth] = sk
	for k, w := range f.wants {
		if !f.coded[k] && len(w) > 0 && bytes.Contains(sk, w) {
			f.coded[k] = true
		}
	}
}

// mayNest reports whether b is text (three bytes in four printable: not
// binary, nor base64 decoded at the wrong alignment) that holds an escape
// or a run of eight base64 characters: a container inside it.
func mayNest(b []byte) bool {
	run, printable, inner := 0, 0, false
	for _, c := range b {
		if c >= ' ' && c <= '~' || c == '\t' || c == '\n' || c == '\r' {
			printable++
		}
		switch {
		case c == '%' || c == '\\':
			inner = true
		case isBase64(c):
			if run++; run >= 8 {
				inner = true
			}
		default:
			run = 0
		}
	}
	return inner && 4*printable >= 3*len(b)
}

// mayHold says whether size decoded bytes could hold a want not found yet
// inside base64.
func (f *finder) mayHold(size int) bool {
	for k, w := range f.wants {
		if !f.coded[k] && len(w) > 0 && size >= len(w) {
			return true
		}
	}
	return false
}
