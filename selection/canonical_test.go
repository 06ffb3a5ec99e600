package selection

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// referenceCanonical is the canonical encoder as it was before the fast
// paths (a map per record, a regexp for integer literals, fmt for escapes):
// the property tests below check that the fast encoder writes the same bytes
// for any input.
func referenceCanonical(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if x {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return referenceString(b, x), nil
	case json.Number:
		return referenceNumber(b, string(x))
	case float64:
		return referenceFloat(b, x)
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
			if b, err = referenceCanonical(b, e); err != nil {
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
			b = referenceString(b, e)
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
			b = referenceString(b, k)
			b = append(b, ':')
			var err error
			if b, err = referenceCanonical(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
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
	return referenceCanonical(b, generic)
}

func referenceString(b []byte, s string) []byte {
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

var referenceIntLiteral = regexp.MustCompile(`^-?[0-9]+$`)

func referenceNumber(b []byte, lit string) ([]byte, error) {
	if referenceIntLiteral.MatchString(lit) {
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
	return referenceFloat(b, f)
}

func referenceFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("canonical: %v is not a JSON number", f)
	}
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return append(b, fmt.Sprintf("%d", int64(f))...), nil
	}
	return append(b, strconv.FormatFloat(f, 'g', -1, 64)...), nil
}

// drawer is what the value generators draw from: rapid, so that a failing
// case shrinks to a small one.
type drawer interface{ IntN(n int) int }

type rapidDrawer struct{ t *rapid.T }

func (d rapidDrawer) IntN(n int) int { return rapid.IntRange(0, n-1).Draw(d.t, "n") }

// genString draws strings that exercise every branch of the string
// encoder: plain ASCII, escapes, control bytes, multi-byte UTF-8 and
// invalid UTF-8.
func genString(rng drawer) string {
	pieces := []string{"", "a", "sub_0001", "past_due", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f", " ", "<html>&",
		"é", "Müller & Söhne", "日本", "\U0001F600", "\xff", "\xc3", "\xed\xa0\x80", "\xe2\x82", "~", "-0"}
	n := rng.IntN(5)
	var sb strings.Builder
	for range n {
		sb.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return sb.String()
}

func genNumber(rng drawer) any {
	lits := []string{"0", "-0", "00", "-007", "1", "42", "123456789012345678901234567890", "-1", "1.0", "1.5", "0.1",
		"1e2", "1E2", "1e-7", "-2.5e+3", "10.250", "9007199254740993", "9007199254740993.0", "1e21", "1e400"}
	switch rng.IntN(4) {
	case 0:
		return json.Number(lits[rng.IntN(len(lits))])
	case 1:
		fs := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e21, 1e-7, 1 << 53, 1<<53 + 2, 1234567.5, math.NaN(), math.Inf(1)}
		return fs[rng.IntN(len(fs))]
	case 2:
		return rng.IntN(2000) - 1000
	}
	return int64(rng.IntN(1 << 40))
}

func genValue(rng drawer, depth int) any {
	k := rng.IntN(9)
	if depth > 2 {
		k = rng.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2, 3:
		return genString(rng)
	case 4:
		return genNumber(rng)
	case 5:
		n := rng.IntN(4)
		out := make([]any, n)
		for i := range out {
			out[i] = genValue(rng, depth+1)
		}
		return out
	case 6:
		return []string{genString(rng), genString(rng)}
	case 7:
		return struct {
			A string `json:"a"`
			B int    `json:"b"`
		}{genString(rng), rng.IntN(10)}
	}
	return genMap(rng, depth+1)
}

func genMap(rng drawer, depth int) map[string]any {
	if rng.IntN(8) == 0 {
		return nil
	}
	n := rng.IntN(20) // past the 16 keys sorted on the stack
	m := make(map[string]any, n)
	for range n {
		m[genString(rng)] = genValue(rng, depth)
	}
	return m
}

// TestRecordEncoding_SameBytesAsReference: the record encoder writes
// exactly C(r.canonicalValue()) as the reference encoder computes it, and
// fails exactly when it fails.
func TestRecordEncoding_SameBytesAsReference(t *testing.T) {
	t.Parallel()
	disps := []string{Member, Excluded, Ambiguous}
	i := 0
	for range 10 { // 10 × rapid's 100 checks
		rapid.Check(t, func(rt *rapid.T) {
			i++
			rng := rapidDrawer{rt}
			r := Record{ID: genString(rng), Disposition: disps[rng.IntN(3)], Rule: rng.IntN(7) - 4, Note: genString(rng),
				Version: genString(rng), Source: genString(rng), Review: genMap(rng, 0), Before: genMap(rng, 1), Groups: genMap(rng, 1)}
			if rng.IntN(3) == 0 {
				r.Restore = genMap(rng, 1)
			}
			want, wantErr := referenceCanonical(nil, r.canonicalValue())
			got, gotErr := appendRecord([]byte("prefix"), &r)
			if (wantErr != nil) != (gotErr != nil) {
				rt.Fatalf("case %d: error %v, reference error %v\nrecord %#v", i, gotErr, wantErr, r)
			}
			if wantErr != nil {
				if gotErr.Error() != wantErr.Error() {
					rt.Fatalf("case %d: error %q, reference %q", i, gotErr, wantErr)
				}
				return
			}
			if !bytes.Equal(got, append([]byte("prefix"), want...)) {
				rt.Fatalf("case %d:\n got %s\nwant prefix%s", i, got, want)
			}
			// Any value, not only records.
			v := genValue(rng, 0)
			want, wantErr = referenceCanonical(nil, v)
			got, gotErr = jsonvalue.AppendCanonical(nil, v)
			if (wantErr != nil) != (gotErr != nil) || (wantErr == nil && !bytes.Equal(got, want)) {
				rt.Fatalf("case %d: value %#v: got %s (%v), want %s (%v)", i, v, got, gotErr, want, wantErr)
			}
		})
	}
}

// TestDigester_SameDigestAsReference: a digest over many records equals
// the reference encoder's stream.
func TestDigester_SameDigestAsReference(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) { digestAgainstReference(rt, rapidDrawer{rt}) })
}

func digestAgainstReference(t *rapid.T, rng drawer) {
	sel := &Selection{Resource: "r", Environment: "e", Upstream: "u", Kind: KindScope, Selector: Selector{Filter: map[string]any{"status": "past_due"}}}
	var recs []Record
	for i := range 60 {
		r := Record{ID: fmt.Sprintf("id_%05d", i), Disposition: Member, Rule: 0, Note: genString(rng), Version: strconv.Itoa(i),
			Review: map[string]any{"name": genString(rng), "amount": json.Number(strconv.Itoa(i * 7)), "tags": []any{genString(rng)}},
			Before: map[string]any{"paused": false}}
		if i%7 == 0 {
			r.Restore = map[string]any{"paused": true}
		}
		recs = append(recs, r)
	}
	d, err := NewDigester(sel)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := NewDigester(sel)
	for _, r := range recs {
		if err := d.Add(r); err != nil {
			t.Fatal(err)
		}
		enc, err := referenceCanonical(nil, r.canonicalValue())
		if err != nil {
			t.Fatal(err)
		}
		ref.count++
		ref.h.Write(append(enc, '\n'))
	}
	got, _ := d.Sum()
	want, _ := ref.Sum()
	if got != want {
		t.Fatalf("digest %s, reference %s", got, want)
	}
}
