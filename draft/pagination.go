package draft

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/airlock-mcp/airlock/config"
)

// A pagination parameter's role is read from its name, its schema and its
// description together: a string "offset" that the API returns is a
// cursor, a "start" that is a date is a filter, and a parameter the
// document does not settle leaves the dialect itself a TODO quoting it.

// Roles of a list operation's query parameter.
const (
	roleSize   = "size"
	rolePage   = "page"
	roleOffset = "offset"
	roleCursor = "cursor"
	roleTime   = "time"   // a moment or period: a filter, never a position
	roleUnsure = "unsure" // named like a position, and the document does not settle which
)

// lower-cased parameter names per role.
var (
	sizeNames   = words("per_page perpage page_size pagesize _limit limit _size size page[size] page_limit pagelimit max_results maxresults $top top count pagelen page[limit] max-results max_items maxitems num_results n")
	pageNames   = words("page _page page_number pagenumber page[number] pageno pagenum")
	offsetNames = words("offset _start skip start $skip from _offset startat start_at start_position startposition startindex start_index first")
	cursorNames = words("cursor page_token pagetoken after next_cursor next _next continuation_token continuationtoken page[after] page[cursor] starting_after next_token nexttoken $skiptoken marker last pagination_token page_cursor start_cursor startcursor next_page_token nextpagetoken")
)

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(s) {
		out[w] = true
	}
	return out
}

var (
	tokenWords    = regexp.MustCompile(`(?i)\b(cursor|token|opaque|returned (by|from|in) (a|the) previous|previous (request|response|call)|next_page|next page value|nextpage|from the last response|pagination (key|marker))\b`)
	timeWords     = regexp.MustCompile(`(?i)\b(iso[- ]?8601|timestamp|date[- ]?time|rfc ?3339|unix time|epoch|(start|beginning|end) of the (period|time|range|interval)|period of time|time range|since|until|after the (date|time))\b`)
	positionWords = regexp.MustCompile(`(?i)\b(offset|index|position|page|skip)\b`)
	pageWords     = regexp.MustCompile(`(?i)\bpage (number|index)\b|\bnumber of the page\b|\bwhich page\b`)
)

// paramKind is what a parameter's schema says its values are: integer,
// number, string, date (a string with a date or date-time format),
// boolean, array, or "" when it says nothing.
func paramKind(p *openapi3.Parameter) string {
	s := resolve(p.Schema)
	switch {
	case s == nil:
		return ""
	case isType(s, "integer"):
		return "integer"
	case isType(s, "number"):
		return "number"
	case isType(s, "string") && (s.Format == "date" || s.Format == "date-time" || s.Format == "unix-time"):
		return "date"
	case isType(s, "string"):
		return "string"
	case isType(s, "boolean"):
		return "boolean"
	case isType(s, "array"):
		return "array"
	}
	return ""
}

func paramText(p *openapi3.Parameter) string {
	t := p.Description
	if s := resolve(p.Schema); s != nil && s.Description != "" {
		t += " " + s.Description
	}
	return strings.Join(strings.Fields(t), " ")
}

// paramRole reads one query parameter's role, and the evidence for it.
func paramRole(name string, p *openapi3.Parameter) (role, evidence string) {
	n := strings.ToLower(name)
	kind := paramKind(p)
	text := paramText(p)
	numeric := kind == "integer" || kind == "number"
	quoted := ""
	if text != "" {
		quoted = ", described " + strconv.Quote(excerpt(text, 110))
	}
	switch {
	case sizeNames[n]:
		if kind == "date" || kind == "boolean" || kind == "array" || n == "n" && !numeric {
			// (a one-letter n is a page size only as a number: the
			// registry API's n)
			return "", ""
		}
		return roleSize, name + " (" + orUntyped(kind) + ")"
	case pageNames[n] || offsetNames[n]:
		want := rolePage
		if offsetNames[n] {
			want = roleOffset
		}
		switch {
		case kind == "date" || timeWords.MatchString(text) && !tokenWords.MatchString(text) && !positionWords.MatchString(text):
			return roleTime, name + " is a " + orUntyped(kind) + quoted + ": a moment, not a position"
		case numeric:
			return want, name + " (" + kind + ")"
		case kind == "string" && tokenWords.MatchString(text):
			return roleCursor, name + " is a string" + quoted
		case kind == "string":
			return roleUnsure, name + " is a string" + quoted
		case tokenWords.MatchString(text):
			return roleCursor, name + " is untyped" + quoted
		case pageWords.MatchString(text) || text == "" && kind == "":
			return want, name + " (" + orUntyped(kind) + ")"
		}
		return roleUnsure, name + " is " + orUntyped(kind) + quoted
	case cursorNames[n]:
		if numeric && n != "after" && n != "starting_after" {
			return roleUnsure, name + " is a number" + quoted
		}
		if kind == "date" || timeWords.MatchString(text) && !tokenWords.MatchString(text) {
			return roleTime, name + " is a " + orUntyped(kind) + quoted + ": a moment, not a position"
		}
		return roleCursor, name + " (" + orUntyped(kind) + ")"
	}
	return "", ""
}

func orUntyped(kind string) string {
	if kind == "" {
		return "untyped"
	}
	return kind
}

func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndex(s[:n], " ")
	if cut < n/2 {
		cut = n
	}
	return s[:cut] + "..."
}

// Body paths per meaning, in order of preference.
var (
	nextURLPathsDoc    = []string{"next", "next_page_uri", "next_page_url", "nextPageUrl", "nextPage", "next_url", "nextUrl", "nextLink", "@odata.nextLink", "nextRecordsUrl", "links.next", "links.next.href", "_links.next.href", "_links.next", "paging.next", "pagination.next", "pagination.next_url", "meta.next", "next_page.uri", "meta.links.next", "links.pages.next"}
	nextCursorPathsDoc = []string{"next_cursor", "nextCursor", "next_page_token", "nextPageToken", "response_metadata.next_cursor", "meta.next_cursor", "pagination.next_cursor", "cursor.next", "next_page", "nextPage", "next_token", "nextToken", "next_page.offset", "next", "pagination.next", "page_info.end_cursor", "pageInfo.endCursor", "meta.next_token", "cursor", "next_marker", "nextMarker", "marker", "continuation_token", "continuationToken", "pagination_token", "links.next_cursor"}
	hasMorePaths       = []string{"has_more", "hasMore", "has_next", "hasNext", "more", "has_next_page", "hasNextPage", "page_info.has_next_page", "pageInfo.hasNextPage", "meta.has_more", "pagination.has_more"}
	isLastPaths        = []string{"isLast", "is_last", "last", "done"}
	totalPathsDoc      = []string{"total", "total_count", "totalCount", "total_items", "totalItems", "total_results", "totalResults", "totalSize", "total_size", "total_entries", "totalEntries", "@odata.count", "count", "size", "totalSetSize", "meta.total", "meta.total_count", "meta.totalCount", "meta.count", "pagination.total", "pagination.total_count", "pagination.count", "paging.total", "page_info.total", "page.totalElements", "totalElements", "hits.total"}
	totalPagesPaths    = []string{"total_pages", "totalPages", "pages", "page_count", "pageCount", "num_pages", "meta.total_pages", "meta.pages", "pagination.total_pages", "pagination.pages", "page.totalPages"}
	boundWords         = regexp.MustCompile(`(?i)\b(accurate up to|only accurate|up to [0-9,]+|approximat\w*|estimat\w*|at most|capped|lower bound|not exact|may not be (exact|accurate)|rough)\b`)
)

// bodyField is a member of a list answer's schema.
type bodyField struct {
	path   string
	schema *openapi3.Schema
}

func bodyAt(body *openapi3.Schema, paths []string, fits func(*openapi3.Schema) bool) bodyField {
	for _, p := range paths {
		if s := schemaAt(body, p); s != nil && fits(s) {
			return bodyField{p, s}
		}
	}
	return bodyField{}
}

func isNumberSchema(s *openapi3.Schema) bool { return isType(s, "integer") || isType(s, "number") }

func isStringSchema(s *openapi3.Schema) bool { return isType(s, "string") }

func isBoolSchema(s *openapi3.Schema) bool { return isType(s, "boolean") }

// urlLike says whether a string member holds a URL: its format, its
// description or its name says so.
func urlLike(path string, s *openapi3.Schema) bool {
	last := strings.ToLower(path[strings.LastIndex(path, ".")+1:])
	return s.Format == "uri" || s.Format == "url" || s.Format == "uri-reference" ||
		strings.Contains(last, "url") || strings.Contains(last, "uri") || strings.Contains(last, "link") || last == "href" ||
		regexp.MustCompile(`(?i)\b(url|uri|link)\b`).MatchString(s.Description)
}

// docPagination is the dialect a list operation's parameters, headers and
// answer schema establish.
type docPagination struct {
	r       *resourceDraft
	q       map[string]*openapi3.Parameter
	headers map[string]bool
	body    *openapi3.Schema
	used    map[string]bool
	roles   map[string]string // parameter -> role
	evid    map[string]string // parameter -> evidence
}

func (d *docPagination) set(k, v string) { d.r.pagination = append(d.r.pagination, [2]string{k, v}) }
func (d *docPagination) note(s string)   { d.r.pageNote = append(d.r.pageNote, s) }

// paramWith is the parameter of a role, preferring the order of names
// (first by the role's own list).
func (d *docPagination) paramWith(role string) string {
	var found []string
	for n, r := range d.roles {
		if r == role {
			found = append(found, n)
		}
	}
	slices.Sort(found)
	if len(found) == 0 {
		return ""
	}
	// The conventional name first.
	for _, pref := range []string{"limit", "per_page", "page_size", "pageSize", "page", "offset", "cursor", "starting_after", "after"} {
		if slices.Contains(found, pref) {
			return pref
		}
	}
	return found[0]
}

// pageSize writes the page size parameter and a size the document allows.
func (d *docPagination) pageSize() {
	size := d.paramWith(roleSize)
	if size == "" {
		return
	}
	d.used[size] = true
	d.set("page_size_param", sizeParamValue(size))
	n := 100
	if ps := resolve(d.q[size].Schema); ps != nil && ps.Max != nil && int(*ps.Max) < n && *ps.Max >= 1 {
		n = int(*ps.Max)
	} else if m := maxInText(paramText(d.q[size])); m > 0 && m < n {
		n = m
	}
	d.set("page_size", strconv.Itoa(n))
}

var maxText = regexp.MustCompile(`(?i)(?:between \d+ and|maximum(?: (?:of|is|value is))?:?|max(?:imum)?\.?:?|up to|at most|no more than|cannot exceed|less than or equal to|<=)\s*([0-9][0-9,]*)`)

// maxInText reads a page size bound from a parameter's description
// ("between 1 and 100", "maximum of 50"); 0 when none is named.
func maxInText(text string) int {
	m := maxText.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if err != nil {
		return 0
	}
	return n
}

// total writes the total the answer declares: exact, or none when the
// document bounds it or names none.
func (d *docPagination) total() {
	if d.headers["x-total-count"] {
		d.set("total_header", "X-Total-Count")
		return
	}
	if d.headers["x-total"] {
		d.set("total_header", "X-Total")
		return
	}
	t := bodyAt(d.body, totalPathsDoc, isNumberSchema)
	switch {
	case t.path == "":
		d.set("total", "none")
		d.note("the document shows no total: only the dialect's end signal ends the list (probe --fix reads one if the API sends it)")
	case boundWords.MatchString(t.schema.Description):
		d.set("total", "none")
		d.note(fmt.Sprintf("%s is not read as a count: the document bounds it (%q)", t.path, excerpt(strings.Join(strings.Fields(t.schema.Description), " "), 100)))
	default:
		d.set("total", quote(t.path))
	}
	if tp := bodyAt(d.body, totalPagesPaths, isNumberSchema); tp.path != "" && d.reads("total_pages") {
		d.set("total_pages", quote(tp.path))
	} else if d.headers["x-total-pages"] && d.reads("total_pages_header") {
		d.set("total_pages_header", "X-Total-Pages")
	}
}

// reads reports whether the dialect drafted so far reads the pagination
// key: a key it does not read would be refused.
func (d *docPagination) reads(key string) bool {
	k, ok := config.DialectKindOf(d.dialect())
	return ok && k.Reads(key)
}

func (d *docPagination) dialect() string {
	for _, kv := range d.r.pagination {
		if kv[0] == "dialect" {
			return kv[1]
		}
	}
	return ""
}

// todo leaves the dialect to a person (or probe --fix), quoting the
// evidence the document gives.
func (d *docPagination) todo(what string, evidence []string) {
	ev := ""
	if len(evidence) > 0 {
		ev = "; the document: " + strings.Join(evidence, "; ")
	}
	d.set("dialect", quote(todo(what+ev+"; probe --fix decides from the live API")))
}

// todo writes a TODO whose text cannot end it early: a TODO ends at its
// first closing parenthesis.
func todo(what string) string {
	what = strings.NewReplacer("(", "[", ")", "]", "\n", " ").Replace(what)
	return config.Todo(what)
}

// paginate drafts the pagination of a list operation from its query
// parameters, response headers and answer schema, and returns the query
// parameters it consumed. A dialect is written as a fact only when the
// document establishes it; otherwise the dialect is a TODO quoting what
// the document says.
func paginate(r *resourceDraft, q map[string]*openapi3.Parameter, headers map[string]bool, body *openapi3.Schema) map[string]bool {
	d := &docPagination{r: r, q: q, headers: headers, body: body, used: map[string]bool{}, roles: map[string]string{}, evid: map[string]string{}}
	var unsure, timeish []string
	for n, p := range q {
		role, ev := paramRole(n, p)
		if role == "" {
			continue
		}
		d.roles[n], d.evid[n] = role, ev
		switch role {
		case roleUnsure:
			unsure = append(unsure, ev)
		case roleTime:
			timeish = append(timeish, ev)
		}
	}
	slices.Sort(unsure)
	slices.Sort(timeish)
	if q["skipTotal"] != nil {
		d.note("never send skipTotal: the total then reads -1 and proves nothing")
	}
	for _, t := range timeish {
		d.note("not a position: " + t)
	}
	cursor := d.paramWith(roleCursor)
	nextURL := bodyAt(body, nextURLPathsDoc, func(s *openapi3.Schema) bool { return isStringSchema(s) })
	if nextURL.path == "" {
		nextURL = findNextURL(body)
	}
	urlSure := nextURL.path != "" && urlLike(nextURL.path, nextURL.schema)
	nextCursor := bodyAt(body, nextCursorPathsDoc, func(s *openapi3.Schema) bool { return isStringSchema(s) })
	if nextCursor.path != "" && urlLike(nextCursor.path, nextCursor.schema) {
		nextCursor = bodyField{}
	}
	hasMore := bodyAt(body, hasMorePaths, isBoolSchema)
	isLast := bodyAt(body, isLastPaths, isBoolSchema)
	odata := q["$top"] != nil || q["$skip"] != nil || schemaAt(body, "@odata.nextLink") != nil
	switch {
	case q["continue"] != nil && schemaAt(body, "metadata.continue") != nil:
		d.used["continue"] = true
		d.set("dialect", "continue")
		d.note("Kubernetes-style: continue tokens over one resourceVersion, a real snapshot")
		d.pageSize()
	case odata:
		d.set("dialect", "next_url")
		d.set("next", quote("@odata.nextLink"))
		d.note("OData: the answer's @odata.nextLink leads on ($skip and $skiptoken ride inside it)")
		for _, n := range []string{"$skip", "$skiptoken"} {
			if q[n] != nil {
				d.used[n] = true
			}
		}
		if q["$top"] != nil {
			d.used["$top"] = true
			d.set("page_size_param", sizeParamValue("$top"))
			d.set("page_size", "100")
		}
		if q["$count"] != nil && schemaAt(body, "@odata.count") != nil {
			d.used["$count"] = true
			r.params = append(r.params, [2]string{"$count", "true"})
			d.set("total", quote("@odata.count"))
		} else {
			d.set("total", "none")
		}
	case hasMore.path != "" && nextCursor.path == "" && (q["starting_after"] != nil || q["after"] != nil && d.roles["after"] == roleCursor):
		cp := "starting_after"
		if q[cp] == nil {
			cp = "after"
		}
		d.used[cp] = true
		d.set("dialect", "cursor")
		d.set("has_more", quote(hasMore.path))
		d.set("cursor_param", cp)
		d.note("has_more with the last item's id as the cursor (Stripe-style)")
		d.pageSize()
	case nextCursor.path != "" && cursor != "" && (d.sameToken(cursor, nextCursor.path) || !urlSure):
		d.used[cursor] = true
		d.set("dialect", "cursor")
		d.set("next_cursor", quote(nextCursor.path))
		d.set("cursor_param", quote(cursor))
		if hasMore.path != "" {
			d.set("has_more", quote(hasMore.path))
		} else if isLast.path != "" {
			d.set("is_last", quote(isLast.path))
		}
		d.note("the answer's " + nextCursor.path + " is sent back as " + cursor + " (" + d.evid[cursor] + ")")
		d.pageSize()
	case cursor != "" && nextCursor.path == "" && !urlSure && linkRelWords.MatchString(paramText(q[cursor])):
		// The document says the parameter's value comes from the Link
		// header's next relation: the link leads on, carrying it.
		d.used[cursor] = true
		d.set("dialect", "link")
		d.note("follows Link: rel=\"next\" on the same host: " + d.evid[cursor] + ", and the document says it is taken from the Link header")
		d.pageSize()
		if headers["x-total-count"] {
			d.set("total_header", "X-Total-Count")
		}
	case cursor != "" && nextCursor.path == "" && !urlSure && d.roles[cursor] == roleCursor && tokenWords.MatchString(paramText(q[cursor])):
		// The document says the parameter takes a token the API returns,
		// and not where the answer holds it.
		d.used[cursor] = true
		d.set("dialect", "cursor")
		d.set("cursor_param", quote(cursor))
		d.set("next_cursor", quote(todo("where the answer holds the token to send as "+cursor+"; the document's answer schema does not say; probe --fix finds it on the live answer")))
		d.note("a cursor: " + d.evid[cursor])
		d.pageSize()
	case nextURL.path != "" && (urlSure || cursor == "" && len(unsure) == 0):
		d.set("dialect", "next_url")
		d.set("next", quote(nextURL.path))
		if !urlSure {
			d.note("the answer's " + nextURL.path + " is followed as the next page's URL: the document does not say it is one (probe checks it)")
		} else {
			d.note("the answer names the next page's URL at " + nextURL.path + " (followed on the same host only)")
		}
		for n, role := range d.roles {
			if role == rolePage || role == roleOffset || role == roleCursor || role == roleUnsure {
				d.used[n] = true // the next URL carries the position
			}
		}
		d.pageSize()
		d.total()
		if isLast.path != "" {
			d.set("is_last", quote(isLast.path))
		}
	case headers["link"]:
		d.set("dialect", "link")
		d.note("follows Link: rel=\"next\" on the same host")
		if pp := d.paramWith(rolePage); pp != "" {
			d.used[pp] = true
			r.params = append(r.params, [2]string{pp, "1"})
			d.note("the first page is named (" + pp + "=1): some APIs send Link headers only when a page is asked for")
		}
		d.pageSize()
		if headers["x-total-count"] {
			d.set("total_header", "X-Total-Count")
		}
	case d.paramWith(rolePage) != "" && d.paramWith(roleSize) != "" && len(unsure) == 0:
		pp := d.paramWith(rolePage)
		d.used[pp] = true
		d.set("dialect", "page")
		d.set("page_param", quote(pp))
		if s := resolve(q[pp].Schema); s != nil && s.Min != nil && *s.Min == 0 {
			d.set("first_page", "0")
		}
		d.pageSize()
		d.total()
	case d.paramWith(roleOffset) != "" && d.paramWith(roleSize) != "" && len(unsure) == 0:
		op := d.paramWith(roleOffset)
		d.used[op] = true
		d.set("dialect", "offset")
		d.set("offset_param", quote(op))
		d.pageSize()
		d.total()
	default:
		var ev []string
		for _, n := range slices.Sorted(maps.Keys(d.roles)) {
			if d.roles[n] != roleTime {
				ev = append(ev, d.evid[n])
			}
		}
		for _, f := range []bodyField{nextURL, nextCursor, hasMore, isLast} {
			if f.path != "" {
				ev = append(ev, "the answer holds "+f.path+" ("+strings.Join(f.schema.Type.Slice(), "|")+")")
			}
		}
		what := "the dialect: one of cursor, link, offset, page, continue, next_url"
		switch {
		case len(unsure) > 0:
			what = "the dialect: the document does not settle what its position parameter is"
		case len(ev) == 0:
			what = "the dialect: the document shows no pagination; an API that answers everything at once has no end signal to prove"
		}
		d.todo(what, ev)
		d.pageSize()
	}
	return d.used
}

// sameToken says whether a cursor parameter takes the answer's next
// cursor: its description names the member, or their names agree.
func (d *docPagination) sameToken(param, path string) bool {
	last := path[strings.LastIndex(path, ".")+1:]
	text := strings.ToLower(paramText(d.q[param]))
	if strings.Contains(text, strings.ToLower(last)) || strings.Contains(text, strings.ToLower(path)) {
		return true
	}
	norm := func(s string) string {
		s = strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
		return strings.TrimPrefix(strings.TrimPrefix(s, "next"), "page")
	}
	return norm(param) == norm(last) || strings.Contains(norm(last), norm(param)) && norm(param) != ""
}
