package draft

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/airlock-mcp/airlock/config"
)

// FromOpenAPI drafts a configuration from an OpenAPI 3.0 or 3.1 document
// (YAML or JSON), or a Swagger 2.0 one converted to 3.0. A document with
// flaws still yields a draft of what can be read: each flaw is a warning
// (Draft.Warnings, and a comment in the draft). External $refs to files
// resolve against opts.Location; to URLs, only with opts.RemoteRefs.
func FromOpenAPI(doc []byte, opts Options) (*Draft, error) {
	t, warnings, err := loadDocument(doc, opts)
	if err != nil {
		return nil, err
	}
	if t.Paths == nil || t.Paths.Len() == 0 {
		return nil, errors.New("the openapi document has no paths")
	}
	c := &draftConfig{source: opts.Source, environment: environment(opts), warnings: warnings}
	c.upstream = upstreamFromDoc(t, opts)
	names := map[string]bool{}
	paths := t.Paths.Keys()
	sort.Strings(paths)
	for _, p := range paths {
		item := t.Paths.Value(p)
		if item == nil || item.Get == nil || strings.HasSuffix(p, "}") {
			continue
		}
		r := listResource(t, p, item)
		if r == nil {
			continue
		}
		base := r.name
		for i := 2; names[r.name]; i++ {
			r.name = fmt.Sprintf("%s_%d", base, i)
		}
		names[r.name] = true
		if !wanted(opts.Resources, r.name) {
			continue
		}
		c.resources = append(c.resources, r)
		c.actions = append(c.actions, itemActions(t, p, r)...)
	}
	if len(c.resources) == 0 {
		if len(opts.Resources) > 0 {
			return nil, fmt.Errorf("no list operation drafts a resource named %s", strings.Join(opts.Resources, ", "))
		}
		return nil, errors.New("the openapi document has no list operation (a GET answering a JSON array of objects)")
	}
	for _, want := range opts.Resources {
		if !names[want] {
			return nil, fmt.Errorf("no list operation drafts a resource named %q", want)
		}
	}
	sort.Slice(c.resources, func(i, j int) bool { return c.resources[i].name < c.resources[j].name })
	sort.SliceStable(c.actions, func(i, j int) bool { return c.actions[i].name < c.actions[j].name })
	taken := map[string]bool{}
	for _, a := range c.actions {
		base := a.name
		for i := 2; taken[a.name]; i++ {
			a.name = fmt.Sprintf("%s_%d", base, i)
		}
		taken[a.name] = true
	}
	return c.render(), nil
}

func environment(opts Options) string {
	if opts.Environment != "" {
		return opts.Environment
	}
	return config.Todo("name this deployment, e.g. prod or staging")
}

func wanted(only []string, name string) bool {
	if len(only) == 0 {
		return true
	}
	for _, n := range only {
		if n == name {
			return true
		}
	}
	return false
}

func upstreamFromDoc(t *openapi3.T, opts Options) upstreamDraft {
	u := upstreamDraft{name: "api"}
	if t.Info != nil {
		if n := snake(strings.TrimSuffix(strings.TrimSpace(t.Info.Title), " API")); n != "" {
			u.name = strings.Join(firstN(strings.Split(n, "_"), 3), "_")
		}
	}
	switch {
	case opts.BaseURL != "":
		u.baseURL = opts.BaseURL
	case len(t.Servers) > 0 && t.Servers[0] != nil:
		s := t.Servers[0]
		base := s.URL
		for name, v := range s.Variables {
			if v != nil {
				base = strings.ReplaceAll(base, "{"+name+"}", v.Default)
			}
		}
		if pu, err := url.Parse(base); err == nil && pu.IsAbs() && (pu.Scheme == "http" || pu.Scheme == "https") {
			u.baseURL = strings.TrimRight(base, "/")
			u.baseNote = "the document's first server"
		} else {
			u.baseURL = config.Todo("the API's absolute base URL; the document's server is relative")
		}
	default:
		u.baseURL = config.Todo("the API's base URL; the document names no server")
	}
	u.cred, u.credNote = credentialFromDoc(t, u.name)
	return u
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// credentialFromDoc reads the first security requirement's scheme (see
// credentialFromScheme).
func credentialFromDoc(t *openapi3.T, upstreamName string) (*credDraft, string) {
	if t.Components == nil || len(t.Components.SecuritySchemes) == 0 {
		return nil, "the document declares no security scheme: no credential is sent"
	}
	var name string
	if len(t.Security) > 0 {
		for _, req := range t.Security {
			keys := make([]string, 0, len(req))
			for k := range req {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(keys) > 0 {
				name = keys[0]
				break
			}
		}
	}
	if name == "" {
		keys := make([]string, 0, len(t.Components.SecuritySchemes))
		for k := range t.Components.SecuritySchemes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		name = keys[0]
	}
	ref := t.Components.SecuritySchemes[name]
	if ref == nil || ref.Value == nil {
		return nil, ""
	}
	return credentialFromScheme(name, ref.Value, upstreamName)
}

// queryParams are the list operation's query parameters, path-level ones
// included, by name.
func queryParams(item *openapi3.PathItem, op *openapi3.Operation) map[string]*openapi3.Parameter {
	out := map[string]*openapi3.Parameter{}
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			if ref != nil && ref.Value != nil && ref.Value.In == openapi3.ParameterInQuery {
				out[ref.Value.Name] = ref.Value
			}
		}
	}
	return out
}

func headerParams(item *openapi3.PathItem, op *openapi3.Operation) map[string]*openapi3.Parameter {
	out := map[string]*openapi3.Parameter{}
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			if ref != nil && ref.Value != nil && ref.Value.In == openapi3.ParameterInHeader {
				out[strings.ToLower(ref.Value.Name)] = ref.Value
			}
		}
	}
	return out
}

var listPrefix = regexp.MustCompile(`^(list|get|find|search|all)_`)

// resourceName names a list operation's resource: its operationId without
// a list verb, else the path's last segment.
//
// An operationId that merely mentions the path's collection
// (issues/list-for-repo, listAppsV1DeploymentForAllNamespaces) gives way
// to the collection's name.
func resourceName(p string, op *openapi3.Operation) string {
	last := "items"
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if !strings.HasPrefix(segs[i], "{") && segs[i] != "" {
			last = snake(segs[i])
			break
		}
	}
	if op.OperationID == "" {
		return last
	}
	n := strings.TrimSuffix(listPrefix.ReplaceAllString(snake(op.OperationID), ""), "_list")
	if n == "" || n != last && strings.Contains("_"+n+"_", "_"+singular(last)) {
		return last
	}
	return n
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// listResource drafts the resource of one list operation, or nil when the
// operation does not answer a list.
func listResource(t *openapi3.T, p string, item *openapi3.PathItem) *resourceDraft {
	op := item.Get
	resp := okResponse(op)
	if resp == nil {
		return nil
	}
	body := mediaSchema(resp.Content)
	itemsPath, itemSchema, ok := findItems(body)
	if !ok {
		return nil
	}
	r := &resourceDraft{name: resourceName(p, op), items: itemsPath}
	r.description = firstSentence(op.Summary)
	if r.description == "" {
		r.description = firstSentence(op.Description)
	}
	r.path = pathParam.ReplaceAllStringFunc(p, func(m string) string {
		return config.Todo("a value for the path parameter " + strings.Trim(m, "{}"))
	})
	if itemsPath == "" {
		r.items = "."
		r.itemsNote = "the body is the array"
	}
	if itemSchema != nil && !isType(itemSchema, "object") && len(itemSchema.Properties) == 0 {
		r.scalarField = "name"
		r.fields = []*fieldDraft{{name: "name", typ: scalarType(itemSchema)}}
	} else {
		r.fields = fieldsOf(itemSchema)
	}
	r.fields = distinctNames(r.fields)
	q := queryParams(item, op)
	headers := map[string]bool{}
	for h := range resp.Headers {
		headers[strings.ToLower(h)] = true
	}
	used := paginate(r, q, headers, body)
	r.idField, r.versionFld, r.versionNote = idAndVersion(r)
	r.filters, r.filterNotes = filtersOf(r, q, used)
	if get := t.Paths.Value(p + "/{" + itemParam(t, p) + "}"); get != nil && get.Get != nil && itemParam(t, p) != "" {
		r.get = &getDraft{path: p + "/{{id}}"}
		if gr := okResponse(get.Get); gr != nil {
			if gr.Headers["ETag"] != nil || gr.Headers["Etag"] != nil || gr.Headers["etag"] != nil {
				r.notes = append(r.notes, "GET by id declares an ETag: conditional writes can use If-Match")
			}
			r.get.item, r.get.note = itemPath(mediaSchema(gr.Content), r)
		}
	}
	return r
}

// itemParam is the name of the one path parameter that follows the list
// path in an item path (/things/{id}), or "".
func itemParam(t *openapi3.T, p string) string {
	prefix := p + "/{"
	var found []string
	for _, k := range t.Paths.Keys() {
		if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, "}") && !strings.Contains(k[len(prefix):], "/") {
			found = append(found, strings.TrimSuffix(k[len(prefix):], "}"))
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

func firstSentence(s string) string {
	s = strings.TrimSpace(strings.Split(strings.TrimSpace(s), "\n")[0])
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// itemsNames are preferred names of a list body's items array, in order.
var itemsNames = []string{"data", "items", "results", "records", "entries", "values", "repositories"}

var knownFormats = map[string]bool{"date": true, "email": true, "uri": true, "uuid": true, "ipv4": true, "ipv6": true, "hostname": true}

var sensitiveName = regexp.MustCompile(`(^|_)(email|password|secret|token|phone|ssn|api_key|apikey|private_key)($|_)`)

// Query parameter names per role, in order of preference.
var (
	pageSizeParams = []string{"per_page", "perPage", "page_size", "pageSize", "_limit", "limit", "_size", "size", "page[size]", "pagesize", "page_limit", "pageLimit", "n", "max_results", "maxResults", "$top"}
	pageParams     = []string{"page", "_page", "page_number", "pageNumber", "page[number]"}
	offsetParams   = []string{"offset", "_start", "skip", "start", "$skip", "from", "_offset"}
	cursorParams   = []string{"cursor", "page_token", "pageToken", "after", "next_cursor", "next", "_next", "continuation_token", "continuationToken", "page[after]", "page[cursor]", "starting_after", "next_token", "nextToken", "$skiptoken", "marker", "last"}
	totalPaths     = []string{"total", "totalItems", "total_count", "totalCount", "total_items", "count", "meta.total", "pagination.total"}
	nextPaths      = []string{"next_cursor", "nextCursor", "next_page_token", "nextPageToken", "response_metadata.next_cursor", "meta.next_cursor", "pagination.next_cursor", "cursor.next"}
	// metaParams shape the answer rather than select items.
	metaParams = map[string]bool{"sort": true, "order": true, "order_by": true, "orderBy": true, "fields": true, "expand": true, "include": true, "select": true,
		"q": true, "search": true, "filter": true, "skipTotal": true, "resourceVersion": true, "resourceVersionMatch": true, "watch": true,
		"allowWatchBookmarks": true, "timeoutSeconds": true, "sendInitialEvents": true, "labelSelector": true, "fieldSelector": true, "pretty": true,
		"ending_before": true, "before": true, "direction": true, "_sort": true, "_order": true, "_embed": true, "_expand": true, "_end": true}
)

func firstParam(q map[string]*openapi3.Parameter, names []string) string {
	for _, n := range names {
		if q[n] != nil {
			return n
		}
	}
	return ""
}

// paginate detects the pagination dialect from the list operation's query
// parameters, response headers and body, writes it into r and returns the
// query parameters it consumed.
func paginate(r *resourceDraft, q map[string]*openapi3.Parameter, headers map[string]bool, body *openapi3.Schema) map[string]bool {
	used := map[string]bool{}
	size := firstParam(q, pageSizeParams)
	set := func(k, v string) { r.pagination = append(r.pagination, [2]string{k, v}) }
	pageSize := func(min int) {
		if size == "" {
			return
		}
		used[size] = true
		set("page_size_param", quote(size))
		n := 100
		if ps := resolve(q[size].Schema); ps != nil && ps.Max != nil && int(*ps.Max) < n {
			n = int(*ps.Max)
		}
		set("page_size", fmt.Sprint(max(n, min)))
	}
	total := func() {
		if headers["x-total-count"] {
			set("total_header", "X-Total-Count")
			return
		}
		for _, tp := range totalPaths {
			if s := schemaAt(body, tp); isType(s, "integer") || isType(s, "number") {
				set("total", quote(tp))
				return
			}
		}
		set("total", quote(config.Todo("the body path of the total count, or remove it: without one only an empty page ends the list")))
	}
	if q["skipTotal"] != nil {
		r.pageNote = append(r.pageNote, "never send skipTotal: the total then reads -1 and proves nothing")
	}
	cont := schemaAt(body, "metadata.continue")
	hasMore := schemaAt(body, "has_more")
	var next string
	for _, np := range nextPaths {
		if isType(schemaAt(body, np), "string") {
			next = np
			break
		}
	}
	cursor := firstParam(q, cursorParams)
	switch {
	case q["continue"] != nil && cont != nil:
		used["continue"] = true
		set("dialect", "continue")
		r.pageNote = append(r.pageNote, "Kubernetes-style: continue tokens over one resourceVersion, a real snapshot")
		pageSize(1)
	case isType(hasMore, "boolean") && (q["starting_after"] != nil || q["after"] != nil):
		cp := "starting_after"
		if q[cp] == nil {
			cp = "after"
		}
		used[cp] = true
		set("dialect", "cursor")
		set("has_more", "has_more")
		set("cursor_param", cp)
		r.pageNote = append(r.pageNote, "has_more with the last item's id as the cursor (Stripe-style)")
		pageSize(1)
	case next != "" && cursor != "":
		used[cursor] = true
		set("dialect", "cursor")
		set("next_cursor", quote(next))
		set("cursor_param", quote(cursor))
		r.pageNote = append(r.pageNote, "a next cursor in the body (Slack-style)")
		pageSize(1)
	case headers["link"]:
		set("dialect", "link")
		r.pageNote = append(r.pageNote, "follows Link: rel=\"next\" on the same host")
		if pp := firstParam(q, pageParams); pp != "" {
			used[pp] = true
			r.params = append(r.params, [2]string{pp, "1"})
			r.pageNote = append(r.pageNote, "the first page is named ("+pp+"=1): some APIs send Link headers only when a page is asked for")
		}
		pageSize(1)
		if headers["x-total-count"] {
			set("total_header", "X-Total-Count")
		}
	case firstParam(q, pageParams) != "" && size != "":
		pp := firstParam(q, pageParams)
		used[pp] = true
		set("dialect", "page")
		set("page_param", quote(pp))
		pageSize(1)
		total()
	case firstParam(q, offsetParams) != "" && size != "":
		op := firstParam(q, offsetParams)
		used[op] = true
		set("dialect", "offset")
		set("offset_param", quote(op))
		pageSize(2)
		total()
	default:
		set("dialect", quote(config.Todo("one of cursor, link, offset, page, continue; the document shows no pagination parameters")))
		r.pageNote = append(r.pageNote, "no pagination was recognised: an API that answers everything at once has no end signal to prove")
	}
	return used
}

var idNames = []string{"id", "uid", "metadata_uid", "key", "name", "metadata_name", "slug"}

var versionNames = []string{"version", "etag", "_etag", "metadata_resource_version", "resource_version", "lock_version", "rev", "_rev"}

var updatedNames = []string{"updated_at", "updated", "modified_at", "modified", "last_modified", "metadata_generation"}

func idAndVersion(r *resourceDraft) (id, version, note string) {
	has := map[string]*fieldDraft{}
	for _, f := range r.fields {
		has[f.name] = f
	}
	for _, n := range idNames {
		if has[n] != nil {
			id = n
			break
		}
	}
	if id == "" {
		id = config.Todo("the field holding each item's stable id")
	}
	for _, n := range versionNames {
		if has[n] != nil {
			return id, n, "changes on every write: conditional writes compare it"
		}
	}
	for _, n := range updatedNames {
		if has[n] != nil {
			return id, n, "no version field: this timestamp, which changes on every write, stands in"
		}
	}
	return id, "", "no version field: writes re-read and compare (conditional: reread)"
}

// filtersOf drafts a filter for each query parameter that names an item
// field, and airlock-only filters for the other enum and boolean fields.
func filtersOf(r *resourceDraft, q map[string]*openapi3.Parameter, used map[string]bool) ([]*filterDraft, []string) {
	fields := map[string]*fieldDraft{}
	for _, f := range r.fields {
		fields[f.name] = f
	}
	var out []*filterDraft
	var notes []string
	names := make([]string, 0, len(q))
	for n := range q {
		names = append(names, n)
	}
	sort.Strings(names)
	taken := map[string]bool{}
	for _, n := range names {
		if used[n] || metaParams[n] {
			continue
		}
		f := fields[snake(n)]
		if f == nil {
			f = fields[strings.TrimSuffix(snake(n), "_id")]
		}
		if f == nil || f.sensitive || taken[f.name] {
			notes = append(notes, "query parameter "+n+" names no item field: not drafted as a filter")
			continue
		}
		taken[f.name] = true
		fd := &filterDraft{name: f.name, param: n}
		p := q[n]
		if ps := resolve(p.Schema); isType(ps, "array") {
			explode := p.Style == "" || p.Style == "form"
			if p.Explode != nil {
				explode = *p.Explode
			}
			switch {
			case p.Style != "" && p.Style != "form":
				fd.note = "a " + p.Style + " list is not a form airlock sends: lists are applied by airlock"
			case explode:
				fd.multi, fd.note = "repeat", "a list as ?"+n+"=a&"+n+"=b (style form, explode)"
			default:
				fd.multi, fd.note = "comma", "a list as ?"+n+"=a,b (style form, explode false)"
			}
		}
		if f.typ == "array" {
			fd.op = "contains"
		}
		out = append(out, fd)
	}
	for _, f := range r.fields {
		if taken[f.name] || f.sensitive || len(f.enum) == 1 || (len(f.enum) == 0 && f.typ != "boolean") {
			continue
		}
		out = append(out, &filterDraft{name: f.name, note: "applied by airlock alone"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	if len(out) > 0 {
		notes = append(notes, "every filter is re-checked by airlock on every item; a param is only sent as the API declares it")
	}
	return out, notes
}

// envelopeNames are the members an API wraps one item in, in order of
// preference.
var envelopeNames = []string{"data", "item", "result", "record", "resource", "object"}

// itemPath finds where the answer to GET by id holds the item: the body
// itself when it carries the id field, else the member that does ({data:
// {...}}), else the member the list wraps its items in. note says how it
// was found.
func itemPath(body *openapi3.Schema, r *resourceDraft) (path, note string) {
	if body == nil {
		return "", ""
	}
	id := r.idField
	if config.IsTodo(id) {
		id = "id"
	}
	if _, ok := body.Properties[id]; ok || len(body.Properties) == 0 {
		return "", ""
	}
	for _, name := range append(append([]string(nil), envelopeNames...), sortedProps(body)...) {
		inner := resolve(body.Properties[name])
		if inner == nil {
			continue
		}
		if _, ok := inner.Properties[id]; ok {
			return name, "the answer wraps the item in " + name
		}
	}
	envelope, _, _ := strings.Cut(r.items, ".")
	if inner := resolve(body.Properties[envelope]); envelope != "" && envelope != "." && inner != nil && isType(inner, "object") {
		return envelope, "the answer wraps the item in " + envelope + ", as the list wraps its items"
	}
	return "", ""
}
