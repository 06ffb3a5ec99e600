package config

import "github.com/airlock-mcp/airlock/config/strictyaml"

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
		r.Value = strictyaml.JSONValue(r.Value)
		out[i] = r
	}
	return out
}

// NormalizeValue exposes normalizeYAMLValue for configuration values read
// elsewhere (default filters).
func NormalizeValue(v any) any { return strictyaml.JSONValue(v) }
