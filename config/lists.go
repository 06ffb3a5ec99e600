package config

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The kinds of list request, which decide where pagination and filter
// parameters go: a query string, a JSON body, or GraphQL variables.
const (
	ListQuery     = "query"
	ListBody      = "body"
	ListVariables = "variables"
)

// ListKind is where a resource's list request carries its parameters.
func ListKind(r *ResourceConfig) string {
	switch k, _ := DialectKindOf(r.Pagination.Dialect); {
	case k.GraphQL:
		return ListVariables
	case strings.EqualFold(r.List.Method, http.MethodPost):
		return ListBody
	}
	return ListQuery
}

// readsTotal reports whether a resolved pagination reads a total.
func readsTotal(p PaginationConfig) bool {
	return p.TotalHeader != "" || (p.Total != "" && p.Total != NoTotal)
}

// validateList checks the list request and the pagination keys every
// dialect reads; Config.validateDialect checks the dialect's own.
func validateList(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	pg := r.Pagination
	kind := ListKind(r)
	switch strings.ToUpper(r.List.Method) {
	case "", http.MethodGet, http.MethodPost:
	default:
		l.add("must be GET or POST", at("list", "method")...)
	}
	if len(r.List.Body) > 0 && kind != ListBody {
		l.add("a body is sent only by a POST list (list.method: POST)", at("list", "body")...)
	}
	validQueryEncoding(l, r.List.QueryEncoding, at("list", "query_encoding"))
	validateReadHeaders(l, r.List.Headers, func(h string) []string { return at("list", "headers", h) })
	if r.Get != nil {
		validateReadHeaders(l, r.Get.Headers, func(h string) []string { return at("get", "headers", h) })
	}
	validateExpression(l, r, at)
	validateReach(l, r, at)
	if k, _ := DialectKindOf(pg.Dialect); r.List.GraphQL != "" && !k.GraphQL {
		l.add("a GraphQL query needs pagination.dialect: graphql", at("list", "graphql")...)
	}
	switch pg.Consistency {
	case "", ConsistencySnapshot, ConsistencyKeyset, ConsistencyNone:
	default:
		l.add("use one of snapshot, keyset, none", at("pagination", "consistency")...)
	}
	// A snapshot is what the dialect's defaults make it: the continue
	// token's, a point in time, or a value sent with every page.
	undeclared := pg
	undeclared.Consistency = ""
	snapshot := ResolvePagination(undeclared).Consistency == ConsistencySnapshot
	if pg.Consistency == ConsistencySnapshot && pg.Dialect != "" && !snapshot {
		l.add("only the continue dialect, search_after with a point in time, or a snapshot sent with every page (pagination.snapshot.param) carries a snapshot; declare keyset or none", at("pagination", "consistency")...)
	}
	if pg.PageSize < 0 || pg.PageSize > 10000 {
		l.add("must be between 1 and 10000", at("pagination", "page_size")...)
	}
	if pg.Concurrency < 0 || pg.Concurrency > 32 {
		l.add("must be between 1 and 32", at("pagination", "concurrency")...)
	}
	if pg.TotalHeader != "" && pg.Total != "" {
		l.add("set one of total (a body path, or none) or total_header", at("pagination", "total_header")...)
	}
	if pg.TotalRelation != "" && (pg.Total == "" || pg.Total == NoTotal) {
		l.add("total_relation qualifies a total read from the body: set total too", at("pagination", "total_relation")...)
	}
	if pg.TotalExact && !readsTotal(ResolvePagination(pg)) {
		l.add("only a dialect that reads a total can declare it exact", at("pagination", "total_exact")...)
	}
	if e := pg.Expiry; e != nil {
		for i, st := range e.Status {
			if st < 200 || st > 599 {
				l.add("an HTTP status (a 200 is matched against a GraphQL answer's errors)", at("pagination", "expiry", "status", strconv.Itoa(i))...)
			}
		}
		if _, err := regexp.Compile(e.Match); err != nil {
			l.add("not a regular expression: "+err.Error(), at("pagination", "expiry", "match")...)
		}
	}
}

// validateFilters checks each filter and the forms its values are sent
// upstream in.
func validateFilters(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	kind := ListKind(r)
	for _, fname := range slices.Sorted(maps.Keys(r.Filters)) {
		f := r.Filters[fname]
		if f == nil {
			r.Filters[fname] = &FilterConfig{}
			f = r.Filters[fname]
		}
		p := func(k ...string) []string { return at(append([]string{"filters", fname}, k...)...) }
		if f.Search {
			validateSearchFilter(l, f, p)
			continue
		}
		field := f.FieldOf(fname)
		if _, ok := r.Fields[field]; !ok {
			l.add(fmt.Sprintf("filters on field %q, which is not declared", field), p()...)
		}
		switch f.Op {
		case "", "eq", "contains":
		case "gt", "gte", "lt", "lte":
			validateComparison(l, r, f, field, p)
		default:
			l.add("op must be eq, contains, or a comparison: gt, gte, lt, lte", p("op")...)
		}
		validateComparisonForm(l, f, p)
		validateLiteral(l, f, p)
		switch f.Multi {
		case "":
			if f.MultiParam != "" {
				l.add("multi_param needs multi: how the API takes the list there", p("multi_param")...)
			}
		case "repeat":
			if kind != ListQuery {
				l.add("a repeated parameter is a query form; in a JSON body or a GraphQL variable use array or comma", p("multi")...)
			}
		case "comma":
		case "array":
			if kind == ListQuery {
				l.add("an array is sent in a JSON body or a GraphQL variable; a query takes repeat or comma", p("multi")...)
			}
		default:
			l.add("multi must be repeat (?p=a&p=b), comma (?p=a,b) or array (a JSON list); leave it unset when the API takes one value", p("multi")...)
		}
		if f.Multi != "" && f.Param == "" && f.MultiParam == "" {
			l.add("multi says how the upstream takes several values; set param or multi_param too", p("multi")...)
		}
		if f.Separator != "" && f.Multi != "comma" {
			l.add("separator joins a comma list: set multi: comma", p("separator")...)
		}
		if f.NullParam != "" && f.Param == "" {
			l.add("null_param is the value sent in param for null; set param too", p("null_param")...)
		}
		if n := f.Null; n != nil {
			if f.NullParam != "" {
				l.add("set one of is_null (a parameter of its own) or null_param (a value of param)", p("is_null")...)
			}
			if n.Param == "" {
				l.add("required: the parameter that carries null", p("is_null", "param")...)
			}
			switch n.Value.(type) {
			case nil:
				if kind == ListQuery {
					l.add("required: a query cannot carry null; the value that means null (true, 1, none)", p("is_null", "value")...)
				}
			case string, int, float64, bool:
			default:
				l.add("a null form's value is a string, number or boolean", p("is_null", "value")...)
			}
		}
	}
}

// validQueryEncoding checks a query_encoding.
func validQueryEncoding(l *errList, v string, path []string) {
	switch v {
	case "", QueryRFC3986, QueryForm:
	default:
		l.add("use rfc3986 (a space is %20, the default) or form (a space is +)", path...)
	}
}

// validateReadHeaders checks a list's or a read's own headers: each
// replaces the upstream's of the same name and is sent as written, so it
// is a header name and never a credential (those belong in the
// upstream's credential, which redacts them).
func validateReadHeaders(l *errList, hs map[string]string, at func(h string) []string) {
	for _, h := range slices.Sorted(maps.Keys(hs)) {
		switch {
		case !headerName(h):
			l.add(fmt.Sprintf("%q is not a header name (letters, digits and !#$%%&'*+-.^_`|~)", h), at(h)...)
		case credentialHeader(h):
			l.add("credentials belong in the upstream's credential, not in headers", at(h)...)
		case strings.ContainsAny(hs[h], "\r\n\x00"):
			l.add("a header value is one line", at(h)...)
		}
	}
}

// CredentialHeader reports whether a header carries a credential: one
// airlock's credential forms set (or SigV4 signs with), which a header
// written in the configuration must never replace or carry in clear.
func CredentialHeader(h string) bool { return credentialHeader(h) }

func credentialHeader(h string) bool {
	switch strings.ToLower(h) {
	case "authorization", "cookie", "proxy-authorization", "x-amz-security-token", "x-amz-date", "x-amz-content-sha256", "x-api-key":
		return true
	}
	return false
}
