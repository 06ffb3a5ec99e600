package upstream

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// listParams collects one list request's parameters where its kind puts
// them: the query string of a GET list, the JSON body of a POST list, the
// variables of a graphql list. The list's own params and a source's params
// are always query parameters.
type listParams struct {
	kind  string
	query url.Values
	body  map[string]any
}

// set places one value: in a query as its string form, in a body at its
// dotted path, in variables under its name, keeping its JSON type.
func (p *listParams) set(k string, v any) {
	if k == "" {
		// A parameter the list does not send (page_size_param: none).
		return
	}
	switch p.kind {
	case config.ListQuery:
		p.query.Set(k, jsonvalue.String(v))
	case config.ListBody:
		jsonvalue.Put(p.body, k, v)
	default:
		p.body[k] = v
	}
}

// add appends one more value of a repeated query parameter.
func (p *listParams) add(k, v string) { p.query.Add(k, v) }

// describe is the parameters in a line, for evidence: the query string,
// then the body (or variables) as JSON.
func (p *listParams) describe() string {
	out := encodeQuery(p.query, false)
	if len(p.body) > 0 {
		b, _ := jsonvalue.Encode(p.body)
		if out != "" {
			out += " "
		}
		out += string(b)
	}
	return out
}

func (r *Resource) newParams(src config.SourceConfig) *listParams {
	p := &listParams{kind: config.ListKind(&r.Config), query: url.Values{}}
	for k, v := range r.Config.List.Params {
		p.query.Set(k, v)
	}
	for k, v := range src.Params {
		p.query.Set(k, v)
	}
	switch p.kind {
	case config.ListBody:
		p.body, _ = config.NormalizeValue(r.Config.List.Body).(map[string]any)
		if p.body == nil {
			p.body = map[string]any{}
		}
		p.body = cloneJSON(p.body)
	case config.ListVariables:
		p.body = map[string]any{}
	}
	return p
}

// cloneJSON deep-copies a decoded JSON object, so that a request's body
// never shares maps with the configuration's template.
func cloneJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			out[k] = cloneJSON(x)
		case []any:
			c := make([]any, len(x))
			for i, e := range x {
				if em, ok := e.(map[string]any); ok {
					c[i] = cloneJSON(em)
				} else {
					c[i] = e
				}
			}
			out[k] = c
		default:
			out[k] = v
		}
	}
	return out
}

// listOptions shape one list request.
type listOptions struct {
	filter map[string]any
	// probe asks for the source's first page at page size 1, without the
	// upstream-side filters.
	probe bool
	// pageSize, when set, replaces the configured page size.
	pageSize  int
	requestID string
}

// listRequest builds the request for the page st points at: the method,
// URL and body the list's kind and dialect call for, with the filters
// sent upstream only in a form that carries each value intact. A next
// URL (link, next_url) is followed on the source's own host only.
func (r *Resource) listRequest(src config.SourceConfig, st pageState, o listOptions) (Request, error) {
	base := r.sourceBase(src)
	p := r.newParams(src)
	if !o.probe {
		r.sendFilters(p, o.filter)
	} else {
		r.sendSearches(p, o.filter)
		if x := r.expression; x != nil && x.Base != "" {
			// The base scopes the list as list.params do: a probe sends it.
			p.set(x.Param, joinExpression(x, nil))
		}
		// The partition a Query reads is its scope: a probe keeps it.
		r.placeKeyCondition(p, r.keyForms(o.filter))
	}
	d := r.dialect
	if o.pageSize > 0 {
		pg := r.Pagination
		pg.PageSize = o.pageSize
		d = r.dialectFor(pg)
	}
	req := Request{Method: http.MethodGet, RequestID: o.requestID, Idempotent: true, Header: ownHeaders(r.Config.List.Headers)}
	if next := d.query(p, st); next != nil {
		u := base.ResolveReference(next)
		if !r.Upstream.SameOrigin(base, u) {
			return Request{}, BadResponse("the continuation points at another host; it was not followed")
		}
		if q := u.Query(); o.pageSize > 0 && r.Pagination.PageSizeParam != "" && q.Has(r.Pagination.PageSizeParam) {
			// A next URL asked for at another size (a recheck): the size
			// it names is replaced, nothing else.
			q.Set(r.Pagination.PageSizeParam, strconv.Itoa(o.pageSize))
			c := *u
			c.RawQuery = q.Encode()
			u = &c
		}
		req.URL = u
		return req, nil
	}
	if o.probe {
		p.set(r.Pagination.PageSizeParam, 1)
	}
	r.sendSnapshot(p, st)
	req.URL = r.Upstream.ResolveURL(base, r.Config.List.Path, p.query)
	if r.Config.List.QueryEncoding != "" {
		req.URL.RawQuery = encodeQuery(p.query, formQuery(r.Config.List.QueryEncoding, ""))
	}
	switch p.kind {
	case config.ListBody:
		req.Method = http.MethodPost
		req.Body, _ = jsonvalue.Encode(p.body)
	case config.ListVariables:
		req.Method = http.MethodPost
		req.Body, _ = jsonvalue.Encode(map[string]any{"query": r.Config.List.GraphQL, "variables": p.body})
	}
	return req, nil
}

// filterForm is how one filter's value is sent upstream, or why not.
type filterForm struct {
	// sent is false when airlock applies the value alone.
	sent bool
	// why says, for a value not sent, what kept it back ("" when the
	// configuration declares no upstream form for it).
	why string
	// clause is the value's clause in the list's filter expression, for
	// a filter sent there.
	clause string
	// bound is what a bound expression's clause refers to.
	bound bindings
	// mango is the value's clause in a Mango selector (an expression in
	// the mango language).
	mango map[string]any
	// key says the clause is a Query's key condition's, not the filter
	// expression's.
	key bool
}

// sendFilters sends the upstream-side filters, each only in a form the
// configuration declares the API accepts and that carries the value
// intact: one value in param; a list only in the declared multi form (a
// list of one is one value); null only as null_param or the null form;
// never for a field with normalize. A comma list whose values hold the
// separator (or white space at an end, which APIs trim) cannot carry them:
// the list is not sent, and neither is one such value sent where the API
// splits lists. Everything else is left to airlock, which re-checks every
// filter on every item anyway: an upstream filter can only narrow what is
// read, so a form the API might misread must never be sent. It returns the
// form each filter was given.
func (r *Resource) sendFilters(p *listParams, filter map[string]any) map[string]filterForm {
	forms := map[string]filterForm{}
	var clauses []string
	all := bindings{names: map[string]any{}, values: map[string]any{}}
	var mango []map[string]any
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		fc := r.Config.Filters[name]
		form := r.filterForm(name, fc, filter[name])
		forms[name] = form
		switch {
		case form.sent && form.mango != nil:
			mango = append(mango, form.mango)
		case form.key:
			// placed by placeKeyCondition
		case form.sent && fc.Expression != "":
			clauses = append(clauses, form.clause)
			maps.Copy(all.names, form.bound.names)
			maps.Copy(all.values, form.bound.values)
		case form.sent:
			r.placeFilter(p, name, fc, filter[name])
		}
	}
	if x := r.expression; x != nil && x.Language == config.LanguageMango {
		if len(mango) > 0 {
			base, _ := jsonvalue.Get(p.body, x.Param)
			p.set(x.Param, mangoSelector(base, mango))
		}
	} else if x != nil {
		if e := joinExpression(x, clauses); e != "" {
			p.set(x.Param, e)
		}
		if x.Bound() {
			placeBindings(p, x, all)
		}
		r.placeKeyCondition(p, forms)
	}
	return forms
}

// filterValue is a filter's value as sent: a list of one is one value,
// and a declared null stand-in is null.
func (r *Resource) filterValue(name string, fc *config.FilterConfig, v any) any {
	fd, _ := r.Field(fc.FieldOf(name))
	if arr, ok := v.([]any); ok && len(arr) == 1 {
		v = arr[0]
	}
	if v != nil && config.IsNull(v, fd) {
		v = nil
	}
	return v
}

// filterForm decides whether a filter value can be sent upstream.
func (r *Resource) filterForm(name string, fc *config.FilterConfig, raw any) filterForm {
	if fc == nil {
		return filterForm{}
	}
	if fc.Search {
		return filterForm{sent: true} // a search is always the upstream's
	}
	fd, _ := r.Field(fc.FieldOf(name))
	if fd != nil && fd.Normalize != "" {
		return filterForm{why: "the field is normalized: airlock compares normalized values, the API may not"}
	}
	if fc.Expression != "" && r.expression != nil && r.expression.Language == config.LanguageMango {
		clause, why := r.mangoClause(fc, fd, r.filterValue(name, fc, raw))
		return filterForm{sent: why == "", why: why, mango: clause}
	}
	if fc.Expression != "" && r.keyCondition().KeyRole(name) != "" {
		clause, b, why := r.keyClause(name, fc, fd, r.filterValue(name, fc, raw))
		return filterForm{sent: why == "", why: why, clause: clause, bound: b, key: true}
	}
	if fc.Expression != "" && r.expression.Bound() {
		clause, b, why := r.boundClause(name, fc, fd, r.filterValue(name, fc, raw))
		return filterForm{sent: why == "", why: why, clause: clause, bound: b}
	}
	if fc.Expression != "" {
		clause, why := r.expressionClause(fc, fd, r.filterValue(name, fc, raw))
		return filterForm{sent: why == "", why: why, clause: clause}
	}
	switch v := r.filterValue(name, fc, raw).(type) {
	case nil:
		return filterForm{sent: fc.NullParam != "" || fc.Null != nil}
	case []any:
		if fc.Multi == "" {
			return filterForm{}
		}
		for _, e := range v {
			if e == nil || config.IsNull(e, fd) {
				return filterForm{why: "null among the values: only airlock can match it"}
			}
			if why := r.splits(fc, e); why != "" {
				return filterForm{why: why}
			}
		}
		if _, why, ok := r.listWire(fc, v); !ok {
			return filterForm{why: why}
		}
		return filterForm{sent: true}
	default:
		if fc.Param == "" {
			return filterForm{}
		}
		if fc.Multi == "comma" && (fc.MultiParam == "" || fc.MultiParam == fc.Param) {
			// The API splits this parameter's value into a list.
			if why := r.splits(fc, v); why != "" {
				return filterForm{why: why}
			}
		}
		if _, why, ok := wireValue(config.ListKind(&r.Config), fc, v); !ok {
			return filterForm{why: why}
		}
		return filterForm{sent: true}
	}
}

// listWire is a list's values as placed in the request: one text joined
// by the separator for a comma list, else each value as wireValue writes
// it; ok is false, with why, when a value cannot be carried so.
func (r *Resource) listWire(fc *config.FilterConfig, v []any) ([]any, string, bool) {
	if fc.Multi == "comma" {
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = jsonvalue.String(e)
		}
		text, why, ok := joinedText(fc, parts)
		return []any{text}, why, ok
	}
	out := make([]any, len(v))
	for i, e := range v {
		w, why, ok := wireValue(config.ListKind(&r.Config), fc, e)
		if !ok {
			return nil, why, false
		}
		out[i] = w
	}
	return out, "", true
}

// splits says why a comma list cannot carry a value intact ("" when it
// can): the value holds the separator, is empty, or has white space at an
// end (APIs trim the parts of a list).
func (r *Resource) splits(fc *config.FilterConfig, v any) string {
	if fc.Multi != "comma" {
		return ""
	}
	s := jsonvalue.String(v)
	sep := separatorOf(fc)
	switch {
	case strings.Contains(s, sep):
		return "a value holds the list separator " + strconv.Quote(sep)
	case s == "":
		return "an empty value cannot be a member of a comma list"
	case strings.TrimSpace(s) != s:
		return "a value has white space at an end, which APIs trim from list members"
	}
	return ""
}

func separatorOf(fc *config.FilterConfig) string {
	if fc.Separator != "" {
		return fc.Separator
	}
	return ","
}

// placeFilter places a value filterForm accepted.
func (r *Resource) placeFilter(p *listParams, name string, fc *config.FilterConfig, raw any) {
	switch v := r.filterValue(name, fc, raw).(type) {
	case nil:
		if fc.NullParam != "" {
			p.set(fc.Param, fc.NullParam)
			return
		}
		p.set(fc.Null.Param, config.NormalizeValue(fc.Null.Value))
	case []any:
		param := fc.MultiParam
		if param == "" {
			param = fc.Param
		}
		w, _, _ := r.listWire(fc, v)
		switch fc.Multi {
		case "repeat":
			for _, e := range w {
				p.add(param, jsonvalue.String(e))
			}
		case "comma":
			p.set(param, w[0])
		case "array":
			p.set(param, w)
		}
	default:
		w, _, _ := wireValue(p.kind, fc, v)
		p.set(fc.Param, w)
	}
}

// ensurePIT opens the point in time of a search_after list before its
// first page (st holds it from then on); nothing for other lists.
func (r *Resource) ensurePIT(ctx context.Context, src config.SourceConfig, st *pageState, requestID string) error {
	if r.Pagination.PIT == nil || st.PIT != "" {
		return nil
	}
	id, err := r.openPIT(ctx, src, requestID)
	if err != nil {
		return err
	}
	st.PIT = id
	return nil
}

// openPIT opens the point in time a search_after list reads in, and
// returns its id.
func (r *Resource) openPIT(ctx context.Context, src config.SourceConfig, requestID string) (string, error) {
	pit := r.Pagination.PIT
	base := r.sourceBase(src)
	path, rawQuery, _ := strings.Cut(pit.Open, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", BadResponse("pagination.pit.open has a query that does not parse")
	}
	resp, err := r.Upstream.Do(ctx, Request{Method: http.MethodPost, URL: r.Upstream.ResolveURL(base, path, q), RequestID: requestID, Idempotent: true})
	if err != nil {
		return "", err
	}
	doc, err := DecodeJSONBody(resp, true)
	if err != nil {
		return "", err
	}
	id, ok := jsonvalue.Get(doc, pit.ID)
	s, _ := id.(string)
	if !ok || s == "" {
		return "", BadResponse("the point in time's answer has no id at %q", pit.ID)
	}
	return s, nil
}

// searchAfterValue decodes a saved search_after cursor (the last item's
// sort values, canonically encoded).
func searchAfterValue(cursor string) any {
	dec := json.NewDecoder(strings.NewReader(cursor))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return cursor
	}
	return v
}

// paramNames lists every upstream parameter a filter may send, sorted.
func paramNames(fc *config.FilterConfig) []string {
	set := map[string]bool{}
	for _, p := range []string{fc.Param, fc.MultiParam} {
		if p != "" {
			set[p] = true
		}
	}
	if fc.Null != nil && fc.Null.Param != "" {
		set[fc.Null.Param] = true
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ownHeaders is a list's or a read's own headers (list.headers,
// get.headers), each replacing the upstream's of the same name; nil when
// there are none.
func ownHeaders(hs map[string]string) http.Header {
	if len(hs) == 0 {
		return nil
	}
	out := http.Header{}
	for k, v := range hs {
		out.Set(k, v)
	}
	return out
}
