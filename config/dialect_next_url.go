package config

// DialectNextURL follows a next page's URL read from the body (Django
// REST Framework's next, Microsoft Graph's @odata.nextLink), with an
// optional end flag (Salesforce's done).
const DialectNextURL = "next_url"

// nextURLKeys are the keys the next_url dialect reads beyond sharedKeys.
type nextURLKeys struct {
	Next    string `yaml:"next"`
	HasMore string `yaml:"has_more"`
	IsLast  string `yaml:"is_last"`
}

// resolveNextURL fills in the next_url dialect's defaults: Django REST
// Framework's names.
func resolveNextURL(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "page_size")
	setDefault(&p.Next, "next")
	setDefault(&p.Consistency, ConsistencyNone)
}

// checkNextURL refuses two end flags.
func checkNextURL(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	checkEndFlags(l, r.Pagination, at)
}
