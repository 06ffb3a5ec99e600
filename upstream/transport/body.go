package transport

import (
	"errors"
	"mime"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// DecodeJSONBody decodes a JSON response body once, strictly (numbers as
// json.Number, a member named twice a bad response naming it). A content
// type other than JSON and, when checkError is set, a body that is an
// error object behind a 2xx are refused with their own kinds.
func DecodeJSONBody(resp *Response, checkError bool) (any, error) {
	if err := checkContentType(resp); err != nil {
		return nil, err
	}
	doc, err := decodeBody(resp.Body)
	if err != nil {
		return nil, err
	}
	if checkError {
		if err := errorInSuccessError(doc); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// checkContentType refuses a body whose declared content type is not JSON:
// application/json, any +json, or a type the upstream declared JSON.
func checkContentType(resp *Response) error {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json") || slices.Contains(resp.jsonTypes, mt)) {
			if err != nil {
				mt = "unparseable"
			}
			return &BodyError{Kind: BodyContentType, Detail: envelope.SafeName(mt)}
		}
	}
	return nil
}

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
			return BadResponse("the body names a member twice")
		}
		return BadResponse("the body names %q twice", de.Path)
	}
	return BadResponse("the body is not valid JSON")
}

// DecodeListBody reads a list page's body once, strictly, except for the
// items array at itemsPath (dotted keys; "" is the body itself): its
// elements stay raw, as json.RawMessage sharing the body's bytes, until the
// scan decodes them one at a time (dialect.ItemDecoder). A page then costs
// its bytes and the one item being read, not a decoded tree of every item.
// found is false when itemsPath does not lead to an array; doc then holds
// what is there, for the scan (Resource.ItemsOf) to judge. A member named
// twice outside the items fails the page; inside an item, it is the item's
// (see dialect.ItemDecoder).
func DecodeListBody(resp *Response, itemsPath string) (doc any, items []any, found bool, err error) {
	if err := checkContentType(resp); err != nil {
		return nil, nil, false, err
	}
	doc, items, found, err = jsonvalue.DecodeList(resp.Body, itemsPath)
	if err != nil {
		return nil, nil, false, bodyReadError(err)
	}
	if err := errorInSuccessError(doc); err != nil {
		return nil, nil, false, err
	}
	return doc, items, found, nil
}
