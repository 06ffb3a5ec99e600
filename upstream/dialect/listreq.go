package dialect

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

func (r *List) newParams(src config.SourceConfig) *Params {
	p := &Params{Kind: config.ListKind(&r.Config), Query: url.Values{}}
	for k, v := range r.Config.List.Params {
		p.Query.Set(k, v)
	}
	for k, v := range src.Params {
		p.Query.Set(k, v)
	}
	switch p.Kind {
	case config.ListBody:
		p.Body, _ = config.NormalizeValue(r.Config.List.Body).(map[string]any)
		if p.Body == nil {
			p.Body = map[string]any{}
		}
		p.Body = cloneJSON(p.Body)
	case config.ListVariables:
		p.Body = map[string]any{}
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

// ListOptions shape one list request.
type ListOptions struct {
	Filter map[string]any
	// Probe asks for the source's first page at page size 1, without the
	// upstream-side filters.
	Probe bool
	// PageSize, when set, replaces the configured page size.
	PageSize  int
	RequestID string
}

// PageRequest builds the request for the page st points at: the method,
// URL and body the list's kind and dialect call for, with the filters
// sent upstream only in a form that carries each value intact. A next
// URL (link, next_url) is followed on the source's own host only.
func (r *List) PageRequest(src config.SourceConfig, st State, o ListOptions) (transport.Request, error) {
	base := r.SourceBase(src)
	p := r.newParams(src)
	placed := true
	if !o.Probe {
		_, placed = r.sendFilters(p, o.Filter)
	} else {
		r.sendSearches(p, o.Filter)
		if x := r.Expression; x != nil && x.Base != "" {
			// The base scopes the list as list.params do: a probe sends it.
			p.Set(x.Param, joinExpression(x, nil))
		}
		// The partition a Query reads is its scope: a probe keeps it.
		placed = r.placeKeyCondition(p, r.keyForms(o.Filter))
	}
	if !placed {
		// checkKeyFilter refuses such a search before it is read; a
		// caller that skips it (or a probe without default_filter) gets
		// this, and nothing is sent.
		k := r.keyCondition()
		fd, _ := r.Field(r.Config.Filters[k.Partition].FieldOf(k.Partition))
		return transport.Request{}, &transport.UnsendableError{Errors: []envelope.FieldError{
			envelope.NewFieldError("filter."+k.Partition, envelope.FieldPartitionRequired, exampleFor(fd, r.Config.Filters[k.Partition])),
		}}
	}
	d := r.Dialect
	if o.PageSize > 0 {
		pg := r.Pagination
		pg.PageSize = o.PageSize
		d = r.DialectFor(pg)
	}
	req := transport.Request{Method: http.MethodGet, RequestID: o.RequestID, Idempotent: true, Header: OwnHeaders(r.Config.List.Headers)}
	if next := d.Query(p, st); next != nil {
		u := base.ResolveReference(next)
		if !r.Upstream.SameOrigin(base, u) {
			return transport.Request{}, transport.BadResponse("the continuation points at another host; it was not followed")
		}
		if q := u.Query(); o.PageSize > 0 && r.Pagination.PageSizeParam != "" && q.Has(r.Pagination.PageSizeParam) {
			// A next URL asked for at another size (a recheck): the size
			// it names is replaced, nothing else.
			q.Set(r.Pagination.PageSizeParam, strconv.Itoa(o.PageSize))
			c := *u
			c.RawQuery = q.Encode()
			u = &c
		}
		req.URL = u
		return req, nil
	}
	if o.Probe {
		p.Set(r.Pagination.PageSizeParam, 1)
	}
	r.sendSnapshot(p, st)
	req.URL = r.Upstream.ResolveURL(base, r.Config.List.Path, p.Query)
	if r.Config.List.QueryEncoding != "" {
		req.URL.RawQuery = transport.EncodeQuery(p.Query, transport.FormQuery(r.Config.List.QueryEncoding, ""))
	}
	switch p.Kind {
	case config.ListBody:
		req.Method = http.MethodPost
		req.Body, _ = jsonvalue.Encode(p.Body)
	case config.ListVariables:
		req.Method = http.MethodPost
		req.Body, _ = jsonvalue.Encode(map[string]any{"query": r.Config.List.GraphQL, "variables": p.Body})
	}
	return req, nil
}

// FilterForm is how one filter's value is sent upstream, or why not.
type FilterForm struct {
	// Sent is false when airlock applies the value alone.
	Sent bool
	// Why says, for a value not sent, what kept it back ("" when the
	// configuration declares no upstream form for it).
	Why string
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

// SendFilters sends the upstream-side filters, each only in a form the
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
func (r *List) SendFilters(p *Params, filter map[string]any) map[string]FilterForm {
	forms, _ := r.sendFilters(p, filter)
	return forms
}

// sendFilters is SendFilters, reporting too whether a Query's partition
// clause was placed (placeKeyCondition's answer).
func (r *List) sendFilters(p *Params, filter map[string]any) (map[string]FilterForm, bool) {
	forms := map[string]FilterForm{}
	var clauses []string
	all := bindings{names: map[string]any{}, values: map[string]any{}}
	var mango []map[string]any
	placed := true
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		fc := r.Config.Filters[name]
		form := r.FilterForm(name, fc, filter[name])
		forms[name] = form
		switch {
		case form.Sent && form.mango != nil:
			mango = append(mango, form.mango)
		case form.key:
			// placed by placeKeyCondition
		case form.Sent && fc.Expression != "":
			clauses = append(clauses, form.clause)
			maps.Copy(all.names, form.bound.names)
			maps.Copy(all.values, form.bound.values)
		case form.Sent:
			r.placeFilter(p, name, fc, filter[name])
		}
	}
	if x := r.Expression; x != nil && x.Language == config.LanguageMango {
		if len(mango) > 0 {
			base, _ := jsonvalue.Get(p.Body, x.Param)
			p.Set(x.Param, mangoSelector(base, mango))
		}
	} else if x != nil {
		if e := joinExpression(x, clauses); e != "" {
			p.Set(x.Param, e)
		}
		if x.Bound() {
			placeBindings(p, x, all)
		}
		placed = r.placeKeyCondition(p, forms)
	}
	return forms, placed
}

// filterValue is a filter's value as sent: a list of one is one value,
// and a declared null stand-in is null.
func (r *List) filterValue(name string, fc *config.FilterConfig, v any) any {
	fd, _ := r.Field(fc.FieldOf(name))
	if arr, ok := v.([]any); ok && len(arr) == 1 {
		v = arr[0]
	}
	if v != nil && config.IsNull(v, fd) {
		v = nil
	}
	return v
}

// FilterForm decides whether a filter value can be sent upstream.
func (r *List) FilterForm(name string, fc *config.FilterConfig, raw any) FilterForm {
	if fc == nil {
		return FilterForm{}
	}
	if fc.Search {
		return FilterForm{Sent: true} // a search is always the upstream's
	}
	fd, _ := r.Field(fc.FieldOf(name))
	if fd != nil && fd.Normalize != "" {
		return FilterForm{Why: "the field is normalized: airlock compares normalized values, the API may not"}
	}
	if fc.Expression != "" && r.Expression != nil && r.Expression.Language == config.LanguageMango {
		clause, why := r.mangoClause(fc, fd, r.filterValue(name, fc, raw))
		return FilterForm{Sent: why == "", Why: why, mango: clause}
	}
	if fc.Expression != "" && r.keyCondition().KeyRole(name) != "" {
		clause, b, why := r.keyClause(name, fc, fd, r.filterValue(name, fc, raw))
		return FilterForm{Sent: why == "", Why: why, clause: clause, bound: b, key: true}
	}
	if fc.Expression != "" && r.Expression.Bound() {
		clause, b, why := r.boundClause(name, fc, fd, r.filterValue(name, fc, raw))
		return FilterForm{Sent: why == "", Why: why, clause: clause, bound: b}
	}
	if fc.Expression != "" {
		clause, why := r.expressionClause(fc, fd, r.filterValue(name, fc, raw))
		return FilterForm{Sent: why == "", Why: why, clause: clause}
	}
	switch v := r.filterValue(name, fc, raw).(type) {
	case nil:
		return FilterForm{Sent: fc.NullParam != "" || fc.Null != nil}
	case []any:
		if fc.Multi == "" {
			return FilterForm{}
		}
		for _, e := range v {
			if e == nil || config.IsNull(e, fd) {
				return FilterForm{Why: "null among the values: only airlock can match it"}
			}
			if why := r.splits(fc, e); why != "" {
				return FilterForm{Why: why}
			}
		}
		if _, why, ok := r.listWire(fc, v); !ok {
			return FilterForm{Why: why}
		}
		return FilterForm{Sent: true}
	default:
		if fc.Param == "" {
			return FilterForm{}
		}
		if fc.Multi == "comma" && (fc.MultiParam == "" || fc.MultiParam == fc.Param) {
			// The API splits this parameter's value into a list.
			if why := r.splits(fc, v); why != "" {
				return FilterForm{Why: why}
			}
		}
		if _, why, ok := wireValue(config.ListKind(&r.Config), fc, v); !ok {
			return FilterForm{Why: why}
		}
		return FilterForm{Sent: true}
	}
}

// listWire is a list's values as placed in the request: one text joined
// by the separator for a comma list, else each value as wireValue writes
// it; ok is false, with why, when a value cannot be carried so.
func (r *List) listWire(fc *config.FilterConfig, v []any) ([]any, string, bool) {
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
func (r *List) splits(fc *config.FilterConfig, v any) string {
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

// placeFilter places a value FilterForm accepted.
func (r *List) placeFilter(p *Params, name string, fc *config.FilterConfig, raw any) {
	switch v := r.filterValue(name, fc, raw).(type) {
	case nil:
		if fc.NullParam != "" {
			p.Set(fc.Param, fc.NullParam)
			return
		}
		p.Set(fc.Null.Param, config.NormalizeValue(fc.Null.Value))
	case []any:
		param := fc.MultiParam
		if param == "" {
			param = fc.Param
		}
		w, _, _ := r.listWire(fc, v)
		switch fc.Multi {
		case "repeat":
			for _, e := range w {
				p.Add(param, jsonvalue.String(e))
			}
		case "comma":
			p.Set(param, w[0])
		case "array":
			p.Set(param, w)
		}
	default:
		w, _, _ := wireValue(p.Kind, fc, v)
		p.Set(fc.Param, w)
	}
}

// EnsurePIT opens the point in time of a search_after list before its
// first page (st holds it from then on); nothing for other lists.
func (r *List) EnsurePIT(ctx context.Context, src config.SourceConfig, st *State, requestID string) error {
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
func (r *List) openPIT(ctx context.Context, src config.SourceConfig, requestID string) (string, error) {
	pit := r.Pagination.PIT
	base := r.SourceBase(src)
	path, rawQuery, _ := strings.Cut(pit.Open, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", transport.BadResponse("pagination.pit.open has a query that does not parse")
	}
	resp, err := r.Upstream.Do(ctx, transport.Request{Method: http.MethodPost, URL: r.Upstream.ResolveURL(base, path, q), RequestID: requestID, Idempotent: true})
	if err != nil {
		return "", err
	}
	doc, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		return "", err
	}
	id, ok := jsonvalue.Get(doc, pit.ID)
	s, _ := id.(string)
	if !ok || s == "" {
		return "", transport.BadResponse("the point in time's answer has no id at %q", pit.ID)
	}
	return s, nil
}

// ParamNames lists every upstream parameter a filter may send, sorted.
func ParamNames(fc *config.FilterConfig) []string {
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

// OwnHeaders is a list's or a read's own headers (list.headers,
// get.headers), each replacing the upstream's of the same name; nil when
// there are none.
func OwnHeaders(hs map[string]string) http.Header {
	if len(hs) == 0 {
		return nil
	}
	out := http.Header{}
	for k, v := range hs {
		out.Set(k, v)
	}
	return out
}
