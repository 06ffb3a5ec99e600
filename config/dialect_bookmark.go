package config

// DialectBookmark pages a CouchDB Mango query (POST /db/_find): each
// answer hands out a bookmark, sent back in the next request's body.
// CouchDB hands one out on every page, the last included, so a bookmark
// proves nothing about the end: an empty page does. PouchDB Server's
// _find hands out none (its pages are asked for by skip and limit in the
// body: the offset dialect), and an answer without one is never taken for
// the end.
const DialectBookmark = "bookmark"

// bookmarkKeys are the keys the bookmark dialect reads beyond sharedKeys:
// where the answer holds the bookmark (next_cursor) and where the body
// sends it back (cursor_param).
type bookmarkKeys struct {
	CursorParam string `yaml:"cursor_param"`
	NextCursor  string `yaml:"next_cursor"`
}

// resolveBookmark fills in CouchDB's names: limit, bookmark, and no total
// (_find reports none).
func resolveBookmark(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "limit")
	setDefault(&p.CursorParam, "bookmark")
	setDefault(&p.NextCursor, "bookmark")
	setDefault(&p.Consistency, ConsistencyNone)
}
