package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// KeyConditionConfig turns a DynamoDB list into a Query: the filters it
// names form the KeyConditionExpression, the others the FilterExpression.
// A Query reads one partition, so every search must pin Partition to one
// value (a search that does not is refused, naming the filter); a
// resource that must also answer searches across partitions is declared
// twice, once over Scan. Sort names the filters on the sort key, of which
// a search gives at most one (DynamoDB takes one condition on it), or a
// gte and an lte filter together (sent as its BETWEEN). Names
// and values are bound as the FilterExpression's are, in the same
// members; a key attribute never appears in the FilterExpression (DynamoDB
// refuses it there).
type KeyConditionConfig struct {
	// Param is the body member of the key condition
	// (KeyConditionExpression, the default).
	Param string `yaml:"param"`
	// Partition is the filter on the partition key: op eq, one value.
	Partition string `yaml:"partition"`
	// Sort lists the filters on the sort key: op eq, gt, gte, lt or lte.
	Sort []string `yaml:"sort"`
}

// DefaultKeyConditionParam is DynamoDB's member for a Query's key
// condition.
const DefaultKeyConditionParam = "KeyConditionExpression"

// KeyOp is a filter operator as a key condition writes it (= > >= < <=);
// ok is false for an operator a key condition does not take.
func KeyOp(op string) (string, bool) {
	switch op {
	case "", "eq":
		return "=", true
	case "gt":
		return ">", true
	case "gte":
		return ">=", true
	case "lt":
		return "<", true
	case "lte":
		return "<=", true
	}
	return "", false
}

// resolveKeyCondition is e's key condition with its defaults (a copy: the
// configuration's own stays as written).
func resolveKeyCondition(e *ExpressionConfig) *KeyConditionConfig {
	if e.KeyCondition == nil {
		return nil
	}
	k := *e.KeyCondition
	if k.Param == "" {
		k.Param = DefaultKeyConditionParam
	}
	k.Sort = slices.Clone(k.Sort)
	return &k
}

// KeyRole says which part of the key condition the filter name forms:
// "partition", "sort", or "" for none.
func (k *KeyConditionConfig) KeyRole(name string) string {
	switch {
	case k == nil:
		return ""
	case name == k.Partition:
		return "partition"
	case slices.Contains(k.Sort, name):
		return "sort"
	}
	return ""
}

// validateKeyCondition checks a key condition: a partition filter and
// sort filters that exist, each sent by its attribute's name with an
// operator a key condition takes, on a key a DynamoDB key can be (a
// string or a number, neither normalized nor with null stand-ins), the
// sort filters on one attribute; and no other
// filter on a key attribute (DynamoDB refuses one in a FilterExpression).
func validateKeyCondition(l *errList, r *ResourceConfig, x *ExpressionConfig, res func(k ...string) []string) {
	k := x.KeyCondition
	if k == nil {
		return
	}
	at := func(ks ...string) []string {
		return res(append([]string{"list", "expression", "key_condition"}, ks...)...)
	}
	if x.Language != LanguageDynamoDB {
		l.add("a key condition is DynamoDB's: language: dynamodb", at()...)
		return
	}
	if k.Param == x.Param || k.Param == x.Names || k.Param == x.Values {
		l.add("the key condition is a member of its own, beside the filter expression, its names and its values", at("param")...)
	}
	if k.Partition == "" {
		l.add("required: the filter that pins the partition key (op eq, one value in every search)", at("partition")...)
	}
	fieldSeen := map[string]bool{}
	keyFilter := func(name string, path []string, ops ...string) string {
		f, ok := r.Filters[name]
		if !ok || f == nil {
			l.add(fmt.Sprintf("no filter named %q", name), path...)
			return ""
		}
		if f.Expression == "" || f.Search {
			l.add("a key filter names its attribute (filters.NAME.expression) and is no search", path...)
			return ""
		}
		if !slices.Contains(ops, f.Op) {
			l.add(fmt.Sprintf("a key condition takes op %s here, not %q", strings.Join(ops[1:], ", "), f.Op), path...)
		}
		if fd := r.Fields[f.FieldOf(name)]; fd != nil {
			// A key clause sends the caller's value as written: a
			// normalized field's or a null stand-in's would never be
			// sent, and a Query without its partition is refused.
			fname := f.FieldOf(name)
			if fd.Normalize != "" && !fieldSeen[fname] {
				l.add("a key filter's field is compared as DynamoDB stores it: no normalize on a key-condition field", res("fields", fname, "normalize")...)
			}
			if len(fd.NullValues) > 0 && !fieldSeen[fname] {
				l.add("a key attribute is never null: no null_values on a key-condition field", res("fields", fname, "null_values")...)
			}
			fieldSeen[fname] = true
			switch fd.Type {
			case "string", "integer", "number":
			default:
				// A timestamp's instants are not ordered as DynamoDB
				// orders its text: the condition would narrow otherwise
				// than airlock's check.
				l.add("a key is a string or a number: the filter's field is of type string, integer or number", path...)
			}
		}
		return f.Expression
	}
	var partAttr string
	if k.Partition != "" {
		partAttr = keyFilter(k.Partition, at("partition"), "", "eq")
	}
	var sortAttr string
	seen := map[string]bool{}
	for i, name := range k.Sort {
		path := at("sort", fmt.Sprint(i))
		if seen[name] || name == k.Partition {
			l.add("a filter is named once in the key condition", path...)
			continue
		}
		seen[name] = true
		a := keyFilter(name, path, "", "eq", "gt", "gte", "lt", "lte")
		switch {
		case a == "":
		case a == partAttr:
			l.add("the sort key is another attribute than the partition key", path...)
		case sortAttr == "":
			sortAttr = a
		case a != sortAttr:
			l.add(fmt.Sprintf("every sort filter is on the one sort key %q", sortAttr), path...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Filters)) {
		f := r.Filters[name]
		if f == nil || f.Expression == "" || k.KeyRole(name) != "" {
			continue
		}
		if f.Expression == partAttr || f.Expression == sortAttr {
			l.add("DynamoDB refuses a key attribute in a FilterExpression: name this filter in list.expression.key_condition, or leave out its expression (airlock then applies it alone)",
				res("filters", name, "expression")...)
		}
	}
}
