package upstream

import (
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// continueDialect sends back the continue token each answer carries
// (Kubernetes' metadata.continue).
type continueDialect struct{ p config.PaginationConfig }

// newContinueDialect builds the continue dialect.
func newContinueDialect(p config.PaginationConfig, _ string) dialect { return continueDialect{p} }

func (d continueDialect) query(p *listParams, st pageState) *url.URL {
	p.set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.set(d.p.ContinueParam, st.Cursor)
	}
	return nil
}

func (d continueDialect) parse(resp *transport.Response, doc any, items []any, st pageState) (page, error) {
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

func (d continueDialect) more(_ *transport.Response, doc any) bool {
	c, st := readToken(doc, d.p.ContinuePath)
	return st == signalRead && c != ""
}

func (continueDialect) plan(pageState) []pageState { return nil }
