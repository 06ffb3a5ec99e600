package upstream

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// pageState is where one source's scan stands: enough to fetch the next
// page, and to resume the scan in a later call.
type pageState struct {
	Cursor   string   // cursor: next cursor; continue: continue token
	NextURL  *url.URL // link: rel="next"
	Offset   int      // offset: first new item of the next page
	Page     int      // page: next page number
	Snapshot string   // continue: resourceVersion of the first page
	PIT      string   // search_after: the point in time's current id
	Total    *int     // offset, page, link: total seen on the first page
	// TotalPages is the page dialect's count of pages, as the first page
	// that carried one said.
	TotalPages *int
	LastID     string // offset: id of the last item read (overlap check)
	// Seen counts the items the upstream returned so far (offset: without
	// the overlap items), to compare with its total.
	Seen int
	// TotalUntrusted is set once the upstream returned more items than
	// its own total: the total then proves nothing.
	TotalUntrusted bool
	// SignalSeen is set once a page carried the dialect's "more follows"
	// signal (a next link, cursor or continue token): its absence on a
	// later page then proves the end.
	SignalSeen bool
	// LastFull says the last page held a whole page of items: only then
	// may the remaining pages be planned from the page size.
	LastFull bool
	// MaxPage is the most items one page held so far: an upstream that
	// caps the page size below the size asked for fills its pages to its
	// own cap.
	MaxPage int
	Started bool
	// Done is set when the scan of the source reached its end; End says
	// whether the end was proven and EndSignal how (or what was missing).
	Done      bool
	End       string
	EndSignal string
	// Probe is set when the end is unknown and one request can settle it
	// (see Scan.probe).
	Probe bool
	// Recheck, with Probe, is the request of a whole page that came
	// without the "more follows" signal: the probe asks for it again one
	// item smaller (see Scan.recheck). RecheckItems is how many it held.
	Recheck      *pageState
	RecheckItems int
}

// End signals: how a source's end was proven, or why it was not.
const (
	SignalHasMoreFalse   = "has_more_false"
	SignalNextCursorNone = "next_cursor_empty"
	SignalNoNextLink     = "no_next_link"
	SignalContinueNone   = "continue_empty"
	SignalTotalReached   = "total_reached"
	SignalEmptyPage      = "empty_page"
	// SignalDeclaredTotal ends a counts-only scan on its first page: the
	// total is declared exact and the page's items all match the filter.
	SignalDeclaredTotal = "declared_exact_total"
	// SignalVerified suffixes an absence that proved the end because a
	// probe showed the upstream sends the signal when more follows.
	SignalVerified = "_verified"
	// SignalRechecked suffixes an absence on a whole page that proved the
	// end because the page asked for again one item smaller said more
	// follows: the upstream sends the signal from that place.
	SignalRechecked = "_rechecked"

	// SignalIsLast: an end flag that says "last" (is_last) was true.
	SignalIsLast = "is_last_true"
	// SignalNextURLNone: the next URL was null or empty.
	SignalNextURLNone = "next_url_empty"
	// SignalHasNextFalse: a GraphQL connection's hasNextPage was false.
	SignalHasNextFalse = "has_next_page_false"

	// SignalTotalPages: the page the upstream counts as its last was read,
	// and the items agree with its total.
	SignalTotalPages = "total_pages_reached"

	// SignalPageRefused: the upstream refused a page after the first
	// (see Scan.pageRefused); the source is partial for the reason given
	// beside it, never complete.
	SignalPageRefused = "page_refused"
	// SignalContinuationRefused: the upstream answered 404 to a
	// continuation it handed out (a next link, a cursor) after the first
	// page was read: the source is partial, never complete.
	SignalContinuationRefused = "continuation_refused"

	// SignalUnreadable: the page holds a declared signal the end rests on
	// (a cursor, a continue token, an end flag) in a form that cannot be
	// read; SIGNAL_UNREADABLE names the member and the page.
	SignalUnreadable = "signal_unreadable"
	// SignalBatchIncomplete: a continuation object's list ended on an
	// answer without the declared batch marker (batch_complete).
	SignalBatchIncomplete = "batch_incomplete"

	// SignalMissingOnFull: a whole page without the "more follows" signal
	// that earlier pages carried (or that the upstream sends): the signal
	// may have been dropped, and the list may go on.
	SignalMissingOnFull = "next_signal_missing"

	SignalNotSeen       = "next_signal_not_seen"
	SignalMoreNoCursor  = "more_without_continuation"
	SignalMoreOnEmpty   = "more_on_empty_page"
	SignalRepeatedPage  = "repeated_page"
	SignalProbeFailed   = "probe_failed"
	SignalBeforeTotal   = "stopped_before_total"
	SignalTotalUnknown  = "total_unknown"
	SignalHasMoreAbsent = "has_more_missing"
	// SignalHasMoreAbsentFalse: the end flag was absent where the
	// upstream omits it when false (absent_means_zero), after a page that
	// carried it or a probe that showed it is sent.
	SignalHasMoreAbsentFalse = "has_more_omitted_false"
)

// Conflicting evidence: the signals of CONFLICTING_EVIDENCE, each naming
// the two sides that contradict each other.
const (
	// SignalFilterConflict: the upstream returned records for a filter it
	// was sent that airlock's own check of the filter rejects.
	SignalFilterConflict = "filter_not_applied_as_sent"
	// SignalFlagVsContinuation: an end flag says last beside a
	// continuation on the same page.
	SignalFlagVsContinuation = "end_flag_vs_continuation"
	// SignalTotalVsItems: more records than the upstream's own total.
	SignalTotalVsItems = "total_vs_items"
	// SignalTotalVsPages: the last page by the upstream's page count
	// leaves the items short of its total.
	SignalTotalVsPages = "total_vs_total_pages"
	// SignalPagesVsPage: records on a page past the upstream's page
	// count.
	SignalPagesVsPage = "total_pages_vs_page"
	// SignalRemainingVsEnd: a page that ends the list says items remain
	// after it (a declared remaining count above zero).
	SignalRemainingVsEnd = "remaining_vs_end"
)

// conflictSignals are the end signals that name a contradiction rather
// than a missing signal.
var conflictSignals = map[string]bool{SignalFlagVsContinuation: true, SignalTotalVsPages: true, SignalPagesVsPage: true, SignalRemainingVsEnd: true}

// page is one parsed response.
type page struct {
	items      []any
	total      *int
	totalPages *int
	estimate   *int // a declared remaining count (an estimate, per Kubernetes)
	snapshot   string
	// noSnapshot: the page did not name the snapshot the list declares
	// where it must (NO_SNAPSHOT).
	noSnapshot bool
	// boundary is the overlap item of an offset page (its first item, which
	// must be the previous page's last item).
	boundary    string
	hasBoundary bool
	next        pageState
	doc         any
	header      http.Header
	// upstreamErrors quotes errors the upstream reported beside the
	// page's data (GraphQL): the page is read, the answer is partial.
	upstreamErrors string
	// doubts are the declared signals the page holds in a form that
	// cannot be read (SIGNAL_UNREADABLE): the answer is partial, whatever
	// the other signals say.
	doubts []string
}

// doubt records a declared signal the page holds unreadable.
func (pg *page) doubt(member string) {
	for _, d := range pg.doubts {
		if d == member {
			return
		}
	}
	pg.doubts = append(pg.doubts, member)
}

// proven, unknown and more set the page's end verdict. A dialect calls
// exactly one of them for every page.
func (pg *page) proven(signal string) {
	pg.next.Done, pg.next.End, pg.next.EndSignal, pg.next.Probe = true, envelope.EndProven, signal, false
}

// unknown ends the source without proof, or (probe) asks for the one
// request that can settle it.
func (pg *page) unknown(signal string, probe bool) {
	if probe {
		pg.next.Probe, pg.next.EndSignal = true, signal
		return
	}
	pg.next.Done, pg.next.End, pg.next.EndSignal, pg.next.Probe = true, envelope.EndUnproven, signal, false
}

// absent is the verdict on a page of n items without the dialect's "more
// follows" signal: on a short page, proven when an earlier page carried
// it, else settled by a probe. A whole page without it proves nothing by
// itself: a signal dropped from one page looks the same as a list that
// ended on a full page. Its own request asked for again one item smaller
// settles it (Scan.recheck), where the request can be made smaller: a
// cursor's, or a next URL that names the page size; else the end is
// unproven (next_signal_missing).
func (pg *page) absent(p config.PaginationConfig, st pageState, signal string, n int) {
	switch {
	case !shortPage(p, st, n) && resizable(p, st):
		pg.unknown(signal, true)
		rc := st
		rc.Recheck = nil
		pg.next.Recheck, pg.next.RecheckItems = &rc, n
	case !shortPage(p, st, n):
		pg.unknown(SignalMissingOnFull, false)
	case st.SignalSeen:
		pg.proven(signal)
	default:
		pg.unknown(signal, true)
	}
}

// none is the verdict on a page of n items whose continuation (a cursor, a
// continue token, a next URL or link, a continuation object) is there and
// says there is none: the end, on a short page. On a whole page it is
// rechecked as an absent one is (absent): one answer whose continuation
// was emptied looks the same as a list that ended on a full page.
func (pg *page) none(p config.PaginationConfig, st pageState, signal string, n int) {
	if shortPage(p, st, n) {
		pg.proven(signal)
		return
	}
	st.SignalSeen = true
	pg.absent(p, st, signal, n)
}

// resizable reports whether the request of the page st points at can be
// sent with another page size: a cursor's or a first page's, or a next
// URL that names the page size.
func resizable(p config.PaginationConfig, st pageState) bool {
	if st.NextURL == nil {
		return true
	}
	return p.PageSizeParam != "" && st.NextURL.Query().Has(p.PageSizeParam)
}

// shortPage reports whether a page of n items holds fewer than were asked
// for and fewer than the upstream has served on one page: a page the list
// may end on without saying so.
func shortPage(p config.PaginationConfig, st pageState, n int) bool {
	return n < p.PageSize && (st.MaxPage == 0 || n < st.MaxPage)
}

// dialect builds page requests and parses page responses.
type dialect interface {
	// query sets the pagination parameters for the page st points at, or
	// returns the URL to follow (a next link read from the last page).
	query(p *listParams, st pageState) (nextURL *url.URL)
	// parse reads a response and returns the page with the next state,
	// whose verdict on the end (Done, End, EndSignal, Probe) the dialect
	// must set from what the page proves, never from a missing signal.
	parse(resp *Response, doc any, items []any, st pageState) (page, error)
	// plan returns the states of every remaining page when they can be
	// fetched concurrently (a total is known), else nil.
	plan(st pageState) []pageState
	// more reports whether a probe page (the first page at page size 1)
	// carries the signal that more pages follow.
	more(resp *Response, doc any) bool
}

func newDialect(p config.PaginationConfig, idPath string) dialect {
	switch p.Dialect {
	case config.DialectCursor:
		return cursorDialect{p: p, idPath: idPath}
	case config.DialectLink:
		return linkDialect{p}
	case config.DialectOffset:
		return offsetDialect{p, idPath}
	case config.DialectPage:
		return pageDialect{p}
	case config.DialectContinue:
		return continueDialect{p}
	case config.DialectNextURL:
		return nextURLDialect{p}
	case config.DialectGraphQL:
		return graphqlDialect{p}
	case config.DialectSearchAfter:
		return searchAfterDialect{p}
	case config.DialectContinueObject:
		return objectDialect{p}
	}
	return nil
}

// endFlag reads the page's end flag: has_more (true: more follows) or
// is_last (true: this is the last page). st is the flag's state: a flag
// the page holds unreadable is doubt on the page, and no flag.
func endFlag(pg *page, p config.PaginationConfig, doc any) (last bool, st signalState) {
	path := p.IsLast
	if path == "" {
		path = p.HasMore
	}
	b, st := readFlag(doc, path)
	if st == signalUnreadable {
		pg.doubt(path)
	}
	if p.IsLast != "" {
		return b, st
	}
	return !b, st
}

// flagSignal names how an end flag proved the end.
func flagSignal(p config.PaginationConfig) string {
	if p.IsLast != "" {
		return SignalIsLast
	}
	return SignalHasMoreFalse
}

// readTotal reads the upstream's total from the configured header or body
// path. Only a non-negative integer is a total: a negative (PocketBase's
// skipTotal answers -1) or null one is not counted, and a missing one
// unknown; one of another form is unreadable, and bad names its member.
func readTotal(p config.PaginationConfig, resp *Response, doc any) (n int, known bool, bad string) {
	switch {
	case p.TotalHeader != "":
		if resp == nil {
			return 0, false, ""
		}
		n, counted, st := readHeaderCount(resp.Header, p.TotalHeader)
		if st == signalUnreadable {
			return 0, false, p.TotalHeader
		}
		return n, counted, ""
	case p.Total != "" && p.Total != config.NoTotal:
		n, counted, st := readCount(doc, p.Total)
		switch st {
		case signalUnreadable:
			return 0, false, p.Total
		case signalAbsent:
			return 0, false, ""
		}
		if p.TotalRelation != "" {
			// Elasticsearch's {"value": 10000, "relation": "gte"} is a
			// bound, not a total.
			rel, rst := readToken(doc, p.TotalRelation)
			if rst == signalUnreadable {
				return 0, false, p.TotalRelation
			}
			if rel != "eq" {
				return 0, false, ""
			}
		}
		return n, counted, ""
	}
	return 0, false, ""
}

// total reads the page's total (see readTotal), recording an unreadable
// one as doubt.
func (pg *page) totalOf(p config.PaginationConfig, resp *Response, doc any) (int, bool) {
	n, known, bad := readTotal(p, resp, doc)
	if bad != "" {
		pg.doubt(bad)
	}
	return n, known
}

// PageTotal reads a page's total as the resource's dialect does (a
// GraphQL total is the connection's).
func (r *Resource) PageTotal(resp *Response, doc any) (int, bool) {
	if r.Pagination.Dialect == config.DialectGraphQL {
		conn, _ := jsonvalue.Get(doc, "data."+r.Pagination.Connection)
		n, known, _ := readTotal(r.Pagination, nil, conn)
		return n, known
	}
	n, known, _ := readTotal(r.Pagination, resp, doc)
	return n, known
}

// totalVerdict records the page's total and reports whether the items seen
// so far reached it exactly on a page that was not full. Only the page's
// own total proves an end: a page without one is never judged by another
// page's. Items beyond the first page's total make it untrusted. A total
// reached on a full page is not yet proof: a total that lags the
// collection (a cached count) looks the same, so the next page is read,
// and only an empty one ends the list. The same holds on the first page
// (full is then true for any page with items): until a page has shown the
// upstream's own page size, a short page may be one capped below the size
// asked for.
func totalVerdict(pg *page, total int, known bool, full bool) (reached bool) {
	if known {
		pg.total = &total
		if pg.next.Total == nil {
			pg.next.Total = &total
		}
	}
	t := pg.next.Total
	if t == nil || pg.next.TotalUntrusted {
		return false
	}
	if pg.next.Seen > *t {
		pg.next.TotalUntrusted = true
		return false
	}
	return known && pg.next.Seen == total && !full
}

// newPage starts the verdict on a page of items read from the state st:
// the items counted, the largest page seen, and whether this page was full
// (see fullPage).
func newPage(p config.PaginationConfig, st pageState, items []any) (pg page, full bool) {
	pg = page{items: items, next: st}
	pg.next.Started = true
	pg.next.Seen += len(items)
	full = fullPage(p, st, len(items))
	pg.next.LastFull = len(items) >= p.PageSize
	pg.next.MaxPage = max(st.MaxPage, len(items))
	return pg, full
}

// isEmptyObject reports whether doc is {}.
func isEmptyObject(doc any) bool {
	m, ok := doc.(map[string]any)
	return ok && len(m) == 0
}

// fullPage reports whether a page of n items filled the page: the size
// asked for, or the upstream's own smaller cap once a page showed it.
func fullPage(p config.PaginationConfig, st pageState, n int) bool {
	if st.MaxPage == 0 {
		// No page has shown the upstream's page size yet.
		return n > 0
	}
	return n >= min(p.PageSize, st.MaxPage)
}

type cursorDialect struct {
	p      config.PaginationConfig
	idPath string
	// key derives the next cursor from the last item (no next_cursor):
	// the id by default (Stripe), or a declared field made exclusive
	// (etcd). Resource.dialectFor sets it.
	key lastKey
	// itemsPath is where the items are: an answer that omits both them
	// and the flag (absent_means_zero) shows nothing of a list.
	itemsPath string
}

func (d cursorDialect) query(p *listParams, st pageState) *url.URL {
	p.set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.set(d.p.CursorParam, st.Cursor)
	}
	return nil
}

func (d cursorDialect) parse(resp *Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	pg.next.Started = true
	pg.next.Seen += len(items)
	pg.next.LastFull = len(items) >= d.p.PageSize
	pg.next.MaxPage = max(st.MaxPage, len(items))
	// A total (Stripe's total_count, etcd's count) proves no end here:
	// the flag or the cursor does; it is compared with what was read.
	total, known := pg.totalOf(d.p, resp, doc)
	totalVerdict(&pg, total, known, true)
	last, fst := endFlag(&pg, d.p, doc)
	flagged := fst == signalRead
	// A flag the upstream omits when false (proto3 JSON) reads as false;
	// an absence then proves the end only as any absent signal does:
	// once an earlier page carried the flag, or a probe showed it is sent.
	omitted := fst == signalAbsent && absentZero(d.p, doc, d.p.HasMore+d.p.IsLast)
	if omitted {
		flagged, last = true, d.p.HasMore != ""
	}
	nc, nst := readToken(doc, d.p.NextCursor)
	if nst == signalUnreadable {
		pg.doubt(d.p.NextCursor)
	}
	if flagged && last {
		if nc != "" {
			// The flag says last, and the same page says how to go on:
			// neither is believed.
			pg.unknown(SignalFlagVsContinuation, false)
			return pg, nil
		}
		switch {
		case nst == signalUnreadable:
			pg.unknown(SignalUnreadable, false)
		case omitted && len(items) == 0 && absentZero(d.p, doc, d.itemsPath) && isEmptyObject(doc):
			// Neither the items nor the flag nor anything else (etcd's
			// header): an answer that omits every member shows nothing of
			// a list, and proves the end only as any absent signal does.
			pg.absent(d.p, st, SignalEmptyPage, 0)
		case omitted && len(items) == 0:
			pg.proven(SignalEmptyPage)
		case omitted:
			pg.absent(d.p, st, SignalHasMoreAbsentFalse, len(items))
		default:
			pg.proven(flagSignal(d.p))
		}
		return pg, nil
	}
	if d.p.NextCursor == "" {
		// The cursor is the last item's id (Stripe): more is promised by
		// the flag, or (flag missing) assumed until an explicit end or an
		// empty page.
		switch {
		case len(items) == 0 && flagged:
			// More is promised, but there is no last id to continue from.
			pg.unknown(SignalMoreOnEmpty, false)
			return pg, nil
		case len(items) == 0 && fst == signalUnreadable:
			// No last id, and a flag that cannot be read.
			pg.unknown(SignalUnreadable, false)
			return pg, nil
		case len(items) == 0:
			pg.proven(SignalEmptyPage)
			return pg, nil
		}
		key := d.key
		if key.path == "" {
			key.path = d.idPath
		}
		id, err := key.of(itemValue(items[len(items)-1]))
		if err != nil {
			return pg, err
		}
		pg.next.Cursor = id
		if flagged {
			pg.next.SignalSeen = true
		}
		return pg, nil
	}
	switch {
	case nc != "":
		pg.next.Cursor, pg.next.SignalSeen = nc, true
	case nst == signalUnreadable:
		// The page says how to go on in a form airlock cannot read (an
		// object where a cursor belongs: DynamoDB's LastEvaluatedKey):
		// the list may go on, and an empty page proves nothing.
		pg.unknown(SignalUnreadable, false)
	case flagged:
		// The flag says more follows, but there is nothing to continue
		// with.
		pg.unknown(SignalMoreNoCursor, false)
	case fst == signalUnreadable:
		// No cursor, and a flag that cannot be read: nothing says
		// whether this is the end.
		pg.unknown(SignalUnreadable, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case nst == signalRead:
		// Present, and null or empty.
		pg.none(d.p, st, SignalNextCursorNone, len(items))
	default:
		pg.absent(d.p, st, SignalNextCursorNone, len(items))
	}
	return pg, nil
}

func (d cursorDialect) more(_ *Response, doc any) bool {
	if d.p.NextCursor == "" {
		var pg page
		last, st := endFlag(&pg, d.p, doc)
		return st == signalRead && !last
	}
	nc, st := readToken(doc, d.p.NextCursor)
	return st == signalRead && nc != ""
}

func (cursorDialect) plan(pageState) []pageState { return nil }

type linkDialect struct{ p config.PaginationConfig }

func (d linkDialect) query(p *listParams, st pageState) *url.URL {
	if st.NextURL != nil {
		return st.NextURL
	}
	p.set(d.p.PageSizeParam, d.p.PageSize)
	return nil
}

func (d linkDialect) parse(resp *Response, doc any, items []any, st pageState) (page, error) {
	pg, full := newPage(d.p, st, items)
	total, known := pg.totalOf(d.p, resp, doc)
	reached := totalVerdict(&pg, total, known, full)
	next, lst := readNextLink(resp.Header)
	if next != "" {
		u, err := url.Parse(next)
		if err != nil {
			return pg, BadResponse("the Link header's next URL does not parse")
		}
		pg.next.NextURL, pg.next.SignalSeen = u, true
		return pg, nil
	}
	pg.next.NextURL = nil
	switch {
	case lst == signalUnreadable:
		// A Link header that cannot be read says nothing of the end.
		pg.doubt("Link")
		pg.unknown(SignalUnreadable, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case reached:
		pg.proven(SignalTotalReached)
	case known && !pg.next.TotalUntrusted && pg.next.Seen < total:
		// Fewer items than the upstream's own total, and no way on: the
		// upstream stopped short (Scan.finishSource reports the cap).
		pg.proven(SignalNoNextLink)
	case lst == signalRead:
		// Links, and none of them next (json-server's and GitHub's last
		// page names first, prev and last): the upstream says so.
		pg.none(d.p, st, SignalNoNextLink, len(items))
	default:
		pg.absent(d.p, st, SignalNoNextLink, len(items))
	}
	return pg, nil
}

func (linkDialect) more(resp *Response, _ any) bool {
	next, st := readNextLink(resp.Header)
	return st == signalRead && next != ""
}

func (linkDialect) plan(pageState) []pageState { return nil }

// nextLink returns the rel="next" target of an RFC 8288 Link header, ""
// when there is none or it cannot be read (see readNextLink).
func nextLink(h http.Header) string {
	next, _ := readNextLink(h)
	return next
}

// readNextLink reads the rel="next" target of an RFC 8288 Link header, in
// the three states of any signal: absent (no Link header), read (links,
// with one next target or none: a last page's first, prev and last), or
// unreadable (a value that holds no link, or two next targets that differ).
func readNextLink(h http.Header) (string, signalState) {
	var next string
	st := signalAbsent
	for _, v := range h.Values("Link") {
		if strings.TrimSpace(v) == "" {
			continue
		}
		links := 0
		for _, part := range splitOutside(v, ',') {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			end := strings.IndexByte(part, '>')
			if !strings.HasPrefix(part, "<") || end < 0 {
				return "", signalUnreadable
			}
			links++
			target := part[1:end]
			for _, p := range splitOutside(part[end+1:], ';') {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(val), `"`)) {
					if !strings.EqualFold(rel, "next") {
						continue
					}
					if next != "" && next != target {
						// Two ways on: neither is read.
						return "", signalUnreadable
					}
					next = target
				}
			}
		}
		if links == 0 {
			return "", signalUnreadable
		}
		st = signalRead
	}
	return next, st
}

// splitOutside splits v on sep where sep is neither inside <...> nor inside
// a quoted string (where a backslash escapes the next character).
func splitOutside(v string, sep byte) []string {
	var out []string
	inAngle, inQuote, escaped := false, false, false
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case escaped:
			escaped = false
		case inQuote:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inQuote = false
			}
		case inAngle:
			if c == '>' {
				inAngle = false
			}
		case c == '"':
			inQuote = true
		case c == '<':
			inAngle = true
		case c == sep:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

// offsetDialect reads offset/limit pages. Every page after the first starts
// one item early: that overlap item must be the previous page's last item,
// which detects a shift (an insert or delete before the read position)
// between any two pages. The end is proven by an empty page or by the
// items reaching the upstream's exact total; a short page is not an end
// (the upstream may cap the page size below the one asked for).
type offsetDialect struct {
	p      config.PaginationConfig
	idPath string
}

func (d offsetDialect) stride() int { return max(d.p.PageSize-1, 1) }

func (d offsetDialect) query(p *listParams, st pageState) *url.URL {
	off := st.Offset
	if off > 0 {
		off--
	}
	p.set(d.p.OffsetParam, off)
	p.set(d.p.PageSizeParam, d.p.PageSize)
	return nil
}

func (d offsetDialect) parse(resp *Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	pg.next.Started = true
	if st.Offset > 0 {
		if len(items) == 0 {
			// The overlap item is gone: the collection shrank under us.
			pg.hasBoundary = true
			pg.boundary = ""
		} else {
			id, _ := jsonvalue.GetID(itemValue(items[0]), d.idPath)
			pg.boundary, pg.hasBoundary = id, true
			pg.items = items[1:]
		}
	}
	pg.next.Offset = st.Offset + len(pg.items)
	pg.next.Seen = pg.next.Offset
	full := fullPage(d.p, st, len(items))
	pg.next.LastFull = len(items) >= d.p.PageSize
	pg.next.MaxPage = max(st.MaxPage, len(items))
	total, known := pg.totalOf(d.p, resp, doc)
	reached := totalVerdict(&pg, total, known, full)
	switch {
	case len(pg.items) == 0:
		pg.proven(SignalEmptyPage)
	case reached:
		pg.proven(SignalTotalReached)
	}
	return pg, nil
}

func (d offsetDialect) more(*Response, any) bool { return false }

func (d offsetDialect) plan(st pageState) []pageState {
	if st.Total == nil || st.TotalUntrusted || !st.LastFull || st.Done || d.p.Concurrency <= 1 {
		return nil
	}
	var out []pageState
	for off := st.Offset; off < *st.Total; off += d.stride() {
		s := st
		s.Offset = off
		s.Seen = off
		out = append(out, s)
	}
	return out
}

// pageDialect reads numbered pages. As with offsets, only an empty page or
// the upstream's exact total proves the end.
type pageDialect struct{ p config.PaginationConfig }

func (d pageDialect) query(p *listParams, st pageState) *url.URL {
	n := st.Page
	if !st.Started {
		n = *d.p.FirstPage
	}
	p.set(d.p.PageParam, n)
	p.set(d.p.PageSizeParam, d.p.PageSize)
	return nil
}

func (d pageDialect) parse(resp *Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	if !st.Started {
		pg.next.Page = *d.p.FirstPage
	}
	read := pg.next.Page - *d.p.FirstPage + 1 // the page read, counted from 1
	pg.next.Started = true
	pg.next.Page++
	pg.next.Seen += len(items)
	full := fullPage(d.p, st, len(items))
	pg.next.LastFull = len(items) >= d.p.PageSize
	pg.next.MaxPage = max(st.MaxPage, len(items))
	total, known := pg.totalOf(d.p, resp, doc)
	reached := totalVerdict(&pg, total, known, full)
	if !reached && known && !st.Started && d.p.TotalExact && pg.next.Seen == total && len(items) < d.p.PageSize {
		// The first page holds as many items as the declared exact total,
		// and fewer than asked for: there is no page after it.
		reached = true
	}
	pages, counted, bad := readTotalPages(d.p, resp, doc)
	if bad != "" {
		pg.doubt(bad)
	}
	if counted {
		pg.totalPages = &pages
		if pg.next.TotalPages == nil {
			pg.next.TotalPages = &pages
		}
	}
	t := pg.next.Total
	switch {
	case counted && len(items) > 0 && read > pages:
		// Records on a page the upstream's own page count says does
		// not exist.
		pg.unknown(SignalPagesVsPage, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case reached:
		pg.proven(SignalTotalReached)
	case counted && read == pages && t != nil && !pg.next.TotalUntrusted && pg.next.Seen < *t:
		// The upstream's last page by its own count, and fewer records
		// than its own total.
		pg.unknown(SignalTotalVsPages, false)
	case counted && read == pages && !pg.next.TotalUntrusted:
		pg.proven(SignalTotalPages)
	}
	return pg, nil
}

// readTotalPages reads the page dialect's count of pages from the
// configured header or body path: a non-negative integer, else unknown;
// bad names it when it is there in another form.
func readTotalPages(p config.PaginationConfig, resp *Response, doc any) (n int, counted bool, bad string) {
	switch {
	case p.TotalPagesHeader != "":
		if resp == nil {
			return 0, false, ""
		}
		n, counted, st := readHeaderCount(resp.Header, p.TotalPagesHeader)
		if st == signalUnreadable {
			return 0, false, p.TotalPagesHeader
		}
		return n, counted, ""
	case p.TotalPages != "":
		n, counted, st := readCount(doc, p.TotalPages)
		if st == signalUnreadable {
			return 0, false, p.TotalPages
		}
		return n, counted, ""
	}
	return 0, false, ""
}

func (d pageDialect) more(*Response, any) bool { return false }

func (d pageDialect) plan(st pageState) []pageState {
	if (st.Total == nil && st.TotalPages == nil) || st.TotalUntrusted || !st.LastFull || st.Done || d.p.Concurrency <= 1 {
		return nil
	}
	var out []pageState
	for n := st.Page; d.plannedPage(st, n); n++ {
		s := st
		s.Page = n
		s.Seen = (n - *d.p.FirstPage) * d.p.PageSize
		out = append(out, s)
	}
	return out
}

// plannedPage reports whether page n exists by the upstream's own count of
// pages, or else by its total.
func (d pageDialect) plannedPage(st pageState, n int) bool {
	if st.TotalPages != nil {
		return n-*d.p.FirstPage < *st.TotalPages
	}
	return (n-*d.p.FirstPage)*d.p.PageSize < *st.Total
}

type continueDialect struct{ p config.PaginationConfig }

func (d continueDialect) query(p *listParams, st pageState) *url.URL {
	p.set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.set(d.p.ContinueParam, st.Cursor)
	}
	return nil
}

func (d continueDialect) parse(resp *Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	pg.next.Started = true
	pg.next.Seen += len(items)
	pg.next.LastFull = len(items) >= d.p.PageSize
	pg.next.MaxPage = max(st.MaxPage, len(items))
	// The resourceVersion is read as the snapshot the list declares, and
	// the remaining count as the list declares it (Resource.afterParse).
	total, known := pg.totalOf(d.p, resp, doc)
	totalVerdict(&pg, total, known, true)
	c, cst := readToken(doc, d.p.ContinuePath)
	pg.next.Cursor = c
	switch {
	case c != "":
		pg.next.SignalSeen = true
	case cst == signalUnreadable:
		pg.doubt(d.p.ContinuePath)
		pg.unknown(SignalUnreadable, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case cst == signalRead:
		pg.none(d.p, st, SignalContinueNone, len(items))
	default:
		// Kubernetes omits an empty continue token: proof only once the
		// token was seen on this scan or a probe showed it is sent.
		pg.absent(d.p, st, SignalContinueNone, len(items))
	}
	return pg, nil
}

func (d continueDialect) more(_ *Response, doc any) bool {
	c, st := readToken(doc, d.p.ContinuePath)
	return st == signalRead && c != ""
}

func (continueDialect) plan(pageState) []pageState { return nil }
