package selection

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/airlock-mcp/airlock/selection/internal/docjson"
)

// Canonical encoding (docs/digest.md): JSON with object keys sorted by their
// UTF-8 bytes, no insignificant whitespace, strings escaping only '"', '\'
// and control characters (as \u00XX), numbers by value. The same value
// always encodes to the same bytes, whatever the map order, the process or
// the machine.

// AppendCanonical appends the canonical encoding of v to b. v is a value
// decoded from JSON (map[string]any, []any, string, bool, nil, json.Number,
// float64) or an int.
func AppendCanonical(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if x {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return appendString(b, x), nil
	case json.Number:
		return appendNumber(b, string(x))
	case float64:
		return appendFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = AppendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case []string:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, e)
		}
		return append(b, ']'), nil
	case map[string]any:
		return appendObject(b, x)
	}
	// Any other Go value goes through encoding/json first.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("canonical: %w", err)
	}
	return AppendCanonical(b, generic)
}

// Canonical returns the canonical encoding of v.
func Canonical(v any) ([]byte, error) { return AppendCanonical(nil, v) }

// appendObject encodes a map with its keys in byte order. Small maps sort
// their keys in a buffer on the stack.
func appendObject(b []byte, x map[string]any) ([]byte, error) {
	var buf [16]string
	keys := docjson.MapKeys(buf[:0], x)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = AppendCanonical(b, x[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

const hexDigits = "0123456789abcdef"

func appendString(b []byte, s string) []byte {
	// Fast path: printable ASCII with nothing to escape is copied as is.
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			break
		}
	}
	if i == len(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// isIntLiteral reports whether lit is -?[0-9]+.
func isIntLiteral(lit string) bool {
	if len(lit) > 0 && lit[0] == '-' {
		lit = lit[1:]
	}
	if lit == "" {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] < '0' || lit[i] > '9' {
			return false
		}
	}
	return true
}

// appendNumber: an integer literal keeps its exact digits (without leading
// zeros); any other number is encoded by its float64 value.
func appendNumber(b []byte, lit string) ([]byte, error) {
	if isIntLiteral(lit) {
		neg := strings.HasPrefix(lit, "-")
		digits := strings.TrimLeft(strings.TrimPrefix(lit, "-"), "0")
		if digits == "" {
			return append(b, '0'), nil
		}
		if neg {
			b = append(b, '-')
		}
		return append(b, digits...), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, fmt.Errorf("canonical: number %q: %w", lit, err)
	}
	return appendFloat(b, f)
}

// appendFloat: integral values up to 2^53 as integers, others in Go's
// shortest round-trip 'g' form.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("canonical: %v is not a JSON number", f)
	}
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return strconv.AppendInt(b, int64(f), 10), nil
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64), nil
}

// Prefixes of the hashed streams; bumping one changes every digest.
const (
	selectionDomain = "airlock-selection/v1\n"
	actionDomain    = "airlock-action/v1\n"
)

// ActionDigest is sha256 over the canonical action (type and params).
func ActionDigest(a Action) (string, error) {
	params := a.Params
	if params == nil {
		params = map[string]any{}
	}
	enc, err := Canonical(map[string]any{"type": a.Type, "params": params})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(actionDomain), enc...))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Digester computes a selection digest from a header and the records in id
// order, one at a time: a million members never sit in memory at once.
type Digester struct {
	h     hash.Hash
	buf   []byte
	count int
	last  string
	err   error
}

// NewDigester starts a digest with the selection's header (everything but
// the records).
func NewDigester(s *Selection) (*Digester, error) {
	header := map[string]any{
		"v": 1, "resource": s.Resource, "environment": s.Environment, "upstream": s.Upstream, "kind": s.Kind,
		"selector": s.Selector.canonicalValue(), "action_digest": s.ActionDigest, "action_spec": s.ActionSpecDigest,
	}
	d := &Digester{h: sha256.New()}
	d.h.Write([]byte(selectionDomain))
	var err error
	if d.buf, err = AppendCanonical(d.buf[:0], header); err != nil {
		return nil, err
	}
	d.buf = append(d.buf, '\n')
	d.h.Write(d.buf)
	return d, nil
}

// Add hashes one record. Records must come in ascending id order.
func (d *Digester) Add(r Record) error {
	if d.err != nil {
		return d.err
	}
	if d.count > 0 && r.ID <= d.last {
		d.err = fmt.Errorf("digest: records out of order (%q after %q)", r.ID, d.last)
		return d.err
	}
	d.last = r.ID
	d.count++
	var err error
	d.buf, err = appendRecord(d.buf[:0], &r)
	if err != nil {
		d.err = err
		return err
	}
	d.buf = append(d.buf, '\n')
	d.h.Write(d.buf)
	return nil
}

// appendRecord appends C(r.canonicalValue()) without building the map: a
// record's keys are fixed, so they are written in their byte order
// (before, disposition, id, note, restore, review, rule, version).
func appendRecord(b []byte, r *Record) ([]byte, error) {
	var err error
	b = append(b, `{"before":`...)
	if b, err = appendObject(b, r.Before); err != nil {
		return nil, err
	}
	b = append(b, `,"disposition":`...)
	b = appendString(b, r.Disposition)
	b = append(b, `,"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"note":`...)
	b = appendString(b, r.Note)
	if len(r.Restore) > 0 {
		b = append(b, `,"restore":`...)
		if b, err = appendObject(b, r.Restore); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"review":`...)
	if b, err = appendObject(b, r.Review); err != nil {
		return nil, err
	}
	b = append(b, `,"rule":`...)
	b = strconv.AppendInt(b, int64(r.Rule), 10)
	b = append(b, `,"version":`...)
	b = appendString(b, r.Version)
	return append(b, '}'), nil
}

// Sum finishes the digest.
func (d *Digester) Sum() (string, error) {
	if d.err != nil {
		return "", d.err
	}
	d.h.Write([]byte(`{"count":` + strconv.Itoa(d.count) + "}\n"))
	return "sha256:" + hex.EncodeToString(d.h.Sum(nil)), nil
}
