package config

// DialectPage asks for numbered pages, and may read the upstream's count
// of pages.
const DialectPage = "page"

// pageKeys are the keys the page dialect reads beyond sharedKeys.
// Concurrency: numbered pages are planned from a total or a page count,
// so pages can be read at once.
type pageKeys struct {
	PageParam        string `yaml:"page_param"`
	FirstPage        *int   `yaml:"first_page"`
	TotalPages       string `yaml:"total_pages"`
	TotalPagesHeader string `yaml:"total_pages_header"`
	Concurrency      int    `yaml:"concurrency"`
}

// resolvePage fills in the page dialect's defaults: pages counted from 1.
func resolvePage(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "per_page")
	setDefault(&p.PageParam, "page")
	if p.TotalHeader == "" {
		setDefault(&p.Total, "total")
	}
	if p.FirstPage == nil {
		one := 1
		p.FirstPage = &one
	}
	setDefault(&p.Consistency, ConsistencyNone)
}

// checkPage: the count of pages is read from one place.
func checkPage(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	if pg := r.Pagination; pg.TotalPages != "" && pg.TotalPagesHeader != "" {
		l.add("set one of total_pages (a body path) or total_pages_header", at("pagination", "total_pages_header")...)
	}
}
