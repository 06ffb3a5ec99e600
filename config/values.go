package config

import (
	"encoding/json"
	"strings"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// IsNull reports whether v is one of the field's declared stand-ins
// for null.
func IsNull(v any, fd *FieldConfig) bool {
	if fd == nil || len(fd.NullValues) == 0 {
		return false
	}
	for _, nv := range fd.NullValues {
		if jsonvalue.SameScalar(v, normalizeYAMLValue(nv)) {
			return true
		}
	}
	return false
}

// InEnum reports whether s is one of the field's enum values (by case
// when the field is normalized to lower case).
func InEnum(s string, fd *FieldConfig) bool {
	for _, e := range fd.Enum {
		if e == s || fd.Normalize == "lower" && strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}

// ValueEqual reports whether a value read from the upstream equals a
// configured or requested one under the field's declaration: its stand-ins
// for null read as null, a lower-cased field compares by case, numbers
// compare by value. fd may be nil.
func ValueEqual(got, want any, fd *FieldConfig) bool {
	if fd != nil && len(fd.NullValues) > 0 {
		if want != nil && IsNull(want, fd) {
			want = nil
		}
		if got != nil && IsNull(got, fd) {
			got = nil
		}
	}
	if want == nil {
		return got == nil
	}
	switch w := want.(type) {
	case string:
		g, ok := got.(string)
		if !ok {
			return false
		}
		if fd != nil && fd.Normalize == "lower" {
			return strings.EqualFold(g, w)
		}
		return g == w
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	case json.Number, float64:
		gf, ok1 := jsonvalue.Float(got)
		wf, ok2 := jsonvalue.Float(w)
		return ok1 && ok2 && gf == wf
	}
	return false
}

// DisplayPath is how a configured path into an answer is shown: "." for
// the body itself.
func DisplayPath(p string) string {
	if p == "" {
		return "."
	}
	return p
}
