package config

// A Mango selector (CouchDB's _find, PouchDB's) is a JSON object, so the
// filters sent there are built as JSON values, each value bound in place,
// never written into text: there are no templates, quotes or escapes to
// declare. The selector goes at list.expression.param in the POST body,
// joined by $and with the selector list.body already holds there (the
// list's own scope, never replaced).

// mangoTextKeys are the keys of a text expression language, which a Mango
// selector does not read.
var mangoTextKeys = []string{"eq", "in", "is_null", "contains", "gt", "gte", "lt", "lte", "list_separator", "join", "quote", "escape", "bare", "base", "suffix"}

// validateMango checks an expression in the mango language: a POST list,
// a param, a filter that uses it, and none of the text languages' keys.
func validateMango(l *errList, r *ResourceConfig, e *ExpressionConfig, uses bool, p func(k ...string) []string) {
	if ListKind(r) != ListBody {
		l.add("a Mango selector is sent in a POST body: set list.method: POST", p("language")...)
	}
	if !uses {
		l.add("no filter declares an expression name (filters.NAME.expression): nothing would be sent", p()...)
	}
	set := map[string]bool{
		"eq": e.Eq != "", "in": e.In != "", "is_null": e.Null != "", "contains": e.Contains != "",
		"gt": e.Gt != "", "gte": e.Gte != "", "lt": e.Lt != "", "lte": e.Lte != "",
		"list_separator": e.ListSeparator != "", "join": e.Join != "", "quote": e.Quote != "",
		"escape": e.Escape != nil, "bare": e.Bare != nil, "base": e.Base != "", "suffix": e.Suffix != "",
	}
	for _, k := range mangoTextKeys {
		if set[k] {
			l.add("a Mango selector is JSON built by airlock: it reads no "+k+" (write the list's own scope in list.body under the selector)", p(k)...)
		}
	}
}
