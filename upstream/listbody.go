package upstream

import (
	"encoding/json"
	"errors"

	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// decodeBody is the one reading of an upstream's JSON answer: strict
// (jsonvalue.Decode), so that a member named twice is never read by one
// of its values, and every failure a bad response naming what is wrong.
func decodeBody(b []byte) (any, error) {
	doc, err := jsonvalue.Decode(b)
	if err != nil {
		return nil, bodyReadError(err)
	}
	return doc, nil
}

// bodyReadError is the bad response a strict reading's failure makes.
func bodyReadError(err error) error {
	var de *jsonvalue.DuplicateError
	if errors.As(err, &de) {
		if de.Path == "" {
			return transport.BadResponse("the body names a member twice")
		}
		return transport.BadResponse("the body names %q twice", de.Path)
	}
	return transport.BadResponse("the body is not valid JSON")
}

// decodeListBody reads a list page's body once, strictly, except for the
// items array at itemsPath (dotted keys; "" is the body itself): its
// elements stay raw, as json.RawMessage sharing the body's bytes, until the
// scan decodes them one at a time (itemDecoder). A page then costs its
// bytes and the one item being read, not a decoded tree of every item.
// found is false when itemsPath does not lead to an array; doc then holds
// what is there, for itemsOf to judge. A member named twice outside the
// items fails the page; inside an item, it is the item's (see itemDecoder).
func decodeListBody(resp *transport.Response, itemsPath string) (doc any, items []any, found bool, err error) {
	if err := checkContentType(resp); err != nil {
		return nil, nil, false, err
	}
	doc, items, found, err = jsonvalue.DecodeList(resp.Body, itemsPath)
	if err != nil {
		return nil, nil, false, bodyReadError(err)
	}
	if err := transport.ErrorInSuccess(doc); err != nil {
		return nil, nil, false, err
	}
	return doc, items, found, nil
}

// itemDecoder decodes raw items one after another, each strictly: a member
// named twice is left out of the item and named in its dups.
type itemDecoder struct{}

// item returns it decoded when it is raw, else as it is. dups lists the
// members it names twice (dotted paths within the item).
func (itemDecoder) item(it any) (v any, dups []string, err error) {
	raw, ok := it.(json.RawMessage)
	if !ok {
		return it, nil, nil
	}
	v, dups, err = jsonvalue.DecodeRecord(raw)
	if err != nil {
		return nil, nil, transport.BadResponse("the body is not valid JSON")
	}
	return v, dups, nil
}

// itemValue is an item decoded, for the dialects that read the first or
// the last of a page (a keyset cursor, an overlap check, sort values); a
// member it names twice is absent from it, so that nothing reads it.
func itemValue(it any) any {
	v, _, err := itemDecoder{}.item(it)
	if err != nil {
		return nil
	}
	return v
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
