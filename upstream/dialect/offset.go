package dialect

import (
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

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

// newOffsetDialect builds the offset dialect.
func newOffsetDialect(p config.PaginationConfig, idPath string) Dialect {
	return offsetDialect{p, idPath}
}

func (d offsetDialect) stride() int { return max(d.p.PageSize-1, 1) }

func (d offsetDialect) Query(p *Params, st State) *url.URL {
	off := st.Offset
	if off > 0 {
		off--
	}
	p.Set(d.p.OffsetParam, off)
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	return nil
}

func (d offsetDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg := Page{Items: items, Next: st}
	pg.Next.Started = true
	if st.Offset > 0 {
		if len(items) == 0 {
			// The overlap item is gone: the collection shrank under us.
			pg.HasBoundary = true
			pg.Boundary = ""
		} else {
			id, _ := jsonvalue.GetID(ItemValue(items[0]), d.idPath)
			pg.Boundary, pg.HasBoundary = id, true
			pg.Items = items[1:]
		}
	}
	pg.Next.Offset = st.Offset + len(pg.Items)
	pg.Next.Seen = pg.Next.Offset
	full := fullPage(d.p, st, len(items))
	pg.Next.LastFull = len(items) >= d.p.PageSize
	pg.Next.MaxPage = max(st.MaxPage, len(items))
	total, known := pg.totalOf(d.p, resp, doc)
	reached := totalVerdict(&pg, total, known, full)
	switch {
	case len(pg.Items) == 0:
		pg.proven(SignalEmptyPage)
	case reached:
		pg.proven(SignalTotalReached)
	}
	return pg, nil
}

func (d offsetDialect) More(*transport.Response, any) bool { return false }

func (d offsetDialect) Plan(st State) []State {
	if st.Total == nil || st.TotalUntrusted || !st.LastFull || st.Done || d.p.Concurrency <= 1 {
		return nil
	}
	var out []State
	for off := st.Offset; off < *st.Total; off += d.stride() {
		s := st
		s.Offset = off
		s.Seen = off
		out = append(out, s)
	}
	return out
}
