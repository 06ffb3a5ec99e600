package upstream

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// RuleConfig is a comparison on a field: a precondition or an exclusion.
type RuleConfig struct {
	Field  string `yaml:"field" json:"field"`
	Op     string `yaml:"op" json:"op"`
	Value  any    `yaml:"value" json:"value"`
	Reason string `yaml:"reason" json:"reason,omitempty"`
}

// Rule operators.
var ruleOps = map[string]bool{"eq": true, "ne": true, "in": true, "not_in": true, "contains": true, "not_contains": true, "gt": true, "gte": true, "lt": true, "lte": true}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func normalizeRules(rs []RuleConfig) []RuleConfig {
	out := make([]RuleConfig, len(rs))
	for i, r := range rs {
		r.Value = normalizeYAMLValue(r.Value)
		out[i] = r
	}
	return out
}

// normalizeYAMLValue turns YAML-decoded values into JSON-decoded forms:
// numbers as json.Number, maps keyed by string.
func normalizeYAMLValue(v any) any {
	switch x := v.(type) {
	case int:
		return json.Number(strconv.Itoa(x))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case uint64:
		return json.Number(strconv.FormatUint(x, 10))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeYAMLValue(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalizeYAMLValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeYAMLValue(e)
		}
		return out
	}
	return v
}

// NormalizeValue exposes normalizeYAMLValue for configuration values read
// elsewhere (default filters).
func NormalizeValue(v any) any { return normalizeYAMLValue(v) }

// EvalRule evaluates a rule on an item. ok is false when the field is
// missing or has a type the operator cannot compare: the record is then
// ambiguous, never silently in or out.
func (r *Resource) EvalRule(doc map[string]any, rule RuleConfig) (match, ok bool) {
	got, present := jsonvalue.Get(doc, r.FieldPath(rule.Field))
	if !present {
		return false, false
	}
	fd, _ := r.Field(rule.Field)
	switch rule.Op {
	case "eq":
		return scalarEqual(got, rule.Value, fd), comparable(got, rule.Value)
	case "ne":
		return !scalarEqual(got, rule.Value, fd), comparable(got, rule.Value)
	case "in", "not_in":
		list, isList := rule.Value.([]any)
		if !isList {
			list = []any{rule.Value}
		}
		in := false
		for _, v := range list {
			if scalarEqual(got, v, fd) {
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
			if scalarEqual(e, rule.Value, fd) {
				has = true
			}
		}
		if rule.Op == "not_contains" {
			has = !has
		}
		return has, true
	case "gt", "gte", "lt", "lte":
		g, ok1 := toFloat(got)
		w, ok2 := toFloat(rule.Value)
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
		_, ok := toFloat(got)
		return ok
	}
	return false
}
