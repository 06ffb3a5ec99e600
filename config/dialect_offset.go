package config

// DialectOffset asks for pages by offset and limit, each page after the
// first overlapping the previous one by an item to detect shifts.
const DialectOffset = "offset"

// offsetKeys are the keys the offset dialect reads beyond sharedKeys.
// Concurrency: offsets are planned from a total, so pages can be read at
// once.
type offsetKeys struct {
	OffsetParam string `yaml:"offset_param"`
	Concurrency int    `yaml:"concurrency"`
}

// resolveOffset fills in the offset dialect's defaults.
func resolveOffset(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "limit")
	setDefault(&p.OffsetParam, "offset")
	if p.TotalHeader == "" {
		setDefault(&p.Total, "total")
	}
	setDefault(&p.Consistency, ConsistencyNone)
}

// checkOffset: the overlap item needs a page of two.
func checkOffset(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	if r.Pagination.PageSize == 1 {
		l.add("the offset dialect overlaps pages by one item to detect shifts, so it needs a page size of at least 2", at("pagination", "page_size")...)
	}
}
