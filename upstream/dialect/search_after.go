package dialect

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
func newSearchAfterDialect(p config.PaginationConfig, _ string) Dialect {
	return searchAfterDialect{p}
}

func (d searchAfterDialect) Query(p *Params, st State) *url.URL {
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.Set(d.p.SearchAfter, searchAfterValue(st.Cursor))
	}
	if st.PIT != "" && d.p.PIT != nil {
		p.Set(d.p.PIT.Param, st.PIT)
	}
	return nil
}

func (d searchAfterDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg, full := newPage(d.p, st, items)
	if pit := d.p.PIT; pit != nil {
		if pit.Response != "" {
			switch id, st := ReadToken(doc, pit.Response); {
			case st == Unreadable:
				pg.Doubt(pit.Response)
			case id != "":
				pg.Next.PIT = id
			}
		}
		if !st.Started {
			pg.Snapshot = st.PIT
		}
	}
	total, known := pg.totalOf(d.p, resp, doc)
	reached := totalVerdict(&pg, total, known, full)
	if len(items) == 0 {
		pg.proven(SignalEmptyPage)
		return pg, nil
	}
	// The last item's sort values are the continuation, read on every
	// page that holds items, the last one included.
	sv, sst := readSortValues(ItemValue(items[len(items)-1]), d.p.SortValues)
	switch {
	case sst == Unreadable:
		pg.Doubt(d.p.SortValues)
		pg.Unknown(SignalUnreadable, false)
		return pg, nil
	case reached:
		pg.proven(SignalTotalReached)
		return pg, nil
	case sst == Absent:
		return pg, transport.BadResponse("the last item has no sort values at %q to continue from", d.p.SortValues)
	}
	b, err := jsonvalue.Canonical(sv)
	if err != nil {
		return pg, transport.BadResponse("the last item's sort values cannot be encoded")
	}
	pg.Next.Cursor, pg.Next.SignalSeen = string(b), true
	return pg, nil
}

// More: a search_after list has no "more follows" signal; its ends are
// proven without one, so it never asks for a probe.
func (searchAfterDialect) More(*transport.Response, any) bool { return false }

func (searchAfterDialect) Plan(State) []State { return nil }

// readSortValues reads an item's sort values: a non-empty array. null,
// an empty array or any other value is unreadable: sent back, it would
// continue from nowhere the upstream named.
func readSortValues(item any, path string) (any, Reading) {
	v, ok := jsonvalue.Get(item, path)
	if !ok {
		return nil, Absent
	}
	if arr, isArr := v.([]any); isArr && len(arr) > 0 {
		return v, Read
	}
	return nil, Unreadable
}
