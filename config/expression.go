package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// ExpressionConfig is a list's filter expression: one parameter (OData's
// $filter, Jira's jql, Lucene's q) whose value is an expression in the
// API's own language, built from every filter that declares an
// expression name. Language odata, jql or lucene fills in the templates
// and quoting rules of that language; any key set here overrides it, and
// without a language every rule is declared here.
//
// A value is written as a literal of the language, never spliced raw: a
// string between Quote characters with Escape's replacements applied in
// one pass; a number or boolean bare only when Bare lists its type. A
// filter whose operator has no template, or whose value the language
// cannot carry as one literal (a control character, null among a list), is
// applied by airlock alone.
type ExpressionConfig struct {
	// Param is the query parameter (or, for a POST list, the body's
	// dotted path) that carries the expression.
	Param    string `yaml:"param"`
	Language string `yaml:"language"`
	// Eq, In, Null (is_null: YAML reads a bare null key as no key) and
	// Contains are the templates of each operator:
	// {{field}} is the filter's expression name, {{value}} one literal,
	// {{values}} the literals of a list joined by ListSeparator.
	Eq       string `yaml:"eq"`
	In       string `yaml:"in"`
	Null     string `yaml:"is_null"`
	Contains string `yaml:"contains"`
	// Gt, Gte, Lt and Lte are the templates of the comparisons a filter
	// declares (op: gt, …), each taking {{field}} and {{value}}.
	Gt  string `yaml:"gt"`
	Gte string `yaml:"gte"`
	Lt  string `yaml:"lt"`
	Lte string `yaml:"lte"`
	// ListSeparator joins the literals of {{values}} (default ", ").
	ListSeparator string `yaml:"list_separator"`
	// Join joins the clauses of several filters (and Base), each within
	// parentheses.
	Join string `yaml:"join"`
	// Quote delimits a string literal; Escape maps each character that
	// must be escaped inside one to what is written for it.
	Quote  string            `yaml:"quote"`
	Escape map[string]string `yaml:"escape"`
	// Bare lists the value types written without quotes: number,
	// boolean.
	Bare []string `yaml:"bare"`
	// Base is an expression always sent, joined with the filters';
	// Suffix is written after them all (JQL's ORDER BY).
	Base   string `yaml:"base"`
	Suffix string `yaml:"suffix"`
	// Names and Values, for a POST list, are the body members that bind
	// the expression's names and values (DynamoDB's
	// ExpressionAttributeNames and ExpressionAttributeValues): {{field}}
	// is then a name placeholder (#f0) and {{value}} a value placeholder
	// (:f0v0) bound to the typed value, so that no name or value is ever
	// written into the expression's text, and Quote and Escape are not
	// used. {{null_type}} (in is_null) is bound to the type name NULL.
	Names  string `yaml:"names"`
	Values string `yaml:"values"`
	// KeyCondition, for a DynamoDB Query, names the filters that form
	// its KeyConditionExpression: see KeyConditionConfig.
	KeyCondition *KeyConditionConfig `yaml:"key_condition"`
}

// Bound reports whether the expression binds its names and values
// (Names and Values) rather than writing literals.
func (x *ExpressionConfig) Bound() bool { return x != nil && x.Values != "" }

// Expression languages built in.
const (
	LanguageOData  = "odata"
	LanguageJQL    = "jql"
	LanguageLucene = "lucene"
	// LanguageDynamoDB is DynamoDB's FilterExpression, every name and
	// value bound (ExpressionAttributeNames, ExpressionAttributeValues).
	LanguageDynamoDB = "dynamodb"
	// LanguageMango is CouchDB's Mango selector: JSON, not text, so it
	// has no templates or quoting; see validateMango and the upstream's
	// mango builder.
	LanguageMango = "mango"
)

// builtinLanguages are the rules of each built-in language.
//   - OData (V4, section 5.1.1 of part 2): strings in single quotes, a
//     quote doubled; numbers, booleans and null bare; in takes a list in
//     parentheses (4.01); a collection's element by any().
//   - JQL: strings in double quotes with \" and \\; EMPTY for no value;
//     = on a multi-valued field (labels) means it holds the value.
//   - Lucene (query_string): every value a phrase in double quotes with
//     \" and \\; no null (a pure negation selects nothing inside a
//     clause), so null is applied by airlock alone.
var builtinLanguages = map[string]ExpressionConfig{
	LanguageOData: {Eq: "{{field}} eq {{value}}", In: "{{field}} in ({{values}})", Null: "{{field}} eq null", Contains: "{{field}}/any(v:v eq {{value}})",
		Gt: "{{field}} gt {{value}}", Gte: "{{field}} ge {{value}}", Lt: "{{field}} lt {{value}}", Lte: "{{field}} le {{value}}",
		ListSeparator: ",", Join: " and ", Quote: "'", Escape: map[string]string{"'": "''"}, Bare: []string{"number", "boolean"}},
	LanguageJQL: {Eq: "{{field}} = {{value}}", In: "{{field}} in ({{values}})", Null: "{{field}} is EMPTY", Contains: "{{field}} = {{value}}",
		Gt: "{{field}} > {{value}}", Gte: "{{field}} >= {{value}}", Lt: "{{field}} < {{value}}", Lte: "{{field}} <= {{value}}",
		ListSeparator: ", ", Join: " AND ", Quote: `"`, Escape: map[string]string{`"`: `\"`, `\`: `\\`}, Bare: []string{"number"}},
	LanguageLucene: {Eq: "{{field}}:{{value}}", In: "{{field}}:({{values}})", Contains: "{{field}}:{{value}}",
		Gt: "{{field}}:{{{value}} TO *}", Gte: "{{field}}:[{{value}} TO *]", Lt: "{{field}}:{* TO {{value}}}", Lte: "{{field}}:[* TO {{value}}]",
		ListSeparator: " OR ", Join: " AND ", Quote: `"`, Escape: map[string]string{`"`: `\"`, `\`: `\\`}},
	// DynamoDB: null is an absent attribute or one of type NULL, as
	// airlock's null is. Comparisons are left to airlock: DynamoDB
	// orders strings by their bytes, which is not a timestamp's order.
	LanguageDynamoDB: {Eq: "{{field}} = {{value}}", In: "{{field}} IN ({{values}})",
		Null: "attribute_not_exists({{field}}) OR attribute_type({{field}}, {{null_type}})", Contains: "contains({{field}}, {{value}})",
		ListSeparator: ", ", Join: " AND ", Names: "ExpressionAttributeNames", Values: "ExpressionAttributeValues"},
}

// ResolveExpression fills an expression's unset rules from its language.
func ResolveExpression(e *ExpressionConfig) *ExpressionConfig {
	if e == nil {
		return nil
	}
	out := *e
	b := builtinLanguages[e.Language]
	set := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	set(&out.Eq, b.Eq)
	set(&out.In, b.In)
	set(&out.Null, b.Null)
	set(&out.Contains, b.Contains)
	set(&out.Gt, b.Gt)
	set(&out.Gte, b.Gte)
	set(&out.Lt, b.Lt)
	set(&out.Lte, b.Lte)
	set(&out.ListSeparator, b.ListSeparator)
	set(&out.Join, b.Join)
	set(&out.Quote, b.Quote)
	set(&out.Names, b.Names)
	set(&out.Values, b.Values)
	if out.Escape == nil {
		out.Escape = b.Escape
	}
	if out.Bare == nil {
		out.Bare = b.Bare
	}
	out.KeyCondition = resolveKeyCondition(e)
	if out.ListSeparator == "" {
		out.ListSeparator = ", "
	}
	return &out
}

// validateExpression checks a list's expression and the filters that
// declare an expression name.
func validateExpression(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	e := r.List.Expression
	uses := false
	for _, name := range slices.Sorted(maps.Keys(r.Filters)) {
		f := r.Filters[name]
		if f == nil || f.Expression == "" {
			continue
		}
		uses = true
		p := func(k ...string) []string { return at(append([]string{"filters", name}, k...)...) }
		if e == nil {
			l.add("a filter in an expression needs list.expression (the parameter and its language)", p("expression")...)
			continue
		}
		if f.Param != "" || f.MultiParam != "" || f.NullParam != "" || f.Null != nil || f.Multi != "" {
			l.add("a filter is sent in the expression or as parameters, not both: remove param, multi, multi_param, null_param and is_null", p("expression")...)
		}
		if strings.ContainsAny(f.Expression, "\x00\n\r") {
			l.add("an expression name is one line", p("expression")...)
		}
	}
	if e == nil {
		return
	}
	p := func(k ...string) []string { return at(append([]string{"list", "expression"}, k...)...) }
	if e.Param == "" {
		l.add("required: the parameter that carries the expression ($filter, jql, q)", p("param")...)
	}
	if _, ok := r.List.Params[e.Param]; ok && e.Param != "" {
		l.add("list.params sets the expression's parameter too: write that part as expression.base", p("param")...)
	}
	if e.Language == LanguageMango {
		validateMango(l, r, e, uses, p)
		if e.KeyCondition != nil {
			l.add("a key condition is DynamoDB's: language: dynamodb", p("key_condition")...)
		}
		return
	}
	if e.Language != "" {
		if _, ok := builtinLanguages[e.Language]; !ok {
			l.add("unknown language; use odata, jql, lucene, dynamodb or mango, or leave it out and declare the templates and quoting", p("language")...)
			return
		}
	}
	if !uses {
		l.add("no filter declares an expression name (filters.NAME.expression): nothing would be sent", p()...)
	}
	x := ResolveExpression(e)
	if x.Eq == "" && x.In == "" && x.Null == "" && x.Contains == "" {
		l.add("declare at least one operator's template: eq, in, is_null or contains (or a language)", p()...)
	}
	for k, tpl := range map[string]string{"eq": x.Eq, "contains": x.Contains, "gt": x.Gt, "gte": x.Gte, "lt": x.Lt, "lte": x.Lte} {
		if tpl != "" && (!strings.Contains(tpl, "{{field}}") || !strings.Contains(tpl, "{{value}}")) {
			l.add("the template names {{field}} and {{value}}", p(k)...)
		}
	}
	if x.In != "" && (!strings.Contains(x.In, "{{field}}") || !strings.Contains(x.In, "{{values}}")) {
		l.add("the template names {{field}} and {{values}}", p("in")...)
	}
	if x.Null != "" && (!strings.Contains(x.Null, "{{field}}") || strings.Contains(x.Null, "{{value")) {
		l.add("the template names {{field}} and no value", p("is_null")...)
	}
	if x.Join == "" {
		l.add("required: what joins two clauses (\" and \")", p("join")...)
	}
	if x.Bound() || x.Names != "" {
		validateBound(l, r, x, p)
		validateKeyCondition(l, r, x, at)
		return
	}
	if e.KeyCondition != nil {
		l.add("a key condition is DynamoDB's: language: dynamodb", p("key_condition")...)
	}
	if utf8.RuneCountInString(x.Quote) != 1 {
		l.add("required: the one character that delimits a string literal", p("quote")...)
	} else if _, ok := x.Escape[x.Quote]; !ok {
		l.add(fmt.Sprintf("say how the quote %s is written inside a string (OData doubles it: {\"'\": \"''\"})", x.Quote), p("escape")...)
	}
	for _, k := range slices.Sorted(maps.Keys(x.Escape)) {
		v := x.Escape[k]
		if utf8.RuneCountInString(k) != 1 || v == "" {
			l.add("each key is one character, and its value what is written for it", p("escape", k)...)
			continue
		}
		// An escape introduced by a character (\ in \") must itself be
		// escaped, or a value ending in that character would escape the
		// closing quote.
		first, _ := utf8.DecodeRuneInString(v)
		if string(first) != k {
			if _, ok := x.Escape[string(first)]; !ok {
				l.add(fmt.Sprintf("the escape starts with %q, which must be escaped too", string(first)), p("escape", k)...)
			}
		}
	}
	for i, b := range x.Bare {
		if b != "number" && b != "boolean" {
			l.add("number or boolean", p("bare", fmt.Sprint(i))...)
		}
	}
}

// Template is the expression's template for a filter operator ("" when the
// language has none: airlock applies the filter alone).
func (x *ExpressionConfig) Template(op string) string {
	switch op {
	case "", "eq":
		return x.Eq
	case "contains":
		return x.Contains
	case "gt":
		return x.Gt
	case "gte":
		return x.Gte
	case "lt":
		return x.Lt
	case "lte":
		return x.Lte
	}
	return ""
}

// Comparison reports whether a filter operator compares by order.
func Comparison(op string) bool { return op == "gt" || op == "gte" || op == "lt" || op == "lte" }

// validateComparison checks a filter that compares by order: one value,
// of a field whose values have an order.
func validateComparison(l *errList, r *ResourceConfig, f *FilterConfig, field string, p func(k ...string) []string) {
	if fd := r.Fields[field]; fd != nil {
		switch fd.Type {
		case "integer", "number", "string", "timestamp":
		default:
			l.add("a comparison needs a field of type integer, number, string or timestamp", p("op")...)
		}
	}
	if f.Multi != "" || f.MultiParam != "" || f.NullParam != "" || f.Null != nil {
		l.add("a comparison takes one value: leave out multi, multi_param, null_param and is_null", p("op")...)
	}
}

// validateBound checks an expression that binds its names and values:
// both members are named, in a POST list's body, and no template writes
// a value itself.
func validateBound(l *errList, r *ResourceConfig, x *ExpressionConfig, p func(k ...string) []string) {
	if x.Names == "" || x.Values == "" {
		l.add("a bound expression names both members: names (ExpressionAttributeNames) and values (ExpressionAttributeValues)", p()...)
	}
	if !strings.EqualFold(r.List.Method, "POST") {
		l.add("bound names and values are sent in a POST list's body: set list.method: POST", p("values")...)
	}
	if x.Names == x.Values || x.Names == x.Param || x.Values == x.Param {
		l.add("the expression, its names and its values are three members", p("values")...)
	}
	if x.Quote != "" || len(x.Escape) > 0 || len(x.Bare) > 0 {
		l.add("a bound expression writes no literal: leave out quote, escape and bare", p()...)
	}
}
