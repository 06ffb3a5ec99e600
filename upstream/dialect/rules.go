package dialect

import (
	"encoding/json"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// EvalRule evaluates a rule on an item. ok is false when the field is
// missing or has a type the operator cannot compare: the record is then
// ambiguous, never silently in or out.
func (r *List) EvalRule(doc map[string]any, rule config.RuleConfig) (match, ok bool) {
	got, present := jsonvalue.Get(doc, r.FieldPath(rule.Field))
	if !present {
		return false, false
	}
	fd, _ := r.Field(rule.Field)
	rule.Value = typedRuleValue(rule, fd)
	switch rule.Op {
	case "eq":
		return config.ValueEqual(got, rule.Value, fd), comparable(got, rule.Value)
	case "ne":
		return !config.ValueEqual(got, rule.Value, fd), comparable(got, rule.Value)
	case "in", "not_in":
		list, isList := rule.Value.([]any)
		if !isList {
			list = []any{rule.Value}
		}
		in := false
		for _, v := range list {
			if config.ValueEqual(got, v, fd) {
				in = true
			}
		}
		if rule.Op == "not_in" {
			in = !in
		}
		return in, got == nil || isScalar(got)
	case "contains", "not_contains":
		arr, isArr := got.([]any)
		if !isArr {
			return false, false
		}
		has := false
		for _, e := range arr {
			if config.EqualInType(e, rule.Value, fd) {
				has = true
			}
		}
		if rule.Op == "not_contains" {
			has = !has
		}
		return has, true
	case "gt", "gte", "lt", "lte":
		g, ok1 := jsonvalue.Float(got)
		w, ok2 := jsonvalue.Float(rule.Value)
		if !ok1 || !ok2 {
			gs, isS1 := got.(string)
			ws, isS2 := rule.Value.(string)
			if !isS1 || !isS2 {
				return false, false
			}
			c := strings.Compare(gs, ws)
			return cmpOp(rule.Op, float64(c), 0), true
		}
		return cmpOp(rule.Op, g, w), true
	}
	return false, false
}

// typedRuleValue is a rule's value in the type the field holds (its
// element type for contains), as filter values are: 4 and "4" are the
// same integer. A value that does not convert is left as it is, and
// compares as the ambiguity it is.
func typedRuleValue(rule config.RuleConfig, fd *config.FieldConfig) any {
	if fd == nil {
		return rule.Value
	}
	typ := fd.Type
	if rule.Op == "contains" || rule.Op == "not_contains" {
		typ = fd.Elements
	}
	if !config.IsScalarType(typ) {
		return rule.Value
	}
	convert := func(v any) any {
		if c, ok := config.ConvertScalar(v, typ); ok && v != nil {
			return c
		}
		return v
	}
	if list, ok := rule.Value.([]any); ok {
		out := make([]any, len(list))
		for i, v := range list {
			out[i] = convert(v)
		}
		return out
	}
	return convert(rule.Value)
}

func cmpOp(op string, a, b float64) bool {
	switch op {
	case "gt":
		return a > b
	case "gte":
		return a >= b
	case "lt":
		return a < b
	}
	return a <= b
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, bool, json.Number, float64:
		return true
	}
	return false
}

// comparable reports whether an equality comparison is meaningful: the
// item's value is null or of the same kind as the rule's value.
func comparable(got, want any) bool {
	if got == nil || want == nil {
		return true
	}
	switch want.(type) {
	case string:
		_, ok := got.(string)
		return ok
	case bool:
		_, ok := got.(bool)
		return ok
	case json.Number, float64:
		_, ok := jsonvalue.Float(got)
		return ok
	}
	return false
}
