package dialect

import (
	"net/http"
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// State is where one source's scan stands: enough to fetch the next
// page, and to resume the scan in a later call.
type State struct {
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
	// MaxEvaluated is the most items one page evaluated so far
	// (pagination.evaluated): an upstream that stops its pages short of
	// the size asked for (DynamoDB at 1 MB read) evaluates that many.
	MaxEvaluated int
	Started      bool
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
	Recheck      *State
	RecheckItems int
	// RecheckIDs are the ids of the page's items, hashed (Scan.recheck):
	// the answer to the smaller request must hold only those, or it was
	// read at another place in the list (a next link that numbers its
	// pages by their size). Their order is not compared: an answer may
	// list a place's items in another order than it read them
	// (MediaWiki's generator pages, by page id).
	RecheckIDs []uint64
	// RecheckFollowing says Recheck is the page after the whole page, by
	// its number (a next link that numbers its pages: GitHub's page=N),
	// not the page itself one item smaller: an empty answer there proves
	// the end.
	RecheckFollowing bool
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
	// SignalLastLink: a whole page's Link header names the page itself
	// as rel="last".
	SignalLastLink = "last_link_is_this_page"

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

// Page is one parsed response.
type Page struct {
	Items      []any
	Total      *int
	TotalPages *int
	Estimate   *int // a declared remaining count (an estimate, per Kubernetes)
	Snapshot   string
	// NoSnapshot: the page did not name the snapshot the list declares
	// where it must (NO_SNAPSHOT).
	NoSnapshot bool
	// Boundary is the overlap item of an offset page (its first item, which
	// must be the previous page's last item).
	Boundary    string
	HasBoundary bool
	Next        State
	Doc         any
	Header      http.Header
	// UpstreamErrors quotes errors the upstream reported beside the
	// page's data (GraphQL): the page is read, the answer is partial.
	UpstreamErrors string
	// Doubts are the declared signals the page holds in a form that
	// cannot be read (SIGNAL_UNREADABLE): the answer is partial, whatever
	// the other signals say.
	Doubts []string
}

// Doubt records a declared signal the page holds unreadable.
func (pg *Page) Doubt(member string) {
	for _, d := range pg.Doubts {
		if d == member {
			return
		}
	}
	pg.Doubts = append(pg.Doubts, member)
}

// proven, unknown and more set the page's end verdict. A dialect calls
// exactly one of them for every page.
func (pg *Page) proven(signal string) {
	pg.Next.Done, pg.Next.End, pg.Next.EndSignal, pg.Next.Probe = true, envelope.EndProven, signal, false
}

// Unknown ends the source without proof, or (probe) asks for the one
// request that can settle it.
func (pg *Page) Unknown(signal string, probe bool) {
	if probe {
		pg.Next.Probe, pg.Next.EndSignal = true, signal
		return
	}
	pg.Next.Done, pg.Next.End, pg.Next.EndSignal, pg.Next.Probe = true, envelope.EndUnproven, signal, false
}

// absent is the verdict on a page of n items without the dialect's "more
// follows" signal: on a short page, proven when an earlier page carried
// it, else settled by a probe. A whole page without it proves nothing by
// itself: a signal dropped from one page looks the same as a list that
// ended on a full page. Its own request asked for again one item smaller
// settles it (Scan.recheck), where the request can be made smaller: a
// cursor's, or a next URL that names the page size; else the end is
// unproven (next_signal_missing).
func (pg *Page) absent(p config.PaginationConfig, st State, signal string, n int) {
	switch {
	case !shortPage(p, st, n) && resizable(p, st):
		pg.Unknown(signal, true)
		rc := st
		rc.Recheck = nil
		pg.Next.Recheck, pg.Next.RecheckItems = &rc, n
	case !shortPage(p, st, n):
		pg.Unknown(SignalMissingOnFull, false)
	case st.SignalSeen:
		pg.proven(signal)
	default:
		pg.Unknown(signal, true)
	}
}

// none is the verdict on a page of n items whose continuation (a cursor, a
// continue token, a next URL or link, a continuation object) is there and
// says there is none: the end, on a short page. On a whole page it is
// rechecked as an absent one is (absent): one answer whose continuation
// was emptied looks the same as a list that ended on a full page.
func (pg *Page) none(p config.PaginationConfig, st State, signal string, n int) {
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
func resizable(p config.PaginationConfig, st State) bool {
	if st.NextURL == nil {
		return true
	}
	return p.PageSizeParam != "" && st.NextURL.Query().Has(p.PageSizeParam)
}

// shortPage reports whether a page of n items holds fewer than were asked
// for and fewer than the upstream has served on one page: a page the list
// may end on without saying so.
func shortPage(p config.PaginationConfig, st State, n int) bool {
	return n < p.PageSize && (st.MaxPage == 0 || n < st.MaxPage)
}

// Dialect builds page requests and parses page responses.
type Dialect interface {
	// Query sets the pagination parameters for the page st points at, or
	// returns the URL to follow (a next link read from the last page).
	Query(p *Params, st State) (nextURL *url.URL)
	// Parse reads a response and returns the page with the next state,
	// whose verdict on the end (Done, End, EndSignal, Probe) the dialect
	// must set from what the page proves, never from a missing signal.
	Parse(resp *transport.Response, doc any, items []any, st State) (Page, error)
	// Plan returns the states of every remaining page when they can be
	// fetched concurrently (a total is known), else nil.
	Plan(st State) []State
	// More reports whether a probe page (the first page at page size 1)
	// carries the signal that more pages follow.
	More(resp *transport.Response, doc any) bool
}

// dialects builds each dialect's runtime from its resolved pagination and
// the items' id path, by the name of its kind in config's table
// (config.DialectKinds): a dialect is its kind there, its runtime in
// dialect_NAME.go here, and a row of each table. A test holds the two
// tables to the same names.
var dialects = map[string]func(p config.PaginationConfig, idPath string) Dialect{
	config.DialectCursor:         newCursorDialect,
	config.DialectLink:           newLinkDialect,
	config.DialectOffset:         newOffsetDialect,
	config.DialectPage:           newPageDialect,
	config.DialectContinue:       newContinueDialect,
	config.DialectNextURL:        newNextURLDialect,
	config.DialectGraphQL:        newGraphQLDialect,
	config.DialectSearchAfter:    newSearchAfterDialect,
	config.DialectContinueObject: newObjectDialect,
	config.DialectBookmark:       newBookmarkDialect,
}

// New builds the dialect p names, nil for a name no kind has.
func New(p config.PaginationConfig, idPath string) Dialect {
	if build, ok := dialects[p.Dialect]; ok {
		return build(p, idPath)
	}
	return nil
}

// IsConflict reports whether an end signal names a contradiction (see
// the signals of CONFLICTING_EVIDENCE) rather than a missing signal.
func IsConflict(signal string) bool { return conflictSignals[signal] }

// endFlag reads the page's end flag: has_more (true: more follows) or
// is_last (true: this is the last page). st is the flag's state: a flag
// the page holds unreadable is doubt on the page, and no flag.
func endFlag(pg *Page, p config.PaginationConfig, doc any) (last bool, st Reading) {
	path := p.IsLast
	if path == "" {
		path = p.HasMore
	}
	b, st := readFlag(doc, path)
	if st == Unreadable {
		pg.Doubt(path)
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

// ReadTotal reads the upstream's total from the configured header or body
// path. Only a non-negative integer is a total: a negative (PocketBase's
// skipTotal answers -1) or null one is not counted, and a missing one
// unknown; one of another form is unreadable, and bad names its member.
func ReadTotal(p config.PaginationConfig, resp *transport.Response, doc any) (n int, known bool, bad string) {
	switch {
	case p.TotalHeader != "":
		if resp == nil {
			return 0, false, ""
		}
		n, counted, st := readHeaderCount(resp.Header, p.TotalHeader)
		if st == Unreadable {
			return 0, false, p.TotalHeader
		}
		return n, counted, ""
	case p.Total != "" && p.Total != config.NoTotal:
		n, counted, st := ReadCount(doc, p.Total)
		switch st {
		case Unreadable:
			return 0, false, p.Total
		case Absent:
			return 0, false, ""
		}
		if p.TotalRelation != "" {
			// Elasticsearch's {"value": 10000, "relation": "gte"} is a
			// bound, not a total.
			rel, rst := ReadToken(doc, p.TotalRelation)
			if rst == Unreadable {
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

// total reads the page's total (see ReadTotal), recording an unreadable
// one as doubt.
func (pg *Page) totalOf(p config.PaginationConfig, resp *transport.Response, doc any) (int, bool) {
	n, known, bad := ReadTotal(p, resp, doc)
	if bad != "" {
		pg.Doubt(bad)
	}
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
func totalVerdict(pg *Page, total int, known bool, full bool) (reached bool) {
	if known {
		pg.Total = &total
		if pg.Next.Total == nil {
			pg.Next.Total = &total
		}
	}
	t := pg.Next.Total
	if t == nil || pg.Next.TotalUntrusted {
		return false
	}
	if pg.Next.Seen > *t {
		pg.Next.TotalUntrusted = true
		return false
	}
	return known && pg.Next.Seen == total && !full
}

// newPage starts the verdict on a page of items read from the state st:
// the items counted, the largest page seen, and whether this page was full
// (see fullPage).
func newPage(p config.PaginationConfig, st State, items []any) (pg Page, full bool) {
	pg = Page{Items: items, Next: st}
	pg.Next.Started = true
	pg.Next.Seen += len(items)
	full = fullPage(p, st, len(items))
	pg.Next.LastFull = len(items) >= p.PageSize
	pg.Next.MaxPage = max(st.MaxPage, len(items))
	return pg, full
}

// isEmptyObject reports whether doc is {}.
func isEmptyObject(doc any) bool {
	m, ok := doc.(map[string]any)
	return ok && len(m) == 0
}

// fullPage reports whether a page of n items filled the page: the size
// asked for, or the upstream's own smaller cap once a page showed it.
func fullPage(p config.PaginationConfig, st State, n int) bool {
	if st.MaxPage == 0 {
		// No page has shown the upstream's page size yet.
		return n > 0
	}
	return n >= min(p.PageSize, st.MaxPage)
}
