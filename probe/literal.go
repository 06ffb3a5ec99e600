package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/config"
)

// operatorProbes are the characters an API's filter syntax most often reads
// at the start of a value: Redmine's ! ^ ~ * $ = and | (it splits there),
// and the comparisons < and > of others. Each is sent in front of a value
// the data holds, beside the ones a filter's literal declares.
var operatorProbes = []string{"!", "^", "~", "*", "$", "=", "|", "<", ">"}

// literalProbes are the prefixes the literal check sends for a filter: the
// declared operators and split strings, then operatorProbes.
func literalProbes(fc *config.FilterConfig) []string {
	var out []string
	if l := fc.Literal; l != nil {
		out = append(out, l.Operators...)
		out = append(out, l.Split...)
	}
	for _, c := range operatorProbes {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// literalValue is the most common value (values come most frequent first)
// that holds none of the prefixes the check sends: each answer then says
// how the API read the prefix alone.
func literalValue(fc *config.FilterConfig, values []any) (string, bool) {
	for _, v := range values {
		s, ok := v.(string)
		if !ok || s == "" {
			continue
		}
		if !slices.ContainsFunc(literalProbes(fc), func(c string) bool { return strings.Contains(s, c) }) {
			return s, true
		}
	}
	return "", false
}

// literalCheckable reports whether the literal check applies to a filter:
// one string value sent as a parameter, compared for equality (a
// comparison's value is an instant or a number, and its text is checked by
// the param check).
func (p *prober) literalCheckable(fc *config.FilterConfig, field string) bool {
	if fc.Param == "" || fc.Search || fc.Expression != "" || config.Comparison(fc.Op) || fc.Op == "contains" {
		return false
	}
	fd, ok := p.r.Field(field)
	return ok && fd.Type == "string" && len(fd.Enum) == 0 && fd.Normalize == ""
}

// literalCheck sends a value the data holds behind each prefix of
// literalProbes, as a caller's value would go (escaped where the literal
// says so, or kept back), and compares the answer with airlock's own
// check: an API that reads a prefix as an operator (Redmine's cf_2=^beta
// is "starts with beta") answers records the value does not hold, or
// leaves out those it does. A character misread at the start is sent once
// more inside the value (beta|beta): an API that misreads it there too
// splits values at it. One check names every character whose answer
// changed meaning, and the literal that declares them.
func (p *prober) literalCheck(ctx context.Context, at, name string, fc *config.FilterConfig, value string) {
	var misread, escaped, kept, unsettled, refused []string
	var evidence string
	ask := func(v string) filterAnswer {
		// Two pages: a value read as itself selects few records (the
		// second page proves the end of a first that was not full), and
		// a first page of records the value does not hold is proof enough.
		return p.askFilter(ctx, map[string]any{name: v}, 2)
	}
	for _, c := range literalProbes(fc) {
		probe := c + value
		if p.left() <= 0 {
			unsettled = append(unsettled, c)
			continue
		}
		a := ask(probe)
		switch {
		case !a.sent:
			kept = append(kept, c)
		case a.status == Wrong && !a.refused:
			misread = append(misread, c)
			if evidence == "" {
				evidence = a.evidence
			}
			if fc.Literal.Leading(probe) != "" && fc.Literal.Escape != "" {
				escaped = append(escaped, c)
			}
		case a.status == OK:
		case a.refused:
			// An error, never a wrong answer; inside the value it may
			// still be misread (Redmine refuses |beta, a blank first
			// value, and splits beta|beta).
			refused = append(refused, c)
		default:
			// Not settled within two pages or the budget.
			unsettled = append(unsettled, c)
		}
	}
	var operators, split []string
	for _, c := range append(slices.Clone(misread), refused...) {
		if p.left() > 0 {
			if a := ask(value + c + value); a.sent && a.status == Wrong && !a.refused {
				split = append(split, c)
				if !slices.Contains(misread, c) {
					misread = append(misread, c)
					if evidence == "" {
						evidence = a.evidence
					}
				}
				continue
			}
		}
		if slices.Contains(misread, c) {
			operators = append(operators, c)
		} else {
			unsettled = append(unsettled, c)
		}
	}
	quoted := func(cs []string) string {
		q := make([]string, len(cs))
		for i, c := range cs {
			q[i] = fmt.Sprintf("%q", c)
		}
		return strings.Join(q, ", ")
	}
	// The literal that keeps every misread value from the API: the
	// declared one with what the probe found added, without an escape
	// that did not hold.
	declare := func() string {
		var ops, sp []string
		esc := ""
		if l := fc.Literal; l != nil {
			ops, sp, esc = slices.Clone(l.Operators), slices.Clone(l.Split), l.Escape
		}
		for _, c := range operators {
			if !slices.Contains(ops, c) {
				ops = append(ops, c)
			}
		}
		for _, c := range split {
			if !slices.Contains(sp, c) {
				sp = append(sp, c)
			}
		}
		var parts []string
		if len(ops) > 0 {
			parts = append(parts, "operators: ["+quoted(ops)+"]")
		}
		if len(sp) > 0 {
			parts = append(parts, "split: ["+quoted(sp)+"]")
		}
		if esc != "" && len(escaped) == 0 {
			parts = append(parts, fmt.Sprintf("escape: %q", esc))
		}
		return "literal: {" + strings.Join(parts, ", ") + "}"
	}
	var reads []string
	if len(operators) > 0 {
		reads = append(reads, fmt.Sprintf("reads a value starting with %s as an operator", quoted(operators)))
	}
	if len(split) > 0 {
		reads = append(reads, fmt.Sprintf("splits a value at %s wherever it is", quoted(split)))
	}
	switch {
	case len(escaped) > 0:
		p.add(at, Wrong, fmt.Sprintf("values starting with %s were sent escaped by %q, and the API still read them otherwise: %s", quoted(escaped), fc.Literal.Escape, evidence),
			"the escape does not make the API read the rest as it is: declare "+declare()+" (such values are then applied by airlock alone), or the escape the API reads")
	case len(misread) > 0:
		p.add(at, Wrong, fmt.Sprintf("the API %s: %s", strings.Join(reads, ", and "), evidence),
			"declare "+declare()+": such values are then applied by airlock alone; add the prefix the API reads as \"equals\" as escape (Redmine: =) to send them escaped")
	case len(unsettled) > 0:
		p.add(at, Unverifiable, fmt.Sprintf("values starting with %s could not be judged (the request budget, a refusal, or more than two pages)", quoted(unsettled)), "raise --max-requests")
	default:
		var parts []string
		if read := slices.DeleteFunc(literalProbes(fc), func(c string) bool { return slices.Contains(kept, c) }); len(read) > 0 {
			parts = append(parts, fmt.Sprintf("values starting with %s are read as themselves", quoted(read)))
		}
		if len(kept) > 0 {
			parts = append(parts, fmt.Sprintf("values starting with %s are applied by airlock alone", quoted(kept)))
		}
		p.add(at, OK, fmt.Sprintf("%s (each sent before %q)", strings.Join(parts, "; "), value), "")
	}
}
