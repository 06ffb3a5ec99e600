package upstream

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
)

// A DynamoDB Query's key condition (list.expression.key_condition): the
// filters it names are sent in KeyConditionExpression, never in the
// FilterExpression (DynamoDB refuses a key attribute there), with their
// names and values bound in the same members as the FilterExpression's.
// Like every filter sent upstream, airlock re-checks them on every item.

// keyCondition is the list's key condition, nil for a list that is not a
// Query.
func (r *Resource) keyCondition() *config.KeyConditionConfig {
	if r.expression == nil || !r.expression.Bound() {
		return nil
	}
	return r.expression.KeyCondition
}

// keyClause renders a key filter's value as a clause of the key
// condition: the attribute's name bound as #fN and the value as :fNv0 (N
// the filter's place among the resource's filters, as boundClause
// numbers them), typed as the items' encoding writes it. A key condition
// takes one value of a string or a number: a list, a null or another
// type is applied by airlock alone.
func (r *Resource) keyClause(name string, fc *config.FilterConfig, fd *config.FieldConfig, v any) (string, bindings, string) {
	b := bindings{names: map[string]any{}, values: map[string]any{}}
	op, ok := config.KeyOps[fc.Op]
	if !ok {
		return "", b, "a key condition has no form for this operator: only airlock applies it"
	}
	switch v.(type) {
	case string, json.Number:
	case nil:
		return "", b, "a key attribute is never null: only airlock can match null"
	case []any:
		return "", b, "a key condition takes one value: only airlock can match a list"
	default:
		return "", b, "a key is a string or a number: only airlock can match this value"
	}
	n := strconv.Itoa(slices.Index(slices.Sorted(maps.Keys(r.Config.Filters)), name))
	b.names["#f"+n] = fc.Expression
	b.values[":f"+n+"v0"] = toAttributeValue(v, fd)
	return "#f" + n + " " + op + " :f" + n + "v0", b, ""
}

// placeKeyCondition sends the key condition of the key filters forms
// sent: their clauses joined by AND (DynamoDB's grammar: the partition
// key's equality, then at most one condition on the sort key), and their
// bindings beside the FilterExpression's.
func (r *Resource) placeKeyCondition(p *listParams, forms map[string]filterForm) {
	k := r.keyCondition()
	if k == nil {
		return
	}
	var clauses []string
	all := bindings{names: map[string]any{}, values: map[string]any{}}
	// The partition key's clause first, then the sort key's.
	names := slices.Sorted(maps.Keys(forms))
	slices.SortStableFunc(names, func(a, b string) int {
		return strings.Compare(k.KeyRole(a), k.KeyRole(b))
	})
	for _, name := range names {
		if f := forms[name]; f.sent && f.key {
			clauses = append(clauses, f.clause)
			maps.Copy(all.names, f.bound.names)
			maps.Copy(all.values, f.bound.values)
		}
	}
	if len(clauses) == 0 {
		return
	}
	p.set(k.Param, strings.Join(clauses, " AND "))
	placeBindings(p, r.expression, all)
}

// keyForms are the forms of the key filters in filter, for a list whose
// probe sends the key condition alone (the partition is the list's scope,
// as a base expression is).
func (r *Resource) keyForms(filter map[string]any) map[string]filterForm {
	out := map[string]filterForm{}
	k := r.keyCondition()
	for name, v := range filter {
		if k.KeyRole(name) != "" {
			out[name] = r.filterForm(name, r.Config.Filters[name], v)
		}
	}
	return out
}

// checkKeyFilter refuses a filter that a Query cannot be asked for: one
// that does not pin the partition key to one value (from the caller, or
// the resource's default_filter), or that gives the sort key more than
// one condition.
func (r *Resource) checkKeyFilter(filter map[string]any) []envelope.FieldError {
	k := r.keyCondition()
	if k == nil {
		return nil
	}
	var errs []envelope.FieldError
	part := k.Partition
	v, set := filter[part]
	if !set {
		v, set = r.Config.DefaultFilter[part]
		v = config.NormalizeValue(v)
	}
	if arr, ok := v.([]any); ok && len(arr) == 1 {
		v = arr[0]
	}
	_, many := v.([]any)
	if !set || v == nil || many {
		fd, _ := r.Field(r.Config.Filters[part].FieldOf(part))
		errs = append(errs, envelope.NewFieldError("filter."+part, envelope.FieldPartitionRequired, exampleFor(fd, r.Config.Filters[part])))
	}
	var sorts []string
	for _, name := range k.Sort {
		if _, ok := filter[name]; ok {
			sorts = append(sorts, name)
		}
	}
	if len(sorts) > 1 {
		// DynamoDB takes one condition on the sort key; the second
		// is named.
		fc := r.Config.Filters[sorts[1]]
		sfd, _ := r.Field(fc.FieldOf(sorts[1]))
		errs = append(errs, envelope.NewFieldError("filter."+sorts[1], envelope.FieldOneSortCondition, exampleFor(sfd, fc)))
	}
	return errs
}
