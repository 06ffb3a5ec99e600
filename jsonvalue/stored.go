package jsonvalue

// The stored encoding is the stores' document codec: the JSON documents of
// records, targets and operations are written and read through it. Its
// fast paths handle exactly the values decoded JSON holds and produce
// what encoding/json does, byte for byte and value for value; anything else
// falls back to encoding/json. It must never produce bytes or values that
// encoding/json would not.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MapKeys appends m's keys to keys in byte order. Callers pass a small
// buffer on their stack, used when the map fits.
func MapKeys(keys []string, m map[string]any) []string {
	if len(m) > cap(keys) {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Marshal is json.Marshal as a string; it panics when v cannot be encoded
// (stores only encode values they built).
func Marshal(v any) string {
	switch m := v.(type) {
	case map[string]any:
		if m != nil {
			if b, ok := appendStoredJSON(make([]byte, 0, 256), m); ok {
				return string(b)
			}
		}
	case map[string]string:
		// A write's frame: one per record and target.
		if m != nil {
			b, _ := appendStoredJSON(make([]byte, 0, 256), m)
			return string(b)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic("jsonvalue: marshal: " + err.Error())
	}
	return string(b)
}

// Stored documents of records and targets are maps decoded from JSON. The
// fast encoder and decoder below handle exactly those values and produce
// what encoding/json does, byte for byte and value for value; anything else
// (a float64, a struct, an invalid number, a document they do not read)
// makes them decline, and encoding/json does the work.

// appendStoredJSON appends json.Marshal(v)'s bytes, for the value types
// decoded JSON holds (with ints); false for any other value.
func appendStoredJSON(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		if x {
			return append(b, "true"...), true
		}
		return append(b, "false"...), true
	case string:
		return appendJSONString(b, x), true
	case json.Number:
		lit := string(x)
		if lit == "" {
			lit = "0" // as encoding/json writes the zero Number
		}
		if !validNumber(lit) {
			return b, false
		}
		return append(b, lit...), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendStoredJSON(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case []string:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, e)
		}
		return append(b, ']'), true
	case map[string]string:
		if x == nil {
			return append(b, "null"...), true
		}
		var buf [16]string
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, x[k])
		}
		return append(b, '}'), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		var buf [16]string
		keys := MapKeys(buf[:0], x)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendStoredJSON(b, x[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

const lowerHex = "0123456789abcdef"

// appendJSONString is encoding/json's string encoding with HTML escaping:
// <, > and & as \u003c, \u003e, \u0026; \b \f \n \r \t; other control
// bytes as \u00XX; invalid UTF-8 bytes as \ufffd each; U+2028 and U+2029
// escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', lowerHex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// validNumber is the JSON number grammar.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// storedParser reads a stored document into the values encoding/json's
// Decoder with UseNumber produces; ok is false for anything it does not
// handle (then encoding/json reads the document, and reports its errors).
type storedParser struct {
	s     string
	i     int
	depth int
}

// maxStoredDepth bounds the fast parser's nesting; deeper documents go to
// encoding/json.
const maxStoredDepth = 64

func (p *storedParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *storedParser) value() (any, bool) {
	p.ws()
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, false
}

func (p *storedParser) literal(lit string) bool {
	if !strings.HasPrefix(p.s[p.i:], lit) {
		return false
	}
	p.i += len(lit)
	return true
}

func (p *storedParser) number() (any, bool) {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	lit := p.s[start:p.i]
	if !validNumber(lit) {
		return nil, false
	}
	return json.Number(lit), true
}

func (p *storedParser) str() (string, bool) {
	p.i++ // the opening quote
	start := p.i
	var buf []byte
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			var out string
			if buf == nil {
				out = p.s[start:p.i]
			} else {
				out = string(append(buf, p.s[start:p.i]...))
			}
			p.i++
			return out, true
		case c < 0x20:
			return "", false
		case c == '\\':
			buf = append(buf, p.s[start:p.i]...)
			if p.i+1 >= len(p.s) {
				return "", false
			}
			switch e := p.s[p.i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				if p.i+6 > len(p.s) {
					return "", false
				}
				r, err := strconv.ParseUint(p.s[p.i+2:p.i+6], 16, 32)
				if err != nil || strings.ContainsAny(p.s[p.i+2:p.i+6], "+-") || (r >= 0xD800 && r < 0xE000) {
					// Surrogates (pairs or not) go to encoding/json.
					return "", false
				}
				buf = utf8.AppendRune(buf, rune(r))
				p.i += 6
				start = p.i
				continue
			default:
				return "", false
			}
			p.i += 2
			start = p.i
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			p.i += size
		}
	}
	return "", false
}

func (p *storedParser) array() (any, bool) {
	if p.depth++; p.depth > maxStoredDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	p.i++ // [
	out := []any{}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return out, true
	}
	for {
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		p.ws()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return out, true
		default:
			return nil, false
		}
	}
}

func (p *storedParser) object() (map[string]any, bool) {
	if p.depth++; p.depth > maxStoredDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	p.i++ // {
	out := map[string]any{}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return out, true
	}
	for {
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		out[k] = v
		p.ws()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return out, true
		default:
			return nil, false
		}
	}
}

// UnmarshalMap decodes a stored JSON object into *m as Unmarshal does.
func UnmarshalMap(doc string, m *map[string]any) error {
	if *m == nil {
		p := storedParser{s: doc}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '{' {
			if v, ok := p.object(); ok {
				if p.ws(); p.i == len(p.s) {
					*m = v
					return nil
				}
			}
		}
	}
	return Unmarshal(doc, m)
}

// Unmarshal decodes a stored document into v, numbers as json.Number.
func Unmarshal(doc string, v any) error {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode stored document: %w", err)
	}
	return nil
}
