package dialect

import (
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// nextURLDialect follows the next page's URL read from the body: Django
// REST Framework's next (with count), Microsoft Graph's @odata.nextLink,
// Salesforce's nextRecordsUrl (with done), Twilio's next_page_uri
// (relative). Like Link headers, the URL is followed on the source's own
// host only. The end is proven by a next URL that is present and null or
// empty, an end flag that says last, an empty page, or the items reaching
// an exact total on a page that was not full; an absent next URL proves it
// only once an earlier page carried one, or a probe showed the upstream
// sends one.
type nextURLDialect struct{ p config.PaginationConfig }

// newNextURLDialect builds the next_url dialect.
func newNextURLDialect(p config.PaginationConfig, _ string) Dialect { return nextURLDialect{p} }

func (d nextURLDialect) Query(p *Params, st State) *url.URL {
	if st.NextURL != nil {
		return st.NextURL
	}
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	return nil
}

func (d nextURLDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg, full := newPage(d.p, st, items)
	total, known := pg.totalOf(d.p, resp, doc)
	reached := totalVerdict(&pg, total, known, full)
	last, fst := endFlag(&pg, d.p, doc)
	flagged := fst == Read
	next, nst := readURL(doc, d.p.Next)
	if nst == Unreadable {
		pg.Doubt(d.p.Next)
	}
	pg.Next.NextURL = nil
	if flagged && last {
		if next != "" {
			// The flag says last, and the same page names a next URL:
			// neither is believed.
			pg.Unknown(SignalFlagVsContinuation, false)
			return pg, nil
		}
		if nst == Unreadable {
			pg.Unknown(SignalUnreadable, false)
			return pg, nil
		}
		pg.proven(SignalIsLast)
		return pg, nil
	}
	if next != "" {
		u, err := url.Parse(next)
		if err != nil {
			return pg, transport.BadResponse("the next URL at %q does not parse", d.p.Next)
		}
		pg.Next.NextURL, pg.Next.SignalSeen = u, true
		return pg, nil
	}
	t := pg.Next.Total
	switch {
	case nst == Unreadable, fst == Unreadable:
		// The page says how to go on, or whether it is the last, in a
		// form that cannot be read.
		pg.Unknown(SignalUnreadable, false)
	case flagged:
		// The flag says more follows, but there is no URL to follow.
		pg.Unknown(SignalMoreNoCursor, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case reached:
		pg.proven(SignalTotalReached)
	case known && t != nil && !pg.Next.TotalUntrusted && pg.Next.Seen < *t:
		// Fewer items than the upstream's own total, and no way on: the
		// upstream stopped short (Scan.finishSource reports the cap).
		pg.proven(SignalNextURLNone)
	case nst == Read:
		pg.none(d.p, st, SignalNextURLNone, len(items))
	default:
		pg.absent(d.p, st, SignalNextURLNone, len(items))
	}
	return pg, nil
}

func (d nextURLDialect) More(_ *transport.Response, doc any) bool {
	next, st := readURL(doc, d.p.Next)
	return st == Read && next != ""
}

func (nextURLDialect) Plan(State) []State { return nil }
