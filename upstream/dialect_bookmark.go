package upstream

import (
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// bookmarkDialect pages a Mango query by its bookmark (CouchDB's _find).
// CouchDB answers every page with a bookmark, the last one included, so
// only an empty page proves the end; a bookmark that does not move, or a
// page of items without one (PouchDB implements none), leaves the end
// unproven.
type bookmarkDialect struct {
	p config.PaginationConfig
}

// newBookmarkDialect builds the bookmark dialect.
func newBookmarkDialect(p config.PaginationConfig, _ string) dialect {
	return bookmarkDialect{p}
}

func (d bookmarkDialect) query(p *listParams, st pageState) *url.URL {
	p.set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.set(d.p.CursorParam, st.Cursor)
	}
	return nil
}

func (d bookmarkDialect) parse(resp *transport.Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	pg.next.Started = true
	pg.next.Seen += len(items)
	pg.next.LastFull = len(items) >= d.p.PageSize
	pg.next.MaxPage = max(st.MaxPage, len(items))
	total, known := pg.totalOf(d.p, resp, doc)
	totalVerdict(&pg, total, known, true)
	bm, bst := readToken(doc, d.p.NextCursor)
	switch {
	case bst == signalUnreadable:
		pg.doubt(d.p.NextCursor)
		pg.unknown(SignalUnreadable, false)
	case len(items) == 0:
		// CouchDB's last word: no documents, whatever the bookmark.
		pg.proven(SignalEmptyPage)
	case bm == "":
		// Documents, and nothing to ask for the next ones with: the list
		// may go on, and airlock cannot reach the rest.
		pg.unknown(SignalNotSeen, false)
	case bm == st.Cursor:
		// The bookmark sent came back: the next request would be this one.
		pg.unknown(SignalRepeatedPage, false)
	default:
		pg.next.Cursor, pg.next.SignalSeen = bm, true
	}
	return pg, nil
}

// more: a bookmark comes with every page, so the probe page's proves
// nothing about more pages.
func (d bookmarkDialect) more(*transport.Response, any) bool { return false }

func (d bookmarkDialect) plan(pageState) []pageState { return nil }
