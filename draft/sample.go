package draft

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// SampleOptions say how to read a live list endpoint.
type SampleOptions struct {
	Options
	// CredentialEnv names the environment variable holding the
	// credential; its value is sent, and only its name is written.
	CredentialEnv    string
	CredentialHeader string  // default Authorization
	CredentialScheme *string // default Bearer
	// Getenv reads CredentialEnv; nil means no credential is sent.
	Getenv func(string) string
	// Client sends the requests; nil means a client with a 10s timeout.
	Client *http.Client
	// SigV4, when set, signs the sample with AWS Signature Version 4 from
	// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (read
	// through Getenv), and drafts that credential.
	SigV4 *SampleSigV4
	// Headers are sent with the sample, and drafted as the list's own
	// headers (DynamoDB names its operation in X-Amz-Target). A credential
	// among them is refused: it goes in CredentialEnv.
	Headers http.Header
	// Body, when set, is a JSON object: the sample is a POST with it (a
	// CouchDB _find, a search), and the draft's list posts it, without
	// its paging members.
	Body []byte
}

// maxSampleBody bounds each sampled body.
const maxSampleBody = 16 << 20

type sampled struct {
	url    *url.URL
	header http.Header
	doc    any
	// body is the JSON object the sample was posted with (nil: a GET).
	body map[string]any
}

// FromSample drafts a configuration from a live list endpoint: it reads
// the page at rawURL (and the next one, when the answer links to it) and
// infers the items path, fields and dialect from the bodies and headers.
// Only GET requests are sent, or the one POST opts.Body asks for.
func FromSample(ctx context.Context, rawURL string, opts SampleOptions) (*Draft, error) {
	u, err := url.Parse(rawURL)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("the sample URL %q is not an absolute http or https URL", rawURL)
	}
	if u.User != nil {
		return nil, errors.New("the sample URL must not carry credentials; use --credential-env")
	}
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "graphql") {
		// A GraphQL endpoint lists nothing by GET: its introspection does.
		return FromGraphQL(ctx, rawURL, opts)
	}
	for name := range opts.Headers {
		if config.CredentialHeader(name) {
			return nil, fmt.Errorf("--sample-header %s: a credential goes in --credential-env, never in the draft", name)
		}
	}
	first, err := fetch(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	pages := []sampled{first}
	if next := linkNext(first.header); next != "" {
		if nu, err := u.Parse(next); err == nil && nu.Host == u.Host && nu.Scheme == u.Scheme {
			if second, err := fetch(ctx, nu, opts); err == nil {
				pages = append(pages, second)
			}
		}
	}
	c := &draftConfig{source: u.Scheme + "://" + u.Host + u.Path, environment: environment(opts.Options)}
	c.upstream = upstreamDraft{name: snake(strings.Split(u.Hostname(), ".")[0]), baseURL: u.Scheme + "://" + u.Host, baseNote: "the sample's origin"}
	if c.upstream.name == "" || c.upstream.name == "127" || c.upstream.name == "localhost" {
		c.upstream.name = "api"
	}
	if opts.BaseURL != "" {
		c.upstream.baseURL, c.upstream.baseNote = strings.TrimRight(opts.BaseURL, "/"), ""
	}
	if opts.SigV4 != nil {
		c.upstream.cred = &credDraft{sigv4: opts.SigV4}
	} else if opts.CredentialEnv != "" {
		c.upstream.cred = &credDraft{env: opts.CredentialEnv, header: opts.CredentialHeader, scheme: opts.CredentialScheme}
	} else {
		c.upstream.credNote = "no credential was used for the sample: none is configured"
	}
	r, err := sampleResource(u, pages)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Headers)) {
		r.headers = append(r.headers, [2]string{http.CanonicalHeaderKey(name), opts.Headers.Get(name)})
	}
	if mt := sampleMediaType(first.header); mt != "" {
		c.upstream.jsonTypes = []string{mt}
	}
	if len(opts.Resources) > 0 {
		r.name = opts.Resources[0]
	}
	c.resources = []*resourceDraft{r}
	c.notes = append(c.notes, "Drafted from a sample of the live API: types, null stand-ins and timestamp layouts are what the sampled items showed.")
	return c.render(), nil
}

func fetch(ctx context.Context, u *url.URL, opts SampleOptions) (sampled, error) {
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	method, body, reqBody, err := sampleRequestBody(opts.Body)
	if err != nil {
		return sampled{}, err
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return sampled{}, fmt.Errorf("build the sample request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for name, vs := range opts.Headers {
		req.Header.Del(name)
		for _, v := range vs {
			req.Header.Add(name, v)
		}
	}
	if err := setCredential(req, opts); err != nil {
		return sampled{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return sampled{}, fmt.Errorf("%s %s: %w", method, redacted(u), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSampleBody+1))
	if err != nil {
		return sampled{}, fmt.Errorf("%s %s: read the body: %w", method, redacted(u), err)
	}
	if len(b) > maxSampleBody {
		return sampled{}, fmt.Errorf("%s %s: the body is larger than %d bytes", method, redacted(u), maxSampleBody)
	}
	if resp.StatusCode != http.StatusOK {
		return sampled{}, fmt.Errorf("%s %s: the upstream answered %d", method, redacted(u), resp.StatusCode)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return sampled{}, fmt.Errorf("%s %s: the body is not JSON", method, redacted(u))
	}
	return sampled{url: u, header: resp.Header, doc: doc, body: reqBody}, nil
}

// setCredential sends the credential the options name, when they name one.
func setCredential(req *http.Request, opts SampleOptions) error {
	if opts.SigV4 != nil {
		return signSample(req, opts)
	}
	if opts.CredentialEnv == "" || opts.Getenv == nil {
		return nil
	}
	secret := strings.TrimSpace(opts.Getenv(opts.CredentialEnv))
	if secret == "" {
		return fmt.Errorf("the credential variable %s is empty or unset", opts.CredentialEnv)
	}
	header, scheme := "Authorization", "Bearer"
	if opts.CredentialHeader != "" {
		header = opts.CredentialHeader
	}
	if opts.CredentialScheme != nil {
		scheme = *opts.CredentialScheme
	}
	req.Header.Set(header, strings.TrimSpace(scheme+" "+secret))
	return nil
}

func redacted(u *url.URL) string { return u.Scheme + "://" + u.Host + u.Path }

// linkNext is the rel="next" target of a Link header ("" when none).
func linkNext(h http.Header) string {
	for _, v := range h.Values("Link") {
		for _, part := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
			if ok && strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
				return strings.Trim(strings.TrimSpace(target), "<>")
			}
		}
	}
	return ""
}

func sampleResource(u *url.URL, pages []sampled) (*resourceDraft, error) {
	first := pages[0]
	itemsPath, ok := sampleItems(first.doc)
	if !ok {
		return nil, errors.New("the sample's body holds no array of items: sample a list endpoint")
	}
	r := &resourceDraft{path: u.Path, items: itemsPath}
	if itemsPath == "" {
		r.items, r.itemsNote = ".", "the body is the array"
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	r.name = snake(strings.TrimSuffix(segs[len(segs)-1], ".json"))
	if r.name == "" || r.name == "records" && len(segs) >= 2 {
		r.name = snake(segs[max(len(segs)-2, 0)])
	}
	var items []any
	for _, pg := range pages {
		raw, _ := jsonvalue.Get(pg.doc, itemsPath)
		list, _ := raw.([]any)
		items = append(items, list...)
	}
	if plain, ok := typedItems(items); ok {
		r.encoding, items = config.EncodingDynamoDB, plain
	}
	scalar := len(items) > 0
	for _, it := range items {
		if _, isObj := it.(map[string]any); isObj {
			scalar = false
		}
	}
	if scalar {
		r.scalarField = "name"
		r.fields = []*fieldDraft{{name: "name", typ: "string"}}
	} else {
		r.fields = distinctNames(sampleFields(items))
	}
	samplePagination(r, u, pages)
	r.idField, r.versionFld, r.versionNote = idAndVersion(r)
	if r.encoding != "" {
		r.idField = tableKey(first.doc)
	}
	r.filterNotes = []string{"a sample shows no filter parameters: add filters (with param where the API filters) by hand"}
	return r, nil
}

// sampleItems finds the list in a sampled body: the body itself when it
// is an array, else the array of objects that carry an id-like field (a
// page may also hold arrays of column names, facets or links), preferring
// the conventional names (data, items, results, ...). One envelope level
// ({data: {items: [...]}}) is searched.
func sampleItems(doc any) (string, bool) {
	if _, ok := doc.([]any); ok {
		return "", true
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return "", false
	}
	best, bestScore := "", -1
	consider := func(path string, v any) {
		list, ok := v.([]any)
		if !ok {
			return
		}
		score := arrayScore(list)
		name := path[strings.LastIndex(path, ".")+1:]
		for i, pref := range itemsNames {
			if name == pref {
				score += len(itemsNames) - i
			}
		}
		if strings.Contains(path, ".") {
			score-- // an envelope's array is second to one at the top
		}
		if score > bestScore || score == bestScore && path < best {
			best, bestScore = path, score
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		consider(k, m[k])
		if inner, ok := m[k].(map[string]any); ok && !hasSampleID(inner) {
			for _, k2 := range slices.Sorted(maps.Keys(inner)) {
				consider(k+"."+k2, inner[k2])
			}
		}
	}
	return best, bestScore >= 0
}

// arrayScore ranks a candidate items array: objects carrying an id-like
// field first, then other objects, then plain values (an empty array says
// nothing).
func arrayScore(list []any) int {
	objects, withID := 0, 0
	for _, it := range list {
		if obj, ok := it.(map[string]any); ok {
			objects++
			if hasSampleID(obj) {
				withID++
			}
		}
	}
	switch {
	case len(list) > 0 && withID == len(list):
		return 300
	case len(list) > 0 && objects == len(list):
		return 200
	case len(list) == 0:
		return 50
	}
	return 100
}

// sampleIDNames are the fields that hold an item's id in sampled answers.
var sampleIDNames = append([]string{"_id", "pk", "rowid", "uuid", "ID", "Id"}, idNames...)

func hasSampleID(obj map[string]any) bool {
	for _, n := range sampleIDNames {
		if v, ok := obj[n]; ok && v != nil {
			return true
		}
	}
	return false
}

// sampleFields infers each field from the values the sampled items hold.
func sampleFields(items []any) []*fieldDraft {
	type stats struct {
		kinds                      map[string]int
		elements                   map[string]int // array elements by kind
		nulls, empty, strs, nonInt int
		times                      map[string]int // layout -> values read
		present                    int
	}
	all := map[string]*stats{}
	for _, it := range items {
		m, _ := it.(map[string]any)
		for k, v := range m {
			st := all[k]
			if st == nil {
				st = &stats{kinds: map[string]int{}, times: map[string]int{}}
				all[k] = st
			}
			st.present++
			switch x := v.(type) {
			case nil:
				st.nulls++
			case string:
				st.kinds["string"]++
				st.strs++
				if x == "" {
					st.empty++
					continue
				}
				if _, err := time.Parse(time.RFC3339Nano, x); err == nil {
					st.times[""]++
				} else if l := guessSampleLayout(x); l != "" {
					st.times[l]++
				}
			case json.Number:
				st.kinds["number"]++
				if _, err := strconv.ParseInt(x.String(), 10, 64); err != nil {
					st.nonInt++
				}
			case bool:
				st.kinds["boolean"]++
			case []any:
				st.kinds["array"]++
				if st.elements == nil {
					st.elements = map[string]int{}
				}
				for _, e := range x {
					switch n := e.(type) {
					case string:
						st.elements["string"]++
					case json.Number:
						if _, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
							st.elements["integer"]++
						} else {
							st.elements["number"]++
						}
					case bool:
						st.elements["boolean"]++
					default:
						st.elements["other"]++
					}
				}
			case map[string]any:
				st.kinds["object"]++
			}
		}
	}
	var out []*fieldDraft
	for _, name := range slices.Sorted(maps.Keys(all)) {
		st := all[name]
		f := &fieldDraft{name: snake(name), typ: "string"}
		if f.name != name {
			f.path = name
		}
		kinds := slices.Sorted(maps.Keys(st.kinds))
		switch {
		case len(kinds) > 1:
			f.typ, f.note = "string", "the sample mixes "+strings.Join(kinds, " and ")+": the type is a guess"
		case len(kinds) == 0:
			f.note = "only null in the sample: the type is a guess"
		case kinds[0] == "number" && st.nonInt == 0:
			f.typ = "integer"
		default:
			f.typ = kinds[0]
		}
		if f.typ == "string" && st.strs-st.empty > 0 {
			for layout, n := range st.times {
				if n == st.strs-st.empty {
					f.typ, f.layout = "timestamp", layout
				}
			}
		}
		if ek := slices.Sorted(maps.Keys(st.elements)); f.typ == "array" && len(ek) == 1 && ek[0] != "other" {
			f.elements = ek[0]
		}
		f.nullable = st.nulls > 0 || st.present < len(items)
		if st.empty > 0 && st.nulls == 0 && st.strs > st.empty {
			f.nullable, f.nullValues = true, []string{""}
			f.note = fmt.Sprintf(`"" on %d of %d sampled items and null on none: read as "no value"`, st.empty, len(items))
		}
		if sensitiveName.MatchString(f.name) {
			f.sensitive, f.note = true, "sensitive, guessed from its name: never leaves airlock"
		}
		out = append(out, f)
	}
	return out
}

func guessSampleLayout(s string) string {
	for _, l := range []string{"2006-01-02 15:04:05.999Z07:00", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02T15:04:05"} {
		if _, err := time.Parse(l, s); err == nil {
			return l
		}
	}
	return ""
}

// samplePagination infers the dialect from the sampled answers: a Link
// header, has_more, a next cursor, a continue token, or page/offset
// numbers beside a total. The sample's own query parameters are kept in
// list.params (they shape the answer: _shape=objects, fields, expand),
// except those that page it, which the dialect sends.
func samplePagination(r *resourceDraft, u *url.URL, pages []sampled) {
	first := pages[0]
	if first.body != nil {
		samplePostPagination(r, first)
		return
	}
	q := u.Query()
	set := func(k, v string) { r.pagination = append(r.pagination, [2]string{k, v}) }
	sizeParam := firstQuery(q, pageSizeParams)
	paging := map[string]bool{"skipTotal": true}
	for _, list := range [][]string{pageSizeParams, pageParams, offsetParams, cursorParams} {
		for _, n := range list {
			paging[n] = true
		}
	}
	body, _ := first.doc.(map[string]any)
	has := func(k string) bool { _, ok := body[k]; return ok }
	str := func(path string) bool {
		v, ok := jsonvalue.Get(first.doc, path)
		_, isStr := v.(string)
		return ok && (isStr || v == nil)
	}
	size := func() {
		if sizeParam == "" {
			return
		}
		set("page_size_param", sizeParamValue(sizeParam))
		set("page_size", "100")
	}
	defer keepParams(r, q, paging)
	switch next := linkNext(first.header); {
	case next != "":
		set("dialect", "link")
		r.pageNote = append(r.pageNote, "the sample answered with Link: rel=\"next\"")
		nu, _ := u.Parse(next)
		for _, k := range slices.Sorted(maps.Keys(map[string][]string(q))) {
			if k == sizeParam || nu == nil || nu.Query().Get(k) == q.Get(k) {
				continue
			}
			r.params = append(r.params, [2]string{k, q.Get(k)})
			r.pageNote = append(r.pageNote, "the first page is named ("+k+"="+q.Get(k)+"), as in the sample: the Link headers may depend on it")
		}
		size()
		if first.header.Get("X-Total-Count") != "" {
			set("total_header", "X-Total-Count")
		}
	case body != nil && sampleNextCursor(first.doc) != "":
		// The body names its own next cursor (Slack's
		// response_metadata.next_cursor, Notion's next_cursor, a
		// next_page token): that, not the last item's id, continues it.
		np := sampleNextCursor(first.doc)
		set("dialect", "cursor")
		set("next_cursor", quote(np))
		if v, ok := jsonvalue.Get(first.doc, "has_more"); ok {
			if _, isBool := v.(bool); isBool {
				set("has_more", "has_more")
			}
		}
		switch path, param := cursorFromNextURL(first.doc); {
		case path == np:
			set("cursor_param", quote(param))
			paging[param] = true
			r.pageNote = append(r.pageNote, "the body's "+np+" is sent back as "+param+", as the body's own next URL does")
		case firstQuery(q, cursorParams) != "":
			set("cursor_param", quote(firstQuery(q, cursorParams)))
			r.pageNote = append(r.pageNote, "the body's "+np+" is sent back as "+firstQuery(q, cursorParams)+", the sample's own cursor parameter")
		default:
			set("cursor_param", quote(todo("the query parameter that takes "+np+"; the sample does not show it; probe --fix tries the usual names")))
		}
		size()
	case body != nil && has("has_more"):
		set("dialect", "cursor")
		set("has_more", "has_more")
		set("cursor_param", "starting_after")
		r.pageNote = append(r.pageNote, "has_more and no next cursor in the body: the cursor is the last item's id (Stripe-style)")
		size()
	case str("metadata.continue") || (body != nil && has("metadata") && str("metadata.resourceVersion")):
		set("dialect", "continue")
		size()
	case body != nil && firstKey(body, []string{"page", "_page"}) != "" && firstKey(body, sampleTotalPaths) != "":
		set("dialect", "page")
		set("page_param", quote(firstKey(body, []string{"page", "_page"})))
		if sp := firstKey(body, pageSizeParams); sp != "" {
			sizeParam = sp
		}
		size()
		set("total", quote(firstKey(body, sampleTotalPaths)))
		if q.Has("skipTotal") {
			r.pageNote = append(r.pageNote, "the sample sent skipTotal: it is left out, since the total then reads -1")
		}
	case body != nil && firstKey(body, []string{"offset", "skip", "start"}) != "" && firstKey(body, sampleTotalPaths) != "":
		// The answer echoes its position beside a total (CouchDB's
		// _all_docs: offset and total_rows). The member's name is the
		// answer's, not the parameter's (CouchDB reads skip): only the
		// sample's own query names the parameter.
		echo := firstKey(body, []string{"offset", "skip", "start"})
		set("dialect", "offset")
		if op := firstQuery(q, offsetParams); op != "" {
			set("offset_param", quote(op))
		} else {
			set("offset_param", quote(todo("the query parameter that sets the answer's "+echo+"; the sample does not send one; probe --fix tries offset, skip, start")))
		}
		if sizeParam == "" {
			sizeParam = "limit"
		}
		size()
		set("total", quote(firstKey(body, sampleTotalPaths)))
	default:
		if path, param := cursorFromNextURL(first.doc); path != "" {
			paging[param] = true
			set("dialect", "cursor")
			set("next_cursor", quote(path))
			set("cursor_param", quote(param))
			r.pageNote = append(r.pageNote, "a next token in the body ("+path+"), sent back as "+param+", as the answer's own next URL does")
			size()
			return
		}
		if np := nextURLPath(first.doc, u); np != "" {
			set("dialect", "next_url")
			set("next", quote(np))
			r.pageNote = append(r.pageNote, "the body names the next page's URL at "+np+" (followed on the same host only)")
			size()
			if t := firstKey(body, append([]string{"@odata.count", "totalSize"}, totalPaths...)); t != "" {
				set("total", quote(t))
			} else {
				set("total", "none")
			}
			if v, ok := jsonvalue.Get(first.doc, "done"); ok {
				if _, isBool := v.(bool); isBool {
					set("is_last", "done")
				}
			}
			if nu := nextURLOf(first.doc, np, u); nu != nil {
				for k := range nu.Query() {
					if !q.Has(k) || q.Get(k) != nu.Query().Get(k) && k != sizeParam {
						paging[k] = true // the position the next URL carries
					}
				}
			}
			return
		}

		for _, np := range nextPaths {
			if v, ok := jsonvalue.Get(first.doc, np); ok {
				if _, isStr := v.(string); isStr || v == nil {
					set("dialect", "cursor")
					set("next_cursor", quote(np))
					set("cursor_param", quote(config.Todo("the query parameter that takes the next cursor")))
					size()
					return
				}
			}
		}
		set("dialect", quote(config.Todo("one of cursor, link, offset, page, continue, next_url, search_after; the sample carried no pagination signal")))
		r.pageNote = append(r.pageNote, "the sample showed no next link, cursor, continue token or total: sample a URL that asks for a page (json-server: ?_page=1&_limit=10)")
	}
}

// sampleNextCursorPaths are where a body names the token of its next
// page.
var sampleNextCursorPaths = []string{"next_cursor", "nextCursor", "response_metadata.next_cursor", "meta.next_cursor", "pagination.next_cursor",
	"next_page_token", "nextPageToken", "next_page", "nextPage", "next_token", "nextToken", "cursor.next", "meta.next_token", "continuation_token", "continuationToken"}

// sampleNextCursor is the path of the body's next cursor: a token that
// is not a URL (or null, on a last page); "" when it names none.
func sampleNextCursor(doc any) string {
	for _, np := range sampleNextCursorPaths {
		v, ok := jsonvalue.Get(doc, np)
		if !ok {
			continue
		}
		switch x := v.(type) {
		case nil:
			return np
		case string:
			if !strings.Contains(x, "://") && !strings.HasPrefix(x, "/") {
				return np
			}
		}
	}
	return ""
}

// keepParams puts the sample's query parameters that do not page the
// list into list.params, after those the dialect named.
func keepParams(r *resourceDraft, q url.Values, paging map[string]bool) {
	named := map[string]bool{}
	for _, p := range r.params {
		named[p[0]] = true
	}
	var kept []string
	for _, k := range slices.Sorted(maps.Keys(map[string][]string(q))) {
		if paging[k] || named[k] || len(q[k]) != 1 {
			continue
		}
		r.params = append(r.params, [2]string{k, q.Get(k)})
		kept = append(kept, k)
	}
	if len(kept) > 0 {
		r.pageNote = append(r.pageNote, "the sample's own parameters ("+strings.Join(kept, ", ")+") are kept in list.params; those that page the list are the dialect's")
	}
}

func firstQuery(q url.Values, names []string) string {
	for _, n := range names {
		if q.Has(n) {
			return n
		}
	}
	return ""
}

// nextURLPaths are where answers put the next page's URL: Django REST
// Framework, Microsoft Graph, Salesforce, Twilio, JSON:API and HAL.
var nextURLPaths = []string{"next", "@odata.nextLink", "nextRecordsUrl", "next_page_uri", "next_page_url", "nextPageUrl", "next_url",
	"links.next", "_links.next.href", "paging.next", "pagination.next_url", "meta.next"}

// sampleTotalPaths are where an answer holds its total: the OpenAPI
// corpus's names and CouchDB's total_rows.
var sampleTotalPaths = append(slices.Clone(totalPaths), "total_rows", "totalRows", "total_results", "totalResults")

// nextURLPath is the path at which the body holds the next page's URL (a
// URL on the sample's host, absolute or from its root), or null on a page
// that also names a previous one; "" when it holds none.
func nextURLPath(doc any, sample *url.URL) string {
	for _, np := range nextURLPaths {
		v, ok := jsonvalue.Get(doc, np)
		if !ok {
			continue
		}
		if v == nil {
			// DRF's last (and only) page: next null beside previous.
			if _, prev := jsonvalue.Get(doc, strings.Replace(np, "next", "previous", 1)); prev && np == "next" {
				return np
			}
			continue
		}
		if nextURLOf(doc, np, sample) != nil {
			return np
		}
	}
	return ""
}

// nextURLOf parses the next URL at np when it is one on the sample's host.
func nextURLOf(doc any, np string, sample *url.URL) *url.URL {
	v, _ := jsonvalue.Get(doc, np)
	s, ok := v.(string)
	// A URL: absolute, from the host's root, or relative to the sample's
	// path with a query (OData's "Accounts?$skiptoken=100", RFC 3986). A
	// bare word is a token, not a URL.
	if !ok || !(strings.Contains(s, "://") || strings.HasPrefix(s, "/") || strings.Contains(s, "?")) {
		return nil
	}
	nu, err := sample.Parse(s)
	if err != nil || nu.Host != sample.Host {
		return nil
	}
	return nu
}

// nextTokenPaths are where answers put the token of the next page.
var nextTokenPaths = []string{"next", "next_token", "nextToken", "cursor", "next_page", "nextPage"}

// cursorFromNextURL finds a next token in the body that the body's own
// next URL sends back as a query parameter (Datasette: next is the token,
// next_url carries it as _next): the path of the token and the parameter.
// A token that is itself a URL is not a cursor.
func cursorFromNextURL(doc any) (path, param string) {
	body, ok := doc.(map[string]any)
	if !ok {
		return "", ""
	}
	for _, np := range append(append([]string(nil), nextPaths...), nextTokenPaths...) {
		v, _ := jsonvalue.Get(doc, np)
		token, ok := v.(string)
		if !ok || token == "" || strings.Contains(token, "://") || strings.HasPrefix(token, "/") {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(body)) {
			raw, ok := body[k].(string)
			if !ok || k == np {
				continue
			}
			nu, err := url.Parse(raw)
			if err != nil || nu.RawQuery == "" {
				continue
			}
			for _, qk := range slices.Sorted(maps.Keys(nu.Query())) {
				if nu.Query().Get(qk) == token {
					return np, qk
				}
			}
		}
	}
	return "", ""
}

func firstKey(m map[string]any, names []string) string {
	for _, n := range names {
		if _, ok := m[n]; ok {
			return n
		}
	}
	return ""
}

// Inferred is what one live answer of a list endpoint shows: where its
// items are and how it pages, as init --sample would draft them. probe
// --fix reads it to propose a dialect the live API then has to prove.
type Inferred struct {
	// Items is the items path ("." for a body that is the array).
	Items string
	// Pagination holds the pagination keys in order, each value written
	// as YAML; a value may be a TODO the answer could not settle.
	Pagination [][2]string
	// Params are query parameters the dialect needs in list.params.
	Params [][2]string
	// IDField is the field holding each item's id (a TODO when none).
	IDField string
	// Notes say how each was read.
	Notes []string
}

// InferFromAnswer reads the items path and the dialect from one answer
// of a list endpoint (asked for at u, without paging parameters).
func InferFromAnswer(u *url.URL, header http.Header, body any) (*Inferred, error) {
	r, err := sampleResource(u, []sampled{{url: u, header: header, doc: body}})
	if err != nil {
		return nil, err
	}
	return &Inferred{Items: r.items, Pagination: r.pagination, Params: r.params, IDField: r.idField, Notes: r.pageNote}, nil
}
