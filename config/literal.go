package config

import (
	"fmt"
	"strconv"
	"strings"
)

// LiteralConfig declares how an API reads the text of a filter value sent
// as a parameter, when it reads more than the value: Redmine reads a
// leading ^ as "starts with" and ! as "not" (cf_2=^beta), takes = as the
// equals operator (cf_2==^beta asks for the text ^beta), and splits a value
// at every | into a list. A value the API would read as anything but itself
// is written with Escape, or, when it cannot be, applied by airlock alone.
type LiteralConfig struct {
	// Operators are the prefixes the API reads at the start of a value
	// (of a list joined by its separator: its start) as an operator.
	Operators []string `yaml:"operators"`
	// Escape is written before a value that starts with an operator, so
	// that the API reads the rest as it is (Redmine's =). It must itself
	// start with an operator: a value that starts with the escape is
	// escaped too. Without one, such a value is applied by airlock alone.
	Escape string `yaml:"escape"`
	// Split are the strings at which the API splits a value wherever they
	// occur (Redmine's |): a value holding one cannot be carried, and is
	// applied by airlock alone.
	Split []string `yaml:"split"`
}

// Leading is the declared operator a text starts with ("" when none).
func (l *LiteralConfig) Leading(s string) string {
	if l == nil {
		return ""
	}
	for _, op := range l.Operators {
		if op != "" && strings.HasPrefix(s, op) {
			return op
		}
	}
	return ""
}

// Splitter is the declared split string a text holds ("" when none).
func (l *LiteralConfig) Splitter(s string) string {
	if l == nil {
		return ""
	}
	for _, sp := range l.Split {
		if sp != "" && strings.Contains(s, sp) {
			return sp
		}
	}
	return ""
}

// Literal writes a value's text as the API reads it as itself: escaped
// when it starts with an operator. ok is false, with why, when it cannot
// be written so (Uncarried, or a leading operator without an escape).
func (l *LiteralConfig) Literal(s string) (text, why string, ok bool) {
	if why := l.Uncarried(s); why != "" {
		return "", why, false
	}
	return l.Escaped(s)
}

// Uncarried says why no text carries a value, whatever is written before
// it ("" when one does): it holds a split string, or is empty (an operator
// without its operand).
func (l *LiteralConfig) Uncarried(s string) string {
	if l == nil {
		return ""
	}
	if sp := l.Splitter(s); sp != "" {
		return fmt.Sprintf("the value holds %q, at which the API splits a value", sp)
	}
	if s == "" {
		return "the API reads an empty value as an operator without its operand"
	}
	return ""
}

// Escaped writes a text that starts with an operator after the escape;
// without an escape, ok is false and why names the operator.
func (l *LiteralConfig) Escaped(s string) (text, why string, ok bool) {
	op := l.Leading(s)
	switch {
	case op == "":
		return s, "", true
	case l.Escape == "":
		return "", fmt.Sprintf("the value starts with %q, which the API reads as an operator, and no escape is declared", op), false
	}
	return l.Escape + s, "", true
}

// validateLiteral checks a filter's literal: something declared, an escape
// that is itself escaped, and a value sent as a parameter to apply it to.
func validateLiteral(l *errList, f *FilterConfig, p func(k ...string) []string) {
	lit := f.Literal
	if lit == nil {
		return
	}
	if f.Param == "" && f.MultiParam == "" {
		l.add("literal says how the API reads a value sent as a parameter: set param", p("literal")...)
	}
	if f.Expression != "" {
		l.add("a value in an expression is written as the language's literal already: remove literal", p("literal")...)
	}
	if len(lit.Operators) == 0 && len(lit.Split) == 0 {
		l.add("declare the operators the API reads at a value's start, or the strings it splits a value at", p("literal")...)
	}
	for i, op := range lit.Operators {
		if op == "" {
			l.add("an operator is at least one character", p("literal", "operators", strconv.Itoa(i))...)
		}
	}
	for i, sp := range lit.Split {
		if sp == "" {
			l.add("a split string is at least one character", p("literal", "split", strconv.Itoa(i))...)
		}
	}
	if lit.Escape != "" {
		if lit.Leading(lit.Escape) == "" {
			l.add(fmt.Sprintf("a value that starts with the escape %q would be read as escaped: list it among operators", lit.Escape), p("literal", "escape")...)
		}
		if sp := lit.Splitter(lit.Escape); sp != "" {
			l.add(fmt.Sprintf("the escape holds %q, at which the API splits a value", sp), p("literal", "escape")...)
		}
	}
}

// validateComparisonForm checks how a comparison filter is sent: as a
// parameter, it says how the API reads the comparison (the operator text
// before the value, or a parameter that compares by itself); unsent or in
// an expression, neither applies.
func validateComparisonForm(l *errList, f *FilterConfig, p func(k ...string) []string) {
	comparison := Comparison(f.Op)
	if !comparison {
		if f.Operator != "" {
			l.add("operator is written before a comparison's value: only op gt, gte, lt or lte takes one", p("operator")...)
		}
		if f.ParamCompares {
			l.add("param_compares says the parameter makes a comparison: only op gt, gte, lt or lte takes it", p("param_compares")...)
		}
		return
	}
	switch {
	case f.Expression != "" && (f.Operator != "" || f.ParamCompares):
		l.add("a comparison in an expression is written by the language's own operator: remove operator and param_compares", p("expression")...)
	case f.Operator != "" && f.ParamCompares:
		l.add("set one of operator (the text the API reads before the value) or param_compares (the parameter itself compares)", p("operator")...)
	case f.Param == "" && (f.Operator != "" || f.ParamCompares):
		k := "operator"
		if f.ParamCompares {
			k = "param_compares"
		}
		l.add("nothing is sent: set param, or remove "+k+" (airlock then applies the comparison alone)", p(k)...)
	case f.Param != "" && f.Operator == "" && !f.ParamCompares:
		l.add(fmt.Sprintf(`a comparison sent as %q must say how the API reads it: operator: ">=" when the API reads the operator in the value (Redmine's updated_on=>=2026-01-01), or param_compares: true when the parameter itself compares (updated__gte, updated_after); without param, airlock applies it alone`, f.Param), p("param")...)
	}
	if f.Operator != "" && strings.ContainsAny(f.Operator, "\x00\n\r") {
		l.add("an operator is one line", p("operator")...)
	}
}
