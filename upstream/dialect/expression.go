package dialect

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// expressionClause renders one filter's value as a clause of the list's
// filter expression, or says why it cannot be sent there (the filter is
// then applied by airlock alone). v is the value as filterValue gives it:
// a list of one is one value, a null stand-in null.
func (r *List) expressionClause(fc *config.FilterConfig, fd *config.FieldConfig, v any) (string, string) {
	x := r.Expression
	if x == nil {
		return "", "the list declares no expression"
	}
	if x.Bound() {
		return "", "a bound expression is built by boundClause"
	}
	field := fc.Expression
	contains := fc.Op == "contains"
	render := func(tpl string, pairs ...string) string {
		return strings.NewReplacer(append([]string{"{{field}}", field}, pairs...)...).Replace(tpl)
	}
	switch val := v.(type) {
	case nil:
		if contains || config.Comparison(fc.Op) || x.Null == "" {
			return "", "the expression language has no form for null: only airlock can match it"
		}
		return render(x.Null), ""
	case []any:
		if contains || config.Comparison(fc.Op) || x.In == "" {
			return "", "the expression language has no form for a list of values here"
		}
		lits := make([]string, len(val))
		for i, e := range val {
			if e == nil || config.IsNull(e, fd) {
				return "", "null among the values: only airlock can match it"
			}
			lit, why := literal(x, e, fieldType(fd, contains))
			if why != "" {
				return "", why
			}
			lits[i] = lit
		}
		return render(x.In, "{{values}}", strings.Join(lits, x.ListSeparator)), ""
	default:
		tpl := x.Template(fc.Op)
		if tpl == "" {
			return "", "the expression language has no form for this operator: only airlock applies it"
		}
		lit, why := literal(x, val, fieldType(fd, contains))
		if why != "" {
			return "", why
		}
		return render(tpl, "{{value}}", lit), ""
	}
}

// fieldType is the type a filter value is written in: the field's, or its
// elements' for contains.
func fieldType(fd *config.FieldConfig, contains bool) string {
	if fd == nil {
		return ""
	}
	if contains {
		return fd.Elements
	}
	return fd.Type
}

// odataTimestamp is a DateTimeOffset literal as OData writes it bare.
var odataTimestamp = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,12})?)?(Z|[+-][0-9]{2}:[0-9]{2})$`)

// literal writes one value as a literal of the expression's language: bare
// when the language writes its type bare (and it is the plain literal it
// looks like), else quoted with every escape applied in one pass. A value
// holding a control character is never sent: languages disagree on
// whether and how one may appear in a literal.
func literal(x *config.ExpressionConfig, v any, typ string) (string, string) {
	bare := func(kind string) bool { return slices.Contains(x.Bare, kind) }
	var s string
	switch val := v.(type) {
	case bool:
		if bare("boolean") {
			if val {
				return "true", ""
			}
			return "false", ""
		}
		s = "false"
		if val {
			s = "true"
		}
	case json.Number:
		if bare("number") && plainNumber.MatchString(string(val)) {
			return string(val), ""
		}
		s = string(val)
	case float64:
		s = strconv.FormatFloat(val, 'g', -1, 64)
		if bare("number") && plainNumber.MatchString(s) {
			return s, ""
		}
	case string:
		s = val
		if typ == "timestamp" && x.Language == config.LanguageOData && odataTimestamp.MatchString(val) {
			return val, ""
		}
	default:
		return "", "a value of this type has no literal in the expression language"
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return "", "a value holds a control character, which the expression language cannot carry as one literal"
		}
	}
	return x.Quote + escaper(x).Replace(s) + x.Quote, ""
}

// plainNumber is a number literal every expression language reads as one.
var plainNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// escaper applies an expression's escapes in one pass (an escape's own
// characters are never escaped again).
func escaper(x *config.ExpressionConfig) *strings.Replacer {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(x.Escape)) {
		pairs = append(pairs, k, x.Escape[k])
	}
	return strings.NewReplacer(pairs...)
}

// joinExpression joins the clauses of the filters sent in the expression
// with the list's base, each within parentheses when there are several,
// and appends the suffix.
func joinExpression(x *config.ExpressionConfig, clauses []string) string {
	parts := clauses
	if x.Base != "" {
		parts = append([]string{x.Base}, clauses...)
	}
	out := ""
	switch len(parts) {
	case 0:
	case 1:
		out = parts[0]
	default:
		wrapped := make([]string, len(parts))
		for i, p := range parts {
			wrapped[i] = "(" + p + ")"
		}
		out = strings.Join(wrapped, x.Join)
	}
	return out + x.Suffix
}

// bindings are the names and values a bound expression's clauses refer
// to (DynamoDB's ExpressionAttributeNames and ExpressionAttributeValues).
type bindings struct {
	names  map[string]any
	values map[string]any
}

// maxBoundValues is the most values one clause binds: DynamoDB's IN takes
// at most 100 operands.
const maxBoundValues = 100

// boundClause renders one filter's value as a clause of a bound
// expression: the attribute's name is bound as #fN and each value as
// :fNvM, N the filter's place among the resource's filters (so that the
// clauses of several filters never share a placeholder). The name and the
// values travel only in the bindings, each value typed as the items'
// encoding writes it: nothing the caller or the configuration gives is
// written into the expression's text.
func (r *List) boundClause(name string, fc *config.FilterConfig, fd *config.FieldConfig, v any) (string, bindings, string) {
	x := r.Expression
	n := slices.Index(slices.Sorted(maps.Keys(r.Config.Filters)), name)
	contains := fc.Op == "contains"
	b := bindings{names: map[string]any{}, values: map[string]any{}}
	field := "#f" + strconv.Itoa(n)
	b.names[field] = fc.Expression
	bind := func(val any) string {
		ph := ":f" + strconv.Itoa(n) + "v" + strconv.Itoa(len(b.values))
		if contains && fd != nil {
			b.values[ph] = ToAttributeValue(val, &config.FieldConfig{Type: fd.Elements})
		} else {
			b.values[ph] = ToAttributeValue(val, fd)
		}
		return ph
	}
	render := func(tpl string, pairs ...string) string {
		return strings.NewReplacer(append([]string{"{{field}}", field}, pairs...)...).Replace(tpl)
	}
	scalar := func(val any) bool {
		switch val.(type) {
		case string, json.Number, bool, float64:
			return true
		}
		return false
	}
	switch val := v.(type) {
	case nil:
		if contains || config.Comparison(fc.Op) || x.Null == "" {
			return "", b, "the expression language has no form for null: only airlock can match it"
		}
		tpl := x.Null
		if strings.Contains(tpl, "{{null_type}}") {
			ph := ":f" + strconv.Itoa(n) + "t"
			b.values[ph] = map[string]any{"S": "NULL"}
			tpl = strings.ReplaceAll(tpl, "{{null_type}}", ph)
		}
		return render(tpl), b, ""
	case []any:
		if contains || config.Comparison(fc.Op) || x.In == "" {
			return "", b, "the expression language has no form for a list of values here"
		}
		if len(val) > maxBoundValues {
			return "", b, "more values than one expression binds: only airlock can match them"
		}
		phs := make([]string, len(val))
		for i, e := range val {
			if e == nil || config.IsNull(e, fd) {
				return "", b, "null among the values: only airlock can match it"
			}
			if !scalar(e) {
				return "", b, "a value of this type has no form in the expression language"
			}
			phs[i] = bind(e)
		}
		return render(x.In, "{{values}}", strings.Join(phs, x.ListSeparator)), b, ""
	default:
		tpl := x.Template(fc.Op)
		if tpl == "" {
			return "", b, "the expression language has no form for this operator: only airlock applies it"
		}
		if !scalar(val) {
			return "", b, "a value of this type has no form in the expression language"
		}
		return render(tpl, "{{value}}", bind(val)), b, ""
	}
}

// placeBindings puts a bound expression's names and values into the
// list's body, beside those list.body declares for its base.
func placeBindings(p *Params, x *config.ExpressionConfig, all bindings) {
	for path, add := range map[string]map[string]any{x.Names: all.names, x.Values: all.values} {
		if len(add) == 0 {
			continue
		}
		have, _ := jsonvalue.Get(p.Body, path)
		m, _ := have.(map[string]any)
		out := make(map[string]any, len(m)+len(add))
		maps.Copy(out, m)
		maps.Copy(out, add)
		jsonvalue.Put(p.Body, path, out)
	}
}
