package config

import (
	"encoding/json"
	"fmt"
	"strconv"
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
