package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// What others send is read here, once and strictly (RFC 8259 as I-JSON,
// RFC 7493, narrows it): numbers keep their exact text (json.Number),
// strings must be UTF-8, nothing may follow the document, and an object
// that names a member twice is never read by one of its values. Which of
// the two a reader would take is undefined, and two readers of one answer
// (a proxy, the API's own client, airlock) may disagree.

// DuplicateError is a member named twice in one object; Path is where, as
// a dotted path (arrays by index), as Get reads it.
type DuplicateError struct{ Path string }

func (e *DuplicateError) Error() string {
	if e.Path == "" {
		return "a member is named twice"
	}
	return fmt.Sprintf("member %q is named twice", e.Path)
}

// SyntaxError is a document that is not JSON (or not UTF-8, or has data
// after its end). It never quotes the document.
type SyntaxError struct{ Offset int64 }

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("not a JSON document (at byte %d)", e.Offset)
}

// Decode reads b as one JSON document, strictly: objects as
// map[string]any, arrays as []any, numbers as json.Number, and a member
// named twice anywhere a *DuplicateError naming it.
func Decode(b []byte) (any, error) {
	r := newStrict(b)
	v, err := r.value(nil)
	if err != nil {
		return nil, err
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	if len(r.dups) > 0 {
		return nil, &DuplicateError{Path: r.dups[0]}
	}
	return v, nil
}

// DecodeRecord reads b as Decode does, except that a member named twice
// does not fail the read: it is left out of the value (neither of its
// values is kept), and dups lists where each one was, in document order.
// A record holding one is ambiguous, never read by either value.
func DecodeRecord(b []byte) (v any, dups []string, err error) {
	r := newStrict(b)
	if v, err = r.value(nil); err != nil {
		return nil, nil, err
	}
	if err := r.end(); err != nil {
		return nil, nil, err
	}
	return v, r.dups, nil
}

// DecodeList reads a list page: the document as Decode does, except the
// array at path (dotted keys, as Get walks them; "" is the document
// itself), whose elements stay unread: each a json.RawMessage that is a
// slice of b, in items and in doc alike. A page then holds its bytes and
// one item at a time, not a decoded tree of every item. found is false
// when the path does not lead to an array; doc then holds whatever is
// there, for the caller to judge. A member named twice inside an element
// is the element's (see DecodeRecord); anywhere else it fails the read.
func DecodeList(b []byte, path string) (doc any, items []any, found bool, err error) {
	r := newStrict(b)
	parts := []string{} // on the path, with nothing left: the document
	if path != "" {
		parts = strings.Split(path, ".")
	}
	r.wantItems = true
	if doc, err = r.value(parts); err != nil {
		return nil, nil, false, err
	}
	if err := r.end(); err != nil {
		return nil, nil, false, err
	}
	if len(r.dups) > 0 {
		return nil, nil, false, &DuplicateError{Path: r.dups[0]}
	}
	return doc, r.items, r.found, nil
}

// strict is one strict reading of a document.
type strict struct {
	b    []byte
	dec  *jsontext.Decoder
	dups []string
	// wantItems: see DecodeList; the array found there is left raw.
	wantItems bool
	found     bool
	items     []any
}

func newStrict(b []byte) *strict {
	// A bytes.Buffer is read in place: values read raw are slices of b.
	// Duplicate names are found by the reader itself, which knows where
	// they are and what to do with them.
	return &strict{b: b, dec: jsontext.NewDecoder(bytes.NewBuffer(b), jsontext.AllowDuplicateNames(true))}
}

// maxDepth bounds nesting: deeper documents are refused rather than read
// by recursion without end.
const maxDepth = 10000

// value reads the next value. rest is the part of the items path still
// to walk below it (nil: not on the path).
func (r *strict) value(rest []string) (any, error) {
	if r.dec.StackDepth() > maxDepth {
		return nil, r.syntax(errors.New("too deep"))
	}
	switch k := r.dec.PeekKind(); k {
	case '{':
		return r.object(rest)
	case '[':
		if r.wantItems && rest != nil && len(rest) == 0 && !r.found {
			return r.rawArray()
		}
		return r.array()
	case 0:
		_, err := r.dec.ReadToken()
		return nil, r.syntax(err)
	}
	tok, err := r.dec.ReadToken()
	if err != nil {
		return nil, r.syntax(err)
	}
	switch tok.Kind() {
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	}
	return nil, r.syntax(fmt.Errorf("unexpected %v", tok.Kind()))
}

func (r *strict) object(rest []string) (any, error) {
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, r.syntax(err)
	}
	m := map[string]any{}
	var twice map[string]bool
	for r.dec.PeekKind() != '}' {
		tok, err := r.dec.ReadToken()
		if err != nil {
			return nil, r.syntax(err)
		}
		name := tok.String()
		var where string
		if _, seen := m[name]; seen || twice[name] {
			where = pointerPath(r.dec.StackPointer())
		}
		v, err := r.value(below(rest, name))
		if err != nil {
			return nil, err
		}
		if where != "" || twice[name] {
			// Neither value is kept: a reader of the first and a reader
			// of the last would disagree.
			if twice == nil {
				twice = map[string]bool{}
			}
			if !twice[name] {
				r.dups = append(r.dups, where)
			}
			twice[name] = true
			delete(m, name)
			continue
		}
		m[name] = v
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, r.syntax(err)
	}
	return m, nil
}

// below is what remains of the items path under member name: the path
// goes on through name when its next step is name, or (a key holding
// dots, as Get finds them) several steps joined.
func below(rest []string, name string) []string {
	if len(rest) == 0 {
		return nil
	}
	if rest[0] == name {
		return rest[1:]
	}
	for n := 2; n <= len(rest); n++ {
		if strings.Join(rest[:n], ".") == name {
			return rest[n:]
		}
	}
	return nil
}

func (r *strict) array() (any, error) {
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, r.syntax(err)
	}
	out := []any{}
	for r.dec.PeekKind() != ']' {
		v, err := r.value(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, r.syntax(err)
	}
	return out, nil
}

// rawArray reads the items array, each element unread: a slice of the
// document's own bytes, checked for syntax only.
func (r *strict) rawArray() (any, error) {
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, r.syntax(err)
	}
	r.found = true
	r.items = []any{}
	for r.dec.PeekKind() != ']' {
		v, err := r.dec.ReadValue()
		if err != nil {
			return nil, r.syntax(err)
		}
		end := int(r.dec.InputOffset())
		start := end - len(v)
		r.items = append(r.items, json.RawMessage(r.b[start:end:end]))
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, r.syntax(err)
	}
	return r.items, nil
}

// end checks that nothing but space follows the document.
func (r *strict) end() error {
	_, err := r.dec.ReadToken()
	switch {
	case err == io.EOF:
		return nil
	case err == nil:
		return &SyntaxError{Offset: r.dec.InputOffset()}
	}
	return r.syntax(err)
}

func (r *strict) syntax(err error) error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return &SyntaxError{Offset: se.ByteOffset}
	}
	return &SyntaxError{Offset: r.dec.InputOffset()}
}

// pointerPath turns a JSON Pointer (RFC 6901) into a dotted path.
func pointerPath(p jsontext.Pointer) string {
	var parts []string
	for tok := range p.Tokens() {
		parts = append(parts, tok)
	}
	return strings.Join(parts, ".")
}
