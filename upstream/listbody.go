package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// decodeListBody decodes a list page's body as DecodeJSONBody does, except
// for the items array at itemsPath (dotted object keys; "" is the body
// itself): its elements stay raw, as json.RawMessage sharing the body's
// bytes, until the scan decodes them one at a time (itemDecoder). A page
// then costs its bytes and the one item being read, not a decoded tree of
// every item. ok is false when the body does not lend itself to it (not
// valid JSON, the items not an array reached through plain keys, a key
// given twice on the way): the caller decodes it whole, which also says
// what is wrong with it.
func decodeListBody(resp *Response, itemsPath string) (doc any, items []any, ok bool, err error) {
	if err := checkContentType(resp); err != nil {
		return nil, nil, false, err
	}
	b := resp.Body
	if !json.Valid(b) {
		return nil, nil, false, nil
	}
	var parts []string
	if itemsPath != "" {
		parts = strings.Split(itemsPath, ".")
	}
	at := skipSpace(b, 0)
	for _, key := range parts {
		var found bool
		if at, found = memberValue(b, at, key); !found {
			return nil, nil, false, nil
		}
	}
	if at >= len(b) || b[at] != '[' {
		return nil, nil, false, nil
	}
	start := at
	// Two passes: the first counts the items, so that the second fills a
	// slice of their number (a growing one would cost twice as much).
	n := 0
	elements(b, start, func(int, int) { n++ })
	items = make([]any, 0, n)
	end := elements(b, start, func(from, to int) { items = append(items, json.RawMessage(b[from:to:to])) })
	// The rest of the document, with an empty array where the items are:
	// small, decoded as usual.
	rest := make([]byte, 0, len(b)-(end-start)+2)
	rest = append(append(append(rest, b[:start]...), "[]"...), b[end:]...)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, false, nil
	}
	if err := errorInSuccessError(doc); err != nil {
		return nil, nil, false, err
	}
	if len(parts) == 0 {
		return items, items, true, nil
	}
	m, _ := doc.(map[string]any)
	for _, key := range parts[:len(parts)-1] {
		m, _ = m[key].(map[string]any)
	}
	if m == nil {
		return nil, nil, false, nil
	}
	m[parts[len(parts)-1]] = items
	return doc, items, true, nil
}

// elements calls fn with the bounds of each element of the array at
// b[at] and returns the array's end.
func elements(b []byte, at int, fn func(from, to int)) int {
	at = skipSpace(b, at+1)
	for at < len(b) && b[at] != ']' {
		end := skipValue(b, at)
		fn(at, end)
		at = skipSpace(b, end)
		if at < len(b) && b[at] == ',' {
			at = skipSpace(b, at+1)
		}
	}
	return at + 1
}

// memberValue finds key in the object at b[at] and returns where its value
// starts; found is false when b[at] is not an object, the key is not
// there, or it is there twice (a decoder keeps the last; a reader of the
// first would disagree).
func memberValue(b []byte, at int, key string) (int, bool) {
	if at >= len(b) || b[at] != '{' {
		return 0, false
	}
	value, seen := 0, 0
	at = skipSpace(b, at+1)
	for at < len(b) && b[at] == '"' {
		kend := skipString(b, at)
		name, ok := unquoteKey(b[at:kend])
		if !ok {
			return 0, false
		}
		at = skipSpace(b, kend)
		at = skipSpace(b, at+1) // the colon
		if name == key {
			value, seen = at, seen+1
		}
		at = skipSpace(b, skipValue(b, at))
		if at < len(b) && b[at] == ',' {
			at = skipSpace(b, at+1)
		}
	}
	return value, seen == 1
}

func unquoteKey(q []byte) (string, bool) {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1]), true
	}
	var s string
	return s, json.Unmarshal(q, &s) == nil
}

// skipValue returns the end of the JSON value starting at b[at], which is
// known to be valid.
func skipValue(b []byte, at int) int {
	switch b[at] {
	case '"':
		return skipString(b, at)
	case '{', '[':
		depth := 0
		for i := at; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	i := at
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', ']', '}', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

// skipString returns the end of the string starting at b[at] (its quote).
func skipString(b []byte, at int) int {
	for i := at + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

func skipSpace(b []byte, at int) int {
	for at < len(b) && (b[at] == ' ' || b[at] == '\t' || b[at] == '\r' || b[at] == '\n') {
		at++
	}
	return at
}

// itemDecoder decodes raw items one after another with one json.Decoder
// (numbers as json.Number), so that a page's items cost no decoder each.
type itemDecoder struct {
	feed feed
	dec  *json.Decoder
}

// feed hands a decoder one item at a time.
type feed struct{ b []byte }

func (f *feed) Read(p []byte) (int, error) {
	if len(f.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, f.b)
	f.b = f.b[n:]
	return n, nil
}

// item returns it decoded when it is raw, else as it is.
func (d *itemDecoder) item(it any) (any, error) {
	raw, ok := it.(json.RawMessage)
	if !ok {
		return it, nil
	}
	if d.dec == nil {
		d.dec = json.NewDecoder(&d.feed)
		d.dec.UseNumber()
	}
	d.feed.b = raw
	var v any
	if err := d.dec.Decode(&v); err != nil {
		d.dec = nil // never read the next item after a broken one
		return nil, BadResponse("the body is not valid JSON")
	}
	return v, nil
}

// decodeEnds decodes the first and the last of raw items in place: the
// dialects read them (a keyset cursor, an overlap check, sort values).
func decodeEnds(items []any) error {
	if len(items) == 0 {
		return nil
	}
	var d itemDecoder
	for _, i := range []int{0, len(items) - 1} {
		v, err := d.item(items[i])
		if err != nil {
			return err
		}
		items[i] = v
	}
	return nil
}

// isObject reports whether an item, raw or decoded, is a JSON object.
func isObject(it any) bool {
	switch x := it.(type) {
	case map[string]any:
		return true
	case json.RawMessage:
		return len(x) > 0 && x[0] == '{'
	}
	return false
}
