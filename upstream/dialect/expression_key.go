package dialect

import (
	"encoding/json"
	"maps"
	"math/big"
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
func (r *List) keyCondition() *config.KeyConditionConfig {
	if r.Expression == nil || !r.Expression.Bound() {
		return nil
	}
	return r.Expression.KeyCondition
}

// keyClause renders a key filter's value as a clause of the key
// condition: the attribute's name bound as #fN and the value as :fNv0 (N
// the filter's place among the resource's filters, as boundClause
// numbers them), typed as the items' encoding writes it. A key condition
// takes one value of a string or a number: a list, a null or another
// type is applied by airlock alone.
func (r *List) keyClause(name string, fc *config.FilterConfig, fd *config.FieldConfig, v any) (string, bindings, string) {
	b := bindings{names: map[string]any{}, values: map[string]any{}}
	op, ok := config.KeyOp(fc.Op)
	if !ok {
		return "", b, "a key condition has no form for this operator: only airlock applies it"
	}
	switch x := v.(type) {
	case string:
		if x == "" {
			// DynamoDB refuses an empty string as a key's value.
			return "", b, "a key is never empty: only airlock can match an empty value"
		}
	case json.Number:
	case nil:
		return "", b, "a key attribute is never null: only airlock can match null"
	case []any:
		return "", b, "a key condition takes one value: only airlock can match a list"
	default:
		return "", b, "a key is a string or a number: only airlock can match this value"
	}
	n := strconv.Itoa(slices.Index(slices.Sorted(maps.Keys(r.Config.Filters)), name))
	b.names["#f"+n] = fc.Expression
	b.values[":f"+n+"v0"] = ToAttributeValue(v, fd)
	return "#f" + n + " " + op + " :f" + n + "v0", b, ""
}

// placeKeyCondition sends the key condition of the key filters forms
// sent: their clauses joined by AND (DynamoDB's grammar: the partition
// key's equality, then at most one condition on the sort key; a gte and
// an lte filter on it together are its BETWEEN), and their bindings
// beside the FilterExpression's. It reports whether the partition's
// clause was placed (true for a list that is not a Query); when it was
// not, nothing is placed.
func (r *List) placeKeyCondition(p *Params, forms map[string]FilterForm) bool {
	k := r.keyCondition()
	if k == nil {
		return true
	}
	partition := false
	var clauses []string
	all := bindings{names: map[string]any{}, values: map[string]any{}}
	var sorts []string
	for _, name := range slices.Sorted(maps.Keys(forms)) {
		f := forms[name]
		if !f.Sent || !f.key {
			continue
		}
		if k.KeyRole(name) == "sort" {
			sorts = append(sorts, name)
			continue
		}
		partition = true
		clauses = append(clauses, f.clause)
		maps.Copy(all.names, f.bound.names)
		maps.Copy(all.values, f.bound.values)
	}
	switch lo, hi, ok := r.betweenPair(sorts); {
	case ok:
		// #fL BETWEEN :fLv0 AND :fHv0: the upper bound's own name
		// placeholder is not bound, as DynamoDB refuses an unused one.
		name := slices.Collect(maps.Keys(forms[lo].bound.names))[0]
		low := slices.Collect(maps.Keys(forms[lo].bound.values))[0]
		high := slices.Collect(maps.Keys(forms[hi].bound.values))[0]
		clauses = append(clauses, name+" BETWEEN "+low+" AND "+high)
		maps.Copy(all.names, forms[lo].bound.names)
		maps.Copy(all.values, forms[lo].bound.values)
		maps.Copy(all.values, forms[hi].bound.values)
	case len(sorts) > 0:
		// checkKeyFilter refuses a search with two other sort
		// conditions; should one reach here, the first is sent.
		f := forms[sorts[0]]
		clauses = append(clauses, f.clause)
		maps.Copy(all.names, f.bound.names)
		maps.Copy(all.values, f.bound.values)
	}
	if !partition {
		// A Query without its partition is refused by DynamoDB, or worse
		// read as another: PageRequest sends nothing.
		return false
	}
	p.Set(k.Param, strings.Join(clauses, " AND "))
	placeBindings(p, r.Expression, all)
	return true
}

// betweenPair says whether the sort filters named are a gte and an lte
// filter (DynamoDB's BETWEEN), and which is which.
func (r *List) betweenPair(sorts []string) (lo, hi string, ok bool) {
	if len(sorts) != 2 {
		return "", "", false
	}
	a, b := sorts[0], sorts[1]
	if r.Config.Filters[a].Op == "lte" {
		a, b = b, a
	}
	return a, b, r.Config.Filters[a].Op == "gte" && r.Config.Filters[b].Op == "lte"
}

// keyForms are the forms of the key filters in filter, for a list whose
// probe sends the key condition alone (the partition is the list's scope,
// as a base expression is).
func (r *List) keyForms(filter map[string]any) map[string]FilterForm {
	out := map[string]FilterForm{}
	k := r.keyCondition()
	for name, v := range filter {
		if k.KeyRole(name) != "" {
			out[name] = r.FilterForm(name, r.Config.Filters[name], v)
		}
	}
	return out
}

// KeyPartition is the name of the filter a Query's key condition pins its
// partition with, "" for a list that is not a Query.
func (r *List) KeyPartition() string {
	if k := r.keyCondition(); k != nil {
		return k.Partition
	}
	return ""
}

// CheckListFilter refuses a typed filter (TypedFilter's) that the
// resource's list cannot be asked for: for a Query, one that does not pin
// its partition or that gives its sort key two conditions. A read by ids
// (an explicit selection) lists nothing and needs none of it.
func (r *List) CheckListFilter(filter map[string]any) []envelope.FieldError {
	return r.checkKeyFilter(filter)
}

// checkKeyFilter refuses a filter that a Query cannot be asked for: one
// that does not pin the partition key to one value the key condition
// carries (from the caller, or the resource's default_filter; the sender's
// own rule decides, so an empty string, a null stand-in or a normalized
// field's value is none), or that gives the sort key more than one
// condition.
func (r *List) checkKeyFilter(filter map[string]any) []envelope.FieldError {
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
	if !set || !r.partitionSent(v) {
		fd, _ := r.Field(r.Config.Filters[part].FieldOf(part))
		errs = append(errs, envelope.NewFieldError("filter."+part, envelope.FieldPartitionRequired, exampleFor(fd, r.Config.Filters[part])))
	}
	var sorts []string
	for _, name := range k.Sort {
		if _, ok := filter[name]; ok {
			sorts = append(sorts, name)
		}
	}
	lo, hi, between := r.betweenPair(sorts)
	switch {
	case between:
		// DynamoDB refuses a BETWEEN whose lower bound is above its
		// upper one: the range is refused here, named by its upper
		// bound, before anything is sent.
		if keyAbove(filter[lo], filter[hi]) {
			fc := r.Config.Filters[hi]
			sfd, _ := r.Field(fc.FieldOf(hi))
			errs = append(errs, envelope.NewFieldError("filter."+hi, envelope.FieldOutOfRange, exampleFor(sfd, fc)))
		}
	case len(sorts) > 1:
		// DynamoDB takes one condition on the sort key (or a gte and an
		// lte together, its BETWEEN); the second is named.
		fc := r.Config.Filters[sorts[1]]
		sfd, _ := r.Field(fc.FieldOf(sorts[1]))
		errs = append(errs, envelope.NewFieldError("filter."+sorts[1], envelope.FieldOneSortCondition, exampleFor(sfd, fc)))
	}
	return errs
}

// partitionSent reports whether v, the partition filter's value, is
// sent as the key condition's partition clause: FilterForm's answer, the
// one PageRequest acts on, so the check and the sender never disagree.
func (r *List) partitionSent(v any) bool {
	k := r.keyCondition()
	f := r.FilterForm(k.Partition, r.Config.Filters[k.Partition], v)
	return f.Sent && f.key
}

// keyAbove reports whether key value a orders after b as DynamoDB orders
// keys: strings by their UTF-8 bytes, numbers exactly. Values of other
// types, or of two types, report false (TypedFilter refuses them).
func keyAbove(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x > y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, ok1 := new(big.Rat).SetString(string(x))
		rb, ok2 := new(big.Rat).SetString(string(y))
		return ok1 && ok2 && ra.Cmp(rb) > 0
	}
	return false
}
