package dialect

import (
	"encoding/json"
	"math/big"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// A Mango selector is built as JSON: every value is bound in place as a
// JSON value of the field's type, never written into text, and a field is
// named as Mango reads a member's name (a dot in it escaped, since Mango
// reads an unescaped dot as a step into a sub-object).
//
// Each clause must select at least what airlock's own check selects, or
// an item the upstream left out could never be re-checked: a null filter
// value is Mango's null (present and null) or an absent member or a
// declared stand-in for null, since airlock reads all of them as null;
// Mango's bare null matches only the first.

// mangoClause is one filter's value as a clause of the selector, or why it
// is not sent (the filter is then airlock's alone).
func (r *List) mangoClause(fc *config.FilterConfig, fd *config.FieldConfig, v any) (map[string]any, string) {
	field, why := mangoField(fc.Expression)
	if why != "" {
		return nil, why
	}
	contains := fc.Op == "contains"
	switch val := v.(type) {
	case nil:
		if contains || config.Comparison(fc.Op) {
			return nil, "a comparison or contains with null has no Mango form: only airlock can match it"
		}
		return mangoNull(field, fd), ""
	case []any:
		if contains || config.Comparison(fc.Op) {
			return nil, "Mango has no form for a list of values here"
		}
		var in []any
		null := false
		for _, e := range val {
			if e == nil || config.IsNull(e, fd) {
				null = true
				continue
			}
			if why := mangoValue(e); why != "" {
				return nil, why
			}
			in = append(in, e)
		}
		clause := map[string]any{field: map[string]any{"$in": in}}
		if !null {
			return clause, ""
		}
		if len(in) == 0 {
			return mangoNull(field, fd), ""
		}
		return map[string]any{"$or": []any{clause, mangoNull(field, fd)}}, ""
	default:
		if why := mangoValue(val); why != "" {
			return nil, why
		}
		op := map[string]string{"": "$eq", "eq": "$eq", "gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte"}
		switch {
		case contains:
			return map[string]any{field: map[string]any{"$elemMatch": map[string]any{"$eq": val}}}, ""
		case op[fc.Op] != "":
			return map[string]any{field: map[string]any{op[fc.Op]: val}}, ""
		}
		return nil, "Mango has no form for this operator: only airlock applies it"
	}
}

// mangoNull selects every document whose member airlock reads as null:
// absent, null, or one of the field's stand-ins for null.
func mangoNull(field string, fd *config.FieldConfig) map[string]any {
	or := []any{
		map[string]any{field: map[string]any{"$exists": false}},
		map[string]any{field: map[string]any{"$eq": nil}},
	}
	if fd != nil {
		for _, nv := range fd.NullValues {
			or = append(or, map[string]any{field: map[string]any{"$eq": config.NormalizeValue(nv)}})
		}
	}
	return map[string]any{"$or": or}
}

// mangoField is a member's name as Mango reads it: a dot escaped with a
// backslash. A name Mango would read otherwise (an operator's $, a
// backslash of its own, which escapes differ on) is not sent.
func mangoField(name string) (string, string) {
	switch {
	case name == "":
		return "", "no expression name"
	case strings.HasPrefix(name, "$"):
		return "", "the expression name starts with $, which Mango reads as an operator"
	case strings.Contains(name, `\`):
		return "", "the expression name holds a backslash, which Mango reads as an escape"
	}
	return strings.ReplaceAll(name, ".", `\.`), ""
}

// mangoValue says why a value cannot be bound in a selector ("" when it
// can): CouchDB and PouchDB hold numbers as doubles, so an integer beyond
// 2^53 would be compared as another number.
func mangoValue(v any) string {
	switch x := v.(type) {
	case string, bool, float64:
		return ""
	case json.Number:
		n, isInt := new(big.Int).SetString(string(x), 10)
		if isInt && new(big.Int).Abs(n).Cmp(maxExactDouble) > 0 {
			return "the integer is beyond 2^53, which Mango compares as another number: only airlock can match it"
		}
		return ""
	case int, int64:
		return mangoValue(json.Number(jsonvalue.String(x)))
	}
	return "a value of this type is not bound in a Mango selector"
}

// maxExactDouble is 2^53: every integer up to it is exact as a double.
var maxExactDouble = new(big.Int).Lsh(big.NewInt(1), 53)

// mangoSelector joins the clauses with the selector the list's body holds
// at param (its own scope, kept): one clause alone, several under $and.
func mangoSelector(base any, clauses []map[string]any) any {
	var all []any
	if m, ok := base.(map[string]any); ok && len(m) > 0 {
		all = append(all, m)
	}
	for _, c := range clauses {
		all = append(all, c)
	}
	switch len(all) {
	case 0:
		return map[string]any{}
	case 1:
		return all[0]
	}
	return map[string]any{"$and": all}
}
