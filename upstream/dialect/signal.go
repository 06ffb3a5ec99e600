package dialect

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// What cannot be read is not absent. Every signal a dialect or a
// declaration reads from a page (items, a cursor, a next link, an end
// flag, a total, a remaining count, a snapshot, a batch marker) is read
// here, in one of three states: read (a value of the form the signal
// takes), absent (the page does not hold the member), or unreadable (it
// holds something else: a wrong type, an object where a string belongs).
// Only a signal that was read supports a claim; absence supports one only
// where the configuration says what it means (absent_means_zero); an
// unreadable signal is doubt, named with its member and page
// (SIGNAL_UNREADABLE), and never taken for an absent one.

// signalState is how one signal read on one page.
type Reading uint8

const (
	Absent Reading = iota
	Read
	Unreadable
)

// readFlag reads an end flag (has_more, is_last, hasNextPage): a boolean.
func readFlag(doc any, path string) (bool, Reading) {
	if path == "" {
		return false, Absent
	}
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return false, Absent
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, Unreadable
	}
	return b, Read
}

// ReadToken reads a continuation token (a cursor, a continue token, a
// snapshot, a point in time's id): a string, or a number as written. A
// null reads as "": the upstream says there is none.
func ReadToken(doc any, path string) (string, Reading) {
	if path == "" {
		return "", Absent
	}
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return "", Absent
	}
	switch x := v.(type) {
	case string:
		return x, Read
	case json.Number:
		return x.String(), Read
	case nil:
		return "", Read
	}
	return "", Unreadable
}

// readURL reads a next page's URL: a string, or null for none.
func readURL(doc any, path string) (string, Reading) {
	if path == "" {
		return "", Absent
	}
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return "", Absent
	}
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x), Read
	case nil:
		return "", Read
	}
	return "", Unreadable
}

// ReadCount reads a count (a total, a count of pages, a remaining count):
// an integer. counted is false for a null or negative one, which the
// upstream writes for "not counted" (PocketBase's skipTotal answers -1);
// a fraction, a string or anything else is unreadable.
func ReadCount(doc any, path string) (n int, counted bool, st Reading) {
	if path == "" {
		return 0, false, Absent
	}
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return 0, false, Absent
	}
	if v == nil {
		return 0, false, Read
	}
	if !jsonvalue.IsInteger(v) {
		if _, isFloat := v.(float64); !isFloat {
			return 0, false, Unreadable
		}
	}
	n, ok = jsonvalue.Int(v)
	if !ok {
		return 0, false, Unreadable
	}
	return n, n >= 0, Read
}

// readHeaderCount reads a count from a header (X-Total-Count): absent
// when the header is, unreadable when it is not a decimal integer.
func readHeaderCount(h http.Header, name string) (n int, counted bool, st Reading) {
	if name == "" || h == nil {
		return 0, false, Absent
	}
	vals := h.Values(name)
	if len(vals) == 0 {
		return 0, false, Absent
	}
	if len(vals) > 1 {
		// Two values of one count: neither is read.
		return 0, false, Unreadable
	}
	n, err := strconv.Atoi(strings.TrimSpace(vals[0]))
	if err != nil {
		return 0, false, Unreadable
	}
	return n, n >= 0, Read
}

// readObject reads a continuation object (MediaWiki's continue): an
// object, or null for none.
func readObject(doc any, path string) (map[string]any, Reading) {
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return nil, Absent
	}
	switch x := v.(type) {
	case map[string]any:
		return x, Read
	case nil:
		return nil, Read
	}
	return nil, Unreadable
}

// Present reads a marker whose presence is the signal (MediaWiki's
// batchcomplete): any value but null.
func Present(doc any, path string) Reading {
	v, ok := jsonvalue.Get(doc, path)
	switch {
	case !ok:
		return Absent
	case v == nil:
		return Unreadable
	}
	return Read
}
