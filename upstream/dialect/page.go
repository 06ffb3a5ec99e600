package dialect

import (
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// pageDialect reads numbered pages. As with offsets, only an empty page or
// the upstream's exact total proves the end.
type pageDialect struct{ p config.PaginationConfig }

// newPageDialect builds the page dialect.
func newPageDialect(p config.PaginationConfig, _ string) Dialect { return pageDialect{p} }

func (d pageDialect) Query(p *Params, st State) *url.URL {
	n := st.Page
	if !st.Started {
		n = *d.p.FirstPage
	}
	p.Set(d.p.PageParam, n)
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	return nil
}

func (d pageDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg := Page{Items: items, Next: st}
	if !st.Started {
		pg.Next.Page = *d.p.FirstPage
	}
	read := pg.Next.Page - *d.p.FirstPage + 1 // the page read, counted from 1
	pg.Next.Started = true
	pg.Next.Page++
	pg.Next.Seen += len(items)
	full := fullPage(d.p, st, len(items))
	pg.Next.LastFull = len(items) >= d.p.PageSize
	pg.Next.MaxPage = max(st.MaxPage, len(items))
	total, known := pg.totalOf(d.p, resp, doc)
	reached := totalVerdict(&pg, total, known, full)
	if !reached && known && !st.Started && d.p.TotalExact && pg.Next.Seen == total && len(items) < d.p.PageSize {
		// The first page holds as many items as the declared exact total,
		// and fewer than asked for: there is no page after it.
		reached = true
	}
	pages, counted, bad := ReadTotalPages(d.p, resp, doc)
	if bad != "" {
		pg.Doubt(bad)
	}
	if counted {
		pg.TotalPages = &pages
		if pg.Next.TotalPages == nil {
			pg.Next.TotalPages = &pages
		}
	}
	t := pg.Next.Total
	switch {
	case counted && len(items) > 0 && read > pages:
		// Records on a page the upstream's own page count says does
		// not exist.
		pg.Unknown(SignalPagesVsPage, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case reached:
		pg.proven(SignalTotalReached)
	case counted && read == pages && t != nil && !pg.Next.TotalUntrusted && pg.Next.Seen < *t:
		// The upstream's last page by its own count, and fewer records
		// than its own total.
		pg.Unknown(SignalTotalVsPages, false)
	case counted && read == pages && !pg.Next.TotalUntrusted:
		pg.proven(SignalTotalPages)
	}
	return pg, nil
}

// ReadTotalPages reads the page dialect's count of pages from the
// configured header or body path: a non-negative integer, else unknown;
// bad names it when it is there in another form.
func ReadTotalPages(p config.PaginationConfig, resp *transport.Response, doc any) (n int, counted bool, bad string) {
	switch {
	case p.TotalPagesHeader != "":
		if resp == nil {
			return 0, false, ""
		}
		n, counted, st := readHeaderCount(resp.Header, p.TotalPagesHeader)
		if st == Unreadable {
			return 0, false, p.TotalPagesHeader
		}
		return n, counted, ""
	case p.TotalPages != "":
		n, counted, st := ReadCount(doc, p.TotalPages)
		if st == Unreadable {
			return 0, false, p.TotalPages
		}
		return n, counted, ""
	}
	return 0, false, ""
}

func (d pageDialect) More(*transport.Response, any) bool { return false }

func (d pageDialect) Plan(st State) []State {
	if (st.Total == nil && st.TotalPages == nil) || st.TotalUntrusted || !st.LastFull || st.Done || d.p.Concurrency <= 1 {
		return nil
	}
	var out []State
	for n := st.Page; d.plannedPage(st, n); n++ {
		s := st
		s.Page = n
		s.Seen = (n - *d.p.FirstPage) * d.p.PageSize
		out = append(out, s)
	}
	return out
}

// plannedPage reports whether page n exists by the upstream's own count of
// pages, or else by its total.
func (d pageDialect) plannedPage(st State, n int) bool {
	if st.TotalPages != nil {
		return n-*d.p.FirstPage < *st.TotalPages
	}
	return (n-*d.p.FirstPage)*d.p.PageSize < *st.Total
}
