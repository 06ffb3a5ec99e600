package draft

import (
	"fmt"
	"regexp"
	"slices"
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
//
// It drafts the list operations opts.Resources and opts.Tags name; without
// them, the few the document describes best (MaxDefaultResources), and
// the draft lists every other list operation it found.
func FromOpenAPI(doc []byte, opts Options) (*Draft, error) {
	t, warnings, err := loadDocument(doc, opts)
	if err != nil {
		return nil, err
	}
	return fromDocument(t, warnings, opts)
}

// fromDocument drafts from a loaded document.
func fromDocument(t *openapi3.T, warnings []string, opts Options) (*Draft, error) {
	c := &draftConfig{source: opts.Source, environment: environment(opts), warnings: warnings}
	c.upstream = upstreamFromDoc(t, opts)
	var found []*listOp
	names := map[string]bool{}
	var paths []string
	if t.Paths != nil {
		paths = t.Paths.Keys()
	}
	sort.Strings(paths)
	for _, p := range paths {
		item := t.Paths.Value(p)
		if item == nil || item.Get == nil || strings.HasSuffix(p, "}") || strings.HasSuffix(p, "})") || strings.HasSuffix(p, "}')") {
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
		found = append(found, &listOp{path: p, item: item, r: r})
	}
	chosen, err := choose(found, opts)
	if err != nil {
		return nil, err
	}
	var ops []*openapi3.Operation
	for _, lo := range chosen {
		c.resources = append(c.resources, lo.r)
		c.actions = append(c.actions, itemActions(t, lo.path, lo.r)...)
		ops = append(ops, lo.item.Get)
	}
	c.upstream.cred, c.upstream.credNote = credentialFromDoc(t, c.upstream.name, ops)
	if len(c.resources) == 0 {
		c.resources = []*resourceDraft{noListResource(t, paths)}
	}
	hoistParent(c)
	c.notes = append(c.notes, foundNotes(found, chosen, opts)...)
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

// hoistParent moves a parent every drafted path shares, up to its last
// path parameter (/v2.1/accounts/{accountId}), into the base URL: the
// parameter is then one TODO, decided once, instead of one per path.
func hoistParent(c *draftConfig) {
	if config.IsTodo(c.upstream.baseURL) {
		return
	}
	var all []*string
	for _, r := range c.resources {
		all = append(all, &r.path)
		if r.get != nil {
			all = append(all, &r.get.path)
		}
	}
	for _, a := range c.actions {
		all = append(all, &a.path)
	}
	var prefix []string
	for i, p := range all {
		segs := strings.Split(strings.TrimPrefix(*p, "/"), "/")
		if i == 0 {
			prefix = segs
			continue
		}
		n := 0
		for n < len(prefix) && n < len(segs) && prefix[n] == segs[n] {
			n++
		}
		prefix = prefix[:n]
	}
	last := -1
	for i, seg := range prefix {
		if config.IsTodo(seg) {
			last = i
		}
	}
	if last < 0 {
		return
	}
	prefix = prefix[:last+1]
	head := "/" + strings.Join(prefix, "/")
	for _, p := range all {
		if len(*p) <= len(head) || (*p)[len(head)] != '/' {
			return // a path that is the parent itself stays whole
		}
	}
	for _, p := range all {
		*p = (*p)[len(head):]
	}
	c.upstream.baseURL += head
	c.upstream.baseNote = strings.TrimPrefix(c.upstream.baseNote+"; ", "; ") + "with the parent every drafted path shares: its parameter is decided once, here"
}

// MaxDefaultResources is how many resources a draft holds when the user
// names none: the list operations the document describes best.
const MaxDefaultResources = 5

// listOp is a list operation found in the document.
type listOp struct {
	path string
	item *openapi3.PathItem
	r    *resourceDraft
}

// choose picks the list operations to draft: those opts names (by
// resource name or list path) or tags, else the best ranked few.
func choose(found []*listOp, opts Options) ([]*listOp, error) {
	if len(opts.Resources) == 0 && len(opts.Tags) == 0 {
		ranked := slices.Clone(found)
		sort.SliceStable(ranked, func(i, j int) bool { return rank(ranked[i]) > rank(ranked[j]) })
		return ranked[:min(len(ranked), MaxDefaultResources)], nil
	}
	var out []*listOp
	for _, want := range opts.Resources {
		var hit *listOp
		for _, lo := range found {
			if lo.r.name == want || lo.path == want || strings.HasPrefix(want, "/") && strings.TrimSuffix(want, "/") == strings.TrimSuffix(lo.path, "/") {
				hit = lo
				break
			}
		}
		if hit == nil {
			return nil, fmt.Errorf("no list operation drafts a resource named or at %q%s", want, closest(found, want))
		}
		if !slices.Contains(out, hit) {
			out = append(out, hit)
		}
	}
	for _, tag := range opts.Tags {
		n := 0
		for _, lo := range found {
			for _, tg := range lo.item.Get.Tags {
				if strings.EqualFold(tg, tag) {
					n++
					if !slices.Contains(out, lo) {
						out = append(out, lo)
					}
					break
				}
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("no list operation is tagged %q", tag)
		}
	}
	return out, nil
}

// closest names a few resources whose name or path shares a word with
// what was asked for.
func closest(found []*listOp, want string) string {
	w := snake(strings.Trim(want, "/"))
	var hits []string
	for _, lo := range found {
		for _, part := range strings.Split(w, "_") {
			if len(part) > 2 && (strings.Contains(lo.r.name, part) || strings.Contains(strings.ToLower(lo.path), part)) {
				hits = append(hits, lo.r.name+" ("+lo.path+")")
				break
			}
		}
		if len(hits) == 5 {
			break
		}
	}
	if len(hits) == 0 {
		return ""
	}
	return "; perhaps " + strings.Join(hits, ", ")
}

var unlikelyList = regexp.MustCompile(`(?i)(search|report|stats|statistics|history|export|events?|logs?|audit|usage|metrics|preview|suggest|autocomplete)`)

// rank orders list operations by how well the document describes them for
// airlock: a top-level collection with items carrying an id, a dialect
// the document settles, a GET by id and writes.
func rank(lo *listOp) int {
	r := lo.r
	score := 0
	score -= 3 * strings.Count(lo.path, "{")
	if !config.IsTodo(paginationDialect(r)) {
		score += 4
	}
	if !config.IsTodo(r.idField) {
		score += 3
	}
	if r.get != nil {
		score += 2
	}
	if unlikelyList.MatchString(lo.path) {
		score -= 3
	}
	if lo.item.Get.Deprecated {
		score -= 6
	}
	if len(r.fields) >= 3 {
		score++
	}
	return score
}

func paginationDialect(r *resourceDraft) string {
	for _, kv := range r.pagination {
		if kv[0] == "dialect" {
			return kv[1]
		}
	}
	return ""
}

// maxFoundListed bounds the list operations a draft's header names.
const maxFoundListed = 40

// foundNotes are the header comments that say which list operations the
// document has and which were drafted.
func foundNotes(found, chosen []*listOp, opts Options) []string {
	if len(found) == 0 {
		return nil
	}
	var notes []string
	var others []*listOp
	for _, lo := range found {
		if !slices.Contains(chosen, lo) {
			others = append(others, lo)
		}
	}
	switch {
	case len(others) == 0:
		return nil
	case len(opts.Resources) == 0 && len(opts.Tags) == 0:
		notes = append(notes, fmt.Sprintf("The document has %d list operations; the %d it describes best are drafted (top-level, with ids, a dialect", len(found), len(chosen)),
			"it settles, a GET by id). Draft others with `airlock init --resource NAME` or `--resource PATH` (repeatable) or `--tag TAG`:")
	default:
		notes = append(notes, fmt.Sprintf("The document has %d list operations; %d are drafted, as asked. The others:", len(found), len(chosen)))
	}
	sort.SliceStable(others, func(i, j int) bool { return rank(others[i]) > rank(others[j]) })
	for i, lo := range others {
		if i == maxFoundListed {
			notes = append(notes, fmt.Sprintf("  ... and %d more", len(others)-maxFoundListed))
			break
		}
		notes = append(notes, fmt.Sprintf("  %-32s GET %s", lo.r.name, lo.path))
	}
	return notes
}

// noListResource is the resource of a document without a list operation
// (a GET answering an array): a draft still, whose list is a TODO, with
// the document's GET operations named as candidates.
func noListResource(t *openapi3.T, paths []string) *resourceDraft {
	r := &resourceDraft{name: "items", items: todo("the path of the items array in the answer")}
	r.path = todo("the list endpoint's path; the document declares no GET answering an array of objects")
	r.idField = todo("the field holding each item's stable id")
	r.pagination = [][2]string{{"dialect", quote(todo("the dialect; the document shows no list to read it from"))}}
	var gets []string
	for _, p := range paths {
		if item := t.Paths.Value(p); item != nil && item.Get != nil && !strings.Contains(p, "{") {
			gets = append(gets, p)
		}
	}
	r.notes = append(r.notes, "The document declares no list operation (a GET answering an array of objects): name the endpoint that lists what airlock should read.")
	if len(gets) > 0 {
		if len(gets) > 10 {
			gets = append(gets[:10], fmt.Sprintf("... and %d more", len(gets)-10))
		}
		r.notes = append(r.notes, "GET operations without path parameters: "+strings.Join(gets, ", "))
	}
	return r
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
	itemsPath, itemSchema, ok := findItems(body, lastSegment(p))
	if !ok {
		return nil
	}
	r := &resourceDraft{name: resourceName(p, op), items: itemsPath}
	r.description = firstSentence(op.Summary)
	if r.description == "" {
		r.description = firstSentence(op.Description)
	}
	r.path = parentParams(p, "")
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
	if _, param := itemPathOf(t, p); param != "" {
		// The item path's own parameter names the field that identifies
		// an item (/carriers/{carrier_id} and carrier_id).
		for _, f := range r.fields {
			named := f.name == snake(param) || snake(param) == singular(lastSegment(p))+"_"+f.name
			if named && f.name != r.idField && !f.sensitive && f.typ != "object" && f.typ != "array" && (config.IsTodo(r.idField) || r.idField != "id") {
				r.idField = f.name
				r.notes = append(r.notes, "the id is "+f.name+": the item path's parameter ("+param+") names it")
				break
			}
		}
	}
	r.filters, r.filterNotes = filtersOf(r, q, used)
	if ip, param := itemPathOf(t, p); ip != "" {
		if get := t.Paths.Value(ip); get != nil && get.Get != nil {
			r.get = &getDraft{path: parentParams(ip, param)}
			if gr := okResponse(get.Get); gr != nil {
				if gr.Headers["ETag"] != nil || gr.Headers["Etag"] != nil || gr.Headers["etag"] != nil {
					r.notes = append(r.notes, "GET by id declares an ETag: conditional writes can use If-Match")
				}
				r.get.item, r.get.note = itemPath(mediaSchema(gr.Content), r)
			}
		}
	}
	if strings.Contains(r.path, config.TodoPrefix) {
		r.notes = append(r.notes, "the list sits under a parent: its path parameters are TODOs, the same in list.path, get.path and the actions' paths (one value, the parent whose items airlock reads)")
	}
	return r
}

// parentParams writes a path template with its item parameter (item, "" for
// none) as {{id}} and every other parameter (a parent's) as a TODO: a
// placeholder nothing fills must never reach a request. The TODO is the
// same wherever the parameter appears, so one decision resolves them all.
func parentParams(p, item string) string {
	return pathParam.ReplaceAllStringFunc(p, func(m string) string {
		name := strings.Trim(m, "{}")
		if item != "" && name == item {
			return "{{id}}"
		}
		return todo("a value for the path parameter " + name)
	})
}

// lastSegment is a path's last literal segment, snake-cased, without an
// extension (/Accounts/{Sid}/Messages.json: messages).
func lastSegment(p string) string {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if s := segs[i]; s != "" && !strings.Contains(s, "{") {
			if dot := strings.LastIndex(s, "."); dot > 0 {
				s = s[:dot]
			}
			return snake(s)
		}
	}
	return ""
}

// itemPathOf finds the item path that follows a list path, and its
// parameter: /things/{id}, or OData's /Things({id}) and /Things('{id}').
// "" when there is none, or more than one.
func itemPathOf(t *openapi3.T, p string) (path, param string) {
	var found [][2]string
	// Twilio writes /Messages.json and /Messages/{Sid}.json.
	base, ext := p, ""
	if dot := strings.LastIndex(p, "."); dot > strings.LastIndex(p, "/") && !strings.Contains(p[dot:], "}") {
		base, ext = p[:dot], p[dot:]
	}
	for _, k := range t.Paths.Keys() {
		rest, ok := strings.CutPrefix(k, base)
		if !ok {
			continue
		}
		if ext != "" {
			if rest, ok = strings.CutSuffix(rest, ext); !ok {
				continue
			}
		}
		for _, form := range [][2]string{{"/{", "}"}, {"({", "})"}, {"('{", "}')"}} {
			if name, ok := strings.CutPrefix(rest, form[0]); ok {
				if name, ok = strings.CutSuffix(name, form[1]); ok && !strings.ContainsAny(name, "/{}()'") {
					found = append(found, [2]string{k, name})
				}
			}
		}
	}
	if len(found) != 1 {
		return "", ""
	}
	return found[0][0], found[0][1]
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

var idNames = []string{"id", "uid", "metadata_uid", "key", "name", "metadata_name", "slug"}

var versionNames = []string{"version", "etag", "_etag", "odata_etag", "metadata_resource_version", "resource_version", "lock_version", "rev", "_rev"}

var updatedNames = []string{"updated_at", "updated", "modified_at", "modified", "last_modified", "metadata_generation"}

func idAndVersion(r *resourceDraft) (id, version, note string) {
	has := map[string]*fieldDraft{}
	for _, f := range r.fields {
		has[f.name] = f
	}
	for _, n := range idNames {
		// A sensitive field never leaves airlock: it cannot be the id
		// every answer names its records by.
		if has[n] != nil && !has[n].sensitive {
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
