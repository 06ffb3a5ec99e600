package template

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// A path template may carry a query: MediaWiki's whole API is one path,
// /api.php, and what a request does is said by its query
// (/api.php?action=query&pageids={{id}}&format=json). The path part is
// rendered as before, each value escaped as one path segment; the query
// part is split into parameters, each value rendered and then encoded as a
// query value, so that neither its ? nor an id's & or # can change what
// is asked.

// SplitPathQuery splits a path template at its first ?: the path, and the
// query's parameters in order as written (their names and literal text
// unescaped; {{references}} left as they are). hasQuery is false when
// there is no ?. The error names the parameter that does not parse.
func SplitPathQuery(p string) (path string, params [][2]string, hasQuery bool, err error) {
	path, raw, hasQuery := strings.Cut(p, "?")
	if !hasQuery {
		return path, nil, false, nil
	}
	if strings.Contains(raw, "#") {
		return path, nil, true, fmt.Errorf("a path's query cannot hold a fragment (#)")
	}
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(k)
		if err != nil || name == "" {
			return path, nil, true, fmt.Errorf("the query parameter %q does not parse", k)
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return path, nil, true, fmt.Errorf("the value of query parameter %q does not parse", name)
		}
		params = append(params, [2]string{name, val})
	}
	return path, params, true, nil
}

// RenderURL fills a path template that may hold a query: the path's
// values escaped as path segments (RenderPath), the query's rendered as
// text, to be encoded once as query values. q is nil without a query.
func (v Vars) RenderURL(p string) (path string, q url.Values, err error) {
	path, params, hasQuery, err := SplitPathQuery(p)
	if err != nil {
		return "", nil, err
	}
	if path, err = v.RenderPath(path); err != nil {
		return "", nil, err
	}
	if !hasQuery {
		return path, nil, nil
	}
	q = url.Values{}
	for _, kv := range params {
		val, err := v.Render(kv[1])
		if err != nil {
			return "", nil, err
		}
		q.Add(kv[0], jsonvalue.String(val))
	}
	return path, q, nil
}
