package leaktest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const secret = "cnry-3f9a1c7e-demo-credential"

// TestHits_FindsEveryForm: the secret is found raw, split by punctuation,
// behind JSON and URL escapes and base64 encoded at any alignment, and
// not in text that only holds part of it.
func TestHits_FindsEveryForm(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"raw", "token=" + secret, []string{"raw", "json-unescaped", "url-decoded"}},
		{"split", "cnry 3f9a/1c7e.demo:credential", []string{"raw", "json-unescaped", "url-decoded"}},
		{"json escape", `"cnry-3f9a1c7e-demo-\u0063redential"`, []string{"json-unescaped", "url-decoded"}},
		{"url", "q=cnry-3f9a1c7e-%64emo-credential", []string{"url-decoded"}},
		{"base64", "x " + base64.StdEncoding.EncodeToString([]byte(secret)) + " y", []string{"base64"}},
		{"base64 url, shifted", "ab" + base64.RawURLEncoding.EncodeToString([]byte("??"+secret)), []string{"base64"}},
		{"part only", "cnry-3f9a1c7e-demo", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Hits([]byte(tc.text), secret)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Hits(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

// A key with the characters base64 keys have, which a query escapes.
const b64Key = "k9Rz+Qw/7xTf2Lm0=Vb8nC4j"

// TestHits_FindsTheSecretInsideNestedContainers: a secret inside base64
// whose text holds it percent- or JSON-escaped, base64 inside base64, and
// base64 whose run a URL broke with %2B, %2F and %3D (in either alphabet,
// padded or not, at any offset) is found as "base64".
func TestHits_FindsTheSecretInsideNestedContainers(t *testing.T) {
	std, raw := base64.StdEncoding.EncodeToString, base64.RawURLEncoding.EncodeToString
	query := "api_key=" + url.QueryEscape(b64Key) + "&page=2&after=~~~???"
	for _, tc := range []struct {
		name, text string
	}{
		{"base64 of a query holding the key percent-encoded", "cursor=" + std([]byte(query))},
		{"the same, url alphabet without padding, shifted", "c=x" + raw([]byte("?&"+query))},
		{"base64 of a JSON document holding the key escaped", std([]byte(`{"k":"` + strings.ReplaceAll(b64Key, "+", `\u002b`) + `"}`))},
		{"base64 inside base64", std([]byte(`{"next":"` + std([]byte("p=1&api_key="+b64Key)) + `"}`))},
		{"base64 inside base64, url alphabet, shifted", "t=" + raw([]byte("ab"+raw([]byte("xy"+query))))},
		{"percent-escaped base64 in a next link", `{"next":"https://api.example.com/v1/items?cursor=` + url.QueryEscape(std([]byte(query))) + `"}`},
		{"base64 with only its slashes escaped", strings.ReplaceAll(std([]byte(query)), "/", "%2F")},
		{"percent-escaped base64 of a base64 cursor", "next=" + url.QueryEscape(std([]byte("cursor="+url.QueryEscape(std([]byte(query))))))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Hits([]byte(tc.text), b64Key)
			if !slices.Contains(got, "base64") {
				t.Fatalf("Hits(%q) = %v, want base64 among them", tc.text, got)
			}
			if got := Hits([]byte(tc.text), "Zq7-unrelated-key-4d2f"); got != nil {
				t.Fatalf("another key found: %v", got)
			}
		})
	}
	// The run a URL escaped really was broken by each escape.
	esc := url.QueryEscape(std([]byte(query)))
	for _, e := range []string{"%2B", "%2F", "%3D"} {
		if !strings.Contains(esc, e) {
			t.Fatalf("the escaped cursor %q holds no %s", esc, e)
		}
	}
}

// TestFind_SameAsHitsOneSecretAtATime: reading b once for several secrets
// finds, for each, exactly what the plain reading of every view for that
// secret alone finds.
func TestFind_SameAsHitsOneSecretAtATime(t *testing.T) {
	secrets := []string{secret, "adm-77c1e0f2-operator", "short", ""}
	rng := rand.New(rand.NewPCG(23, 4))
	pieces := func() string {
		s := secrets[rng.IntN(3)]
		switch rng.IntN(8) {
		case 0:
			return s
		case 1:
			return strconv.Quote(s)
		case 2:
			return url.QueryEscape(s)
		case 3:
			return base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", rng.IntN(3)) + s))
		case 4:
			e := base64.RawURLEncoding.EncodeToString([]byte(s))
			return e[:min(len(e), rng.IntN(20)+10)]
		case 5:
			return fmt.Sprintf(`\\u%04x`, s[0]) + s[1:]
		case 6:
			// Containers nested in each other.
			inner := []byte("q=" + url.QueryEscape(s) + "&after=~~~???")
			for range rng.IntN(3) + 1 {
				enc := base64.StdEncoding
				if rng.IntN(2) == 0 {
					enc = base64.RawURLEncoding
				}
				e := enc.EncodeToString(append([]byte(strings.Repeat("x", rng.IntN(3))), inner...))
				if rng.IntN(2) == 0 {
					e = url.QueryEscape(e)
				}
				inner = []byte(`{"c":"` + e + `"}`)
			}
			return string(inner)
		default:
			b := make([]byte, rng.IntN(60))
			for i := range b {
				b[i] = byte(rng.IntN(95) + 32)
			}
			return string(b)
		}
	}
	for range 3000 {
		var b bytes.Buffer
		for range rng.IntN(6) + 1 {
			b.WriteString(pieces())
		}
		got := Find(b.Bytes(), secrets...)
		for i, s := range secrets {
			if want := refHits(b.Bytes(), s); !reflect.DeepEqual(got[i], want) {
				t.Fatalf("Find(%q)[%q] = %v, the reference reading finds %v", b.Bytes(), s, got[i], want)
			}
		}
	}
}

// The reference reading: every view decoded in full for one secret, and
// every base64 decoding read again in every view, to maxDepth layers.

func refViews(b []byte) [][]byte {
	return [][]byte{b, refJsonUnescape(b), refJsonUnescape(refJsonUnescape(b)), refPercentDecode(b, true),
		refPercentDecode(refJsonUnescape(b), true), refPercentDecode(b, false)}
}

// refDistinct drops the views equal to an earlier one.
func refDistinct(views [][]byte) [][]byte {
	var out [][]byte
	for _, v := range views {
		if !slices.ContainsFunc(out, func(o []byte) bool { return bytes.Equal(o, v) }) {
			out = append(out, v)
		}
	}
	return out
}

var refNames = []string{"raw", "json-unescaped", "json-unescaped", "url-decoded", "url-decoded", "url-decoded"}

func refHits(b []byte, secret string) []string {
	want := refSkeleton([]byte(secret))
	if len(want) == 0 {
		return nil
	}
	var hits []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			hits = append(hits, name)
		}
	}
	for i, v := range refViews(b) {
		if bytes.Contains(refSkeleton(v), want) {
			add(refNames[i])
		}
		if refBase64Reveals(v, want, 1) {
			add("base64")
		}
	}
	return hits
}

func refIsAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// skeleton keeps letters and digits.
func refSkeleton(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if refIsAlnum(c) {
			out = append(out, c)
		}
	}
	return out
}

// jsonUnescape decodes \uXXXX and the one-character escapes wherever they
// appear.
func refJsonUnescape(b []byte) []byte {
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
func refPercentDecode(b []byte, plus bool) []byte {
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

func refIsBase64(c byte) bool {
	return refIsAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_'
}

// base64Reveals decodes every run of base64 characters, from each of its
// first four positions, in both alphabets, and looks for want in what it
// decoded, in each of its views and, above maxDepth, in its base64 runs.
func refBase64Reveals(b, want []byte, depth int) bool {
	if depth > maxDepth {
		return false
	}
	for i := 0; i < len(b); {
		if !refIsBase64(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && refIsBase64(b[j]) {
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
				if bytes.Contains(refSkeleton(dec[:n]), want) {
					return true
				}
				if !refText(dec[:n]) {
					continue // binary: not read as a container
				}
				for _, v := range refDistinct(refViews(dec[:n])) {
					if bytes.Contains(refSkeleton(v), want) || refBase64Reveals(v, want, depth+1) {
						return true
					}
				}
			}
		}
	}
	return false
}

// refText: three bytes in four are printable.
func refText(b []byte) bool {
	n := 0
	for _, c := range b {
		if c >= 32 && c < 127 || c == 9 || c == 10 || c == 13 {
			n++
		}
	}
	return 4*n >= 3*len(b)
}
