package config

// DialectLink follows the rel="next" target of an RFC 8288 Link header
// (GitHub, json-server).
const DialectLink = "link"

// linkKeys: the link dialect reads only the shared keys; the way on is in
// the answer's headers.
type linkKeys struct{}

// resolveLink fills in the link dialect's defaults: GitHub's names.
func resolveLink(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "per_page")
	setDefault(&p.Consistency, ConsistencyNone)
}
