package upstream

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
type signalState uint8

const (
	signalAbsent signalState = iota
	signalRead
	signalUnreadable
)

// readFlag reads an end flag (has_more, is_last, hasNextPage): a boolean.
func readFlag(doc any, path string) (bool, signalState) {
	if path == "" {
		return false, signalAbsent
	}
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return false, signalAbsent
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, signalUnreadable
	}
	return b, signalRead
}

// readToken reads a continuation token (a cursor, a continue token, a
// snapshot, a point in time's id): a string, or a number as written. A
// null reads as "": the upstream says there is none.
func readToken(doc any, path string) (string, signalState) {
	if path == "" {
		return "", signalAbsent
	}
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return "", signalAbsent
	}
	switch x := v.(type) {
	case string:
		return x, signalRead
	case json.Number:
		return x.String(), signalRead
	case nil:
		return "", signalRead
	}
	return "", signalUnreadable
}

// readURL reads a next page's URL: a string, or null for none.
func readURL(doc any, path string) (string, signalState) {
	if path == "" {
		return "", signalAbsent
	}
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return "", signalAbsent
	}
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x), signalRead
	case nil:
		return "", signalRead
	}
	return "", signalUnreadable
}

// readCount reads a count (a total, a count of pages, a remaining count):
// an integer. counted is false for a null or negative one, which the
// upstream writes for "not counted" (PocketBase's skipTotal answers -1);
// a fraction, a string or anything else is unreadable.
func readCount(doc any, path string) (n int, counted bool, st signalState) {
	if path == "" {
		return 0, false, signalAbsent
	}
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return 0, false, signalAbsent
	}
	if v == nil {
		return 0, false, signalRead
	}
	if !jsonvalue.IsInteger(v) {
		if _, isFloat := v.(float64); !isFloat {
			return 0, false, signalUnreadable
		}
	}
	n, ok = jsonvalue.Int(v)
	if !ok {
		return 0, false, signalUnreadable
	}
	return n, n >= 0, signalRead
}

// readHeaderCount reads a count from a header (X-Total-Count): absent
// when the header is, unreadable when it is not a decimal integer.
func readHeaderCount(h http.Header, name string) (n int, counted bool, st signalState) {
	if name == "" || h == nil {
		return 0, false, signalAbsent
	}
	vals := h.Values(name)
	if len(vals) == 0 {
		return 0, false, signalAbsent
	}
	if len(vals) > 1 {
		// Two values of one count: neither is read.
		return 0, false, signalUnreadable
	}
	n, err := strconv.Atoi(strings.TrimSpace(vals[0]))
	if err != nil {
		return 0, false, signalUnreadable
	}
	return n, n >= 0, signalRead
}

// readObject reads a continuation object (MediaWiki's continue): an
// object, or null for none.
func readObject(doc any, path string) (map[string]any, signalState) {
	v, ok := jsonvalue.Get(doc, path)
	if !ok {
		return nil, signalAbsent
	}
	switch x := v.(type) {
	case map[string]any:
		return x, signalRead
	case nil:
		return nil, signalRead
	}
	return nil, signalUnreadable
}

// present reads a marker whose presence is the signal (MediaWiki's
// batchcomplete): any value but null.
func present(doc any, path string) signalState {
	v, ok := jsonvalue.Get(doc, path)
	switch {
	case !ok:
		return signalAbsent
	case v == nil:
		return signalUnreadable
	}
	return signalRead
}
