package envelope

import (
	"bytes"
	"encoding/json"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// What airlock hands out, every client reads the same (I-JSON, RFC 7493).
// airlock keeps an upstream's numbers exact (json.Number), and digests hash
// them so; but a client that reads JSON numbers as doubles (JavaScript,
// the official TypeScript SDK) reads 9007199254740993 as 9007199254740992,
// another record's id, and would write to it. So every number that leaves
// airlock and a double would not read as itself (jsonvalue.Interoperable:
// an integer beyond ±(2^53−1), a decimal with more precision than a double)
// travels as a string of its exact text. Nothing else changes: a tool
// result's structured content and its text copy are made from the same
// bytes (Envelope.Marshal).

// IJSON returns the JSON document b with every number that is not
// interoperable replaced by a string of its literal, and every other byte
// as it was. A document without such a number is returned as is; one that
// is not valid JSON is rewritten up to where it stops being.
func IJSON(b []byte) []byte {
	if !mayHoldUnsafeNumber(b) {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []byte
	last := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		n, ok := tok.(json.Number)
		if !ok || jsonvalue.Interoperable(string(n)) {
			continue
		}
		// The offset is the end of the token, which is the literal
		// itself (json.Number keeps its text).
		end := int(dec.InputOffset())
		start := end - len(n)
		out = append(out, b[last:start]...)
		out = append(out, '"')
		out = append(out, n...)
		out = append(out, '"')
		last = end
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// mayHoldUnsafeNumber is IJSON's quick look, before the decoder's slower
// one: it reports whether b may hold a number that is not interoperable.
// A number stands only after ':', '[' or ',' (and whitespace), or at the
// start, and runs over [-+.eE0-9]; every such run is judged, inside
// strings too, so that the look may say yes for nothing but never says no
// for a number.
func mayHoldUnsafeNumber(b []byte) bool {
	prev := byte(',') // the start of the document
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case (c == '-' || c >= '0' && c <= '9') && (prev == ':' || prev == '[' || prev == ','):
			end, digitsOnly := i, true
			for end < len(b) && isNumberByte(b[end]) {
				digitsOnly = digitsOnly && (b[end] >= '0' && b[end] <= '9' || end == i)
				end++
			}
			if digitsOnly && end-i <= 15 {
				// An integer of at most 15 digits: within ±(2^53−1).
				i = end - 1
				prev = '0'
				continue
			}
			// A run that is no number (a date in a string) is none.
			if run := b[i:end]; json.Valid(run) && !jsonvalue.Interoperable(string(run)) {
				return true
			}
			i = end - 1
		}
		prev = c
	}
	return false
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// NumberAsStringMessage is the message of a field error that refuses a
// number a client may have rounded before sending it.
const NumberAsStringMessage = "this number is beyond what a double holds exactly (an integer beyond ±(2^53−1)), so it may have been rounded on its way; send it as a string of its digits"

// NumberAsStringError refuses, at field, a number that is not
// interoperable: a JavaScript client holds 9007199254740993 as
// 9007199254740992 and would send that, another record's id. airlock
// hands such numbers out as strings and takes them back as strings.
func NumberAsStringError(field string) FieldError {
	return FieldError{Field: SafeName(field), Code: FieldType, Message: NumberAsStringMessage, Example: "9007199254740993"}
}
