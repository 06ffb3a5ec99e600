package dialect

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
func newBookmarkDialect(p config.PaginationConfig, _ string) Dialect {
	return bookmarkDialect{p}
}

func (d bookmarkDialect) Query(p *Params, st State) *url.URL {
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.Set(d.p.CursorParam, st.Cursor)
	}
	return nil
}

func (d bookmarkDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg, _ := newPage(d.p, st, items)
	total, known := pg.totalOf(d.p, resp, doc)
	totalVerdict(&pg, total, known, true)
	bm, bst := ReadToken(doc, d.p.NextCursor)
	switch {
	case bst == Unreadable:
		pg.Doubt(d.p.NextCursor)
		pg.Unknown(SignalUnreadable, false)
	case len(items) == 0:
		// CouchDB's last word: no documents, whatever the bookmark.
		pg.proven(SignalEmptyPage)
	case bm == "":
		// Documents, and nothing to ask for the next ones with: the list
		// may go on, and airlock cannot reach the rest.
		pg.Unknown(SignalNotSeen, false)
	case bm == st.Cursor:
		// The bookmark sent came back: the next request would be this one.
		pg.Unknown(SignalRepeatedPage, false)
	default:
		pg.Next.Cursor, pg.Next.SignalSeen = bm, true
	}
	return pg, nil
}

// More: a bookmark comes with every page, so the probe page's proves
// nothing about more pages.
func (d bookmarkDialect) More(*transport.Response, any) bool { return false }

func (d bookmarkDialect) Plan(State) []State { return nil }
