package upstream

import (
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// searchAfterDialect continues after the last item's sort values
// (Elasticsearch and OpenSearch search_after), in a point in time when one
// is configured (whose id the scan opens first and carries from answer to
// answer). The end is proven by an empty page or by the items reaching an
// exact total on a page that was not full; a short page is read past.
type searchAfterDialect struct{ p config.PaginationConfig }

// newSearchAfterDialect builds the search_after dialect.
func newSearchAfterDialect(p config.PaginationConfig, _ string) dialect {
	return searchAfterDialect{p}
}

func (d searchAfterDialect) query(p *listParams, st pageState) *url.URL {
	p.set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.set(d.p.SearchAfter, searchAfterValue(st.Cursor))
	}
	if st.PIT != "" && d.p.PIT != nil {
		p.set(d.p.PIT.Param, st.PIT)
	}
	return nil
}

func (d searchAfterDialect) parse(resp *transport.Response, doc any, items []any, st pageState) (page, error) {
	pg, full := newPage(d.p, st, items)
	if pit := d.p.PIT; pit != nil {
		if pit.Response != "" {
			switch id, st := readToken(doc, pit.Response); {
			case st == signalUnreadable:
				pg.doubt(pit.Response)
			case id != "":
				pg.next.PIT = id
			}
		}
		if !st.Started {
			pg.snapshot = st.PIT
		}
	}
	total, known := pg.totalOf(d.p, resp, doc)
	reached := totalVerdict(&pg, total, known, full)
	switch {
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
		return pg, nil
	case reached:
		pg.proven(SignalTotalReached)
		return pg, nil
	}
	sv, ok := jsonvalue.Get(itemValue(items[len(items)-1]), d.p.SortValues)
	if !ok || sv == nil {
		return pg, transport.BadResponse("the last item has no sort values at %q to continue from", d.p.SortValues)
	}
	b, err := jsonvalue.Canonical(sv)
	if err != nil {
		return pg, transport.BadResponse("the last item's sort values cannot be encoded")
	}
	pg.next.Cursor, pg.next.SignalSeen = string(b), true
	return pg, nil
}

// more: a search_after list has no "more follows" signal; its ends are
// proven without one, so it never asks for a probe.
func (searchAfterDialect) more(*transport.Response, any) bool { return false }

func (searchAfterDialect) plan(pageState) []pageState { return nil }
