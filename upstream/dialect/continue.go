package dialect

import (
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// continueDialect sends back the continue token each answer carries
// (Kubernetes' metadata.continue).
type continueDialect struct{ p config.PaginationConfig }

// newContinueDialect builds the continue dialect.
func newContinueDialect(p config.PaginationConfig, _ string) Dialect { return continueDialect{p} }

func (d continueDialect) Query(p *Params, st State) *url.URL {
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.Set(d.p.ContinueParam, st.Cursor)
	}
	return nil
}

func (d continueDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg, _ := newPage(d.p, st, items)
	// The resourceVersion is read as the snapshot the list declares, and
	// the remaining count as the list declares it (Resource.afterParse).
	total, known := pg.totalOf(d.p, resp, doc)
	totalVerdict(&pg, total, known, true)
	c, cst := ReadToken(doc, d.p.ContinuePath)
	pg.Next.Cursor = c
	switch {
	case c != "":
		pg.Next.SignalSeen = true
	case cst == Unreadable:
		pg.Doubt(d.p.ContinuePath)
		pg.Unknown(SignalUnreadable, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case cst == Read:
		pg.none(d.p, st, SignalContinueNone, len(items))
	default:
		// Kubernetes omits an empty continue token: proof only once the
		// token was seen on this scan or a probe showed it is sent.
		pg.absent(d.p, st, SignalContinueNone, len(items))
	}
	return pg, nil
}

func (d continueDialect) More(_ *transport.Response, doc any) bool {
	c, st := ReadToken(doc, d.p.ContinuePath)
	return st == Read && c != ""
}

func (continueDialect) Plan(State) []State { return nil }
