package transport

import (
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/config"
)

// EncodeQuery encodes a query the way RFC 3986 (section 3.4) writes one:
// every byte but the unreserved characters and a few sub-delimiters that
// no server splits on is percent-encoded, a space as %20. OData refuses
// $filter=status+ne+'archived' ("+" is a literal plus outside HTML forms);
// with plus set (query_encoding: form), a space is written + as HTML forms
// write it, for an API that reads queries that way. Keys are sorted, as
// url.Values.Encode sorts them.
func EncodeQuery(q url.Values, plus bool) string {
	if len(q) == 0 {
		return ""
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(q)) {
		for _, v := range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(escapeQueryPart(k, plus))
			b.WriteByte('=')
			b.WriteString(escapeQueryPart(v, plus))
		}
	}
	return b.String()
}

// queryKeeps are the bytes a query part keeps as they are: RFC 3986's
// unreserved characters, and the sub-delimiters and gen-delimiters a query
// may hold that no server reads as a separator ($ for OData's system
// options, ' ( ) , : @ / for its expressions). & = + ; # ? and space are
// always encoded.
func queryKeeps(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~$'(),:@/!*", c) >= 0
}

func escapeQueryPart(s string, plus bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case queryKeeps(c):
			b.WriteByte(c)
		case c == ' ' && plus:
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// FormQuery reports whether a query is written as an HTML form writes it
// (a space as +): the list's query_encoding, else its upstream's.
func FormQuery(listEncoding, upstreamEncoding string) bool {
	if listEncoding != "" {
		return listEncoding == config.QueryForm
	}
	return upstreamEncoding == config.QueryForm
}

// setQueryParam returns raw with key set to value: its other parameters
// kept byte for byte (an upstream's next link is its own encoding, which
// re-encoding could change: a %20 into a +), key's old values dropped.
func setQueryParam(raw, key, value string, plus bool) string {
	out := dropQueryParam(raw, key)
	pair := escapeQueryPart(key, plus) + "=" + escapeQueryPart(value, plus)
	if out == "" {
		return pair
	}
	return out + "&" + pair
}

// dropQueryParam returns raw without key's values, every other parameter
// kept byte for byte.
func dropQueryParam(raw, key string) string {
	if raw == "" {
		return raw
	}
	parts := strings.Split(raw, "&")
	kept := parts[:0]
	for _, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if uk, err := url.QueryUnescape(k); err == nil && uk == key {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&")
}
