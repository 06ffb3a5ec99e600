package config

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// AliasConfig is a temporary second name of a field, accepted until Until
// (YYYY-MM-DD); after that `airlock check` warns.
type AliasConfig struct {
	Name  string `yaml:"name"`
	Until string `yaml:"until"`
}

// InvariantConfig is a cross-field rule: when If holds, Then must.
type InvariantConfig struct {
	If          RuleConfig `yaml:"if"`
	Then        RuleConfig `yaml:"then"`
	Description string     `yaml:"description"`
}

// ContractConfig points at an external contract for a resource's items: a
// JSON Schema file, or a component of an OpenAPI document.
type ContractConfig struct {
	Schema  string      `yaml:"schema"`
	OpenAPI *OpenAPIRef `yaml:"openapi"`
}

// OpenAPIRef names a schema component in an OpenAPI document (YAML or
// JSON; 3.0's nullable is understood).
type OpenAPIRef struct {
	File      string `yaml:"file"`
	Component string `yaml:"component"`
}

// ResponseContract is what a write's answer must look like: Item is the
// path to the written object in the body ("" for the body itself).
type ResponseContract struct {
	Item       string                  `yaml:"item"`
	Fields     map[string]*FieldConfig `yaml:"fields"`
	Invariants []InvariantConfig       `yaml:"invariants"`
}

// expiredAliases lists aliases whose until date has passed.
func (c *Config) expiredAliases(now time.Time) []string {
	var out []string
	for _, rn := range slices.Sorted(maps.Keys(c.Resources)) {
		r := c.Resources[rn]
		if r == nil {
			continue
		}
		for _, fn := range slices.Sorted(maps.Keys(r.Fields)) {
			f := r.Fields[fn]
			if f == nil {
				continue
			}
			for _, a := range f.Aliases {
				if t, err := time.Parse("2006-01-02", a.Until); err == nil && now.After(t) {
					out = append(out, fmt.Sprintf("resource %s: field %s still accepts alias %s, which was to end on %s", rn, fn, a.Name, a.Until))
				}
			}
		}
	}
	return out
}
