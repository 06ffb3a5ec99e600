package selection

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Canonical encoding (docs/digest.md): JSON with object keys sorted by their
// UTF-8 bytes, no insignificant whitespace, strings escaping only '"', '\'
// and control characters (as \u00XX), numbers by value. The same value
// always encodes to the same bytes, whatever the map order, the process or
// the machine.

var intLiteral = regexp.MustCompile(`^-?[0-9]+$`)

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
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
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

func appendString(b []byte, s string) []byte {
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
			b = append(b, fmt.Sprintf(`\u%04x`, c)...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendNumber: an integer literal keeps its exact digits (without leading
// zeros); any other number is encoded by its float64 value.
func appendNumber(b []byte, lit string) ([]byte, error) {
	if intLiteral.MatchString(lit) {
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
	d.buf, err = AppendCanonical(d.buf[:0], r.canonicalValue())
	if err != nil {
		d.err = err
		return err
	}
	d.buf = append(d.buf, '\n')
	d.h.Write(d.buf)
	return nil
}

// Sum finishes the digest.
func (d *Digester) Sum() (string, error) {
	if d.err != nil {
		return "", d.err
	}
	d.h.Write([]byte(`{"count":` + strconv.Itoa(d.count) + "}\n"))
	return "sha256:" + hex.EncodeToString(d.h.Sum(nil)), nil
}
