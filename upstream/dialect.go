package upstream

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// pageState is where one source's scan stands: enough to fetch the next
// page, and to resume the scan in a later call.
type pageState struct {
	Cursor   string   // cursor: next cursor; continue: continue token
	NextURL  *url.URL // link: rel="next"
	Offset   int      // offset: first new item of the next page
	Page     int      // page: next page number
	Snapshot string   // continue: resourceVersion of the first page
	Total    *int     // offset, page: total seen on the first page
	LastID   string   // offset: id of the last item read (overlap check)
	Started  bool
	Done     bool
}

// page is one parsed response.
type page struct {
	items    []any
	total    *int
	estimate *int // continue: remainingItemCount (an estimate, per Kubernetes)
	snapshot string
	// boundary is the overlap item of an offset page (its first item, which
	// must be the previous page's last item).
	boundary    string
	hasBoundary bool
	next        pageState
	doc         any
	header      http.Header
}

// dialect builds page requests and parses page responses.
type dialect interface {
	// query sets the pagination parameters for the page st points at.
	query(q url.Values, st pageState) (nextURL *url.URL)
	// parse reads a response and returns the page with the next state.
	parse(resp *Response, doc any, items []any, st pageState) (page, error)
	// plan returns the states of every remaining page when they can be
	// fetched concurrently (a total is known), else nil.
	plan(st pageState) []pageState
}

func newDialect(p PaginationConfig, idPath string) dialect {
	switch p.Dialect {
	case DialectCursor:
		return cursorDialect{p, idPath}
	case DialectLink:
		return linkDialect{p}
	case DialectOffset:
		return offsetDialect{p, idPath}
	case DialectPage:
		return pageDialect{p}
	case DialectContinue:
		return continueDialect{p}
	}
	return nil
}

type cursorDialect struct {
	p      PaginationConfig
	idPath string
}

func (d cursorDialect) query(q url.Values, st pageState) *url.URL {
	q.Set(d.p.PageSizeParam, strconv.Itoa(d.p.PageSize))
	if st.Cursor != "" {
		q.Set(d.p.CursorParam, st.Cursor)
	}
	return nil
}

func (d cursorDialect) parse(_ *Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	pg.next.Started = true
	if d.p.HasMore != "" {
		hm, ok := getPath(doc, d.p.HasMore)
		more, isBool := hm.(bool)
		if !ok || !isBool {
			return pg, badResponse("%s is missing or not a boolean", d.p.HasMore)
		}
		if !more {
			pg.next.Done = true
			return pg, nil
		}
		if len(items) == 0 {
			return pg, badResponse("%s is true on an empty page", d.p.HasMore)
		}
		id, ok := itemID(items[len(items)-1], d.idPath)
		if !ok {
			return pg, badResponse("the last item has no id to continue from")
		}
		pg.next.Cursor = id
		return pg, nil
	}
	nc, _ := getPath(doc, d.p.NextCursor)
	s, _ := nc.(string)
	if s == "" {
		pg.next.Done = true
		return pg, nil
	}
	pg.next.Cursor = s
	return pg, nil
}

func (cursorDialect) plan(pageState) []pageState { return nil }

type linkDialect struct{ p PaginationConfig }

func (d linkDialect) query(q url.Values, st pageState) *url.URL {
	if st.NextURL != nil {
		return st.NextURL
	}
	q.Set(d.p.PageSizeParam, strconv.Itoa(d.p.PageSize))
	return nil
}

func (d linkDialect) parse(resp *Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	pg.next.Started = true
	next := nextLink(resp.Header)
	if next == "" {
		pg.next.Done = true
		pg.next.NextURL = nil
		return pg, nil
	}
	u, err := url.Parse(next)
	if err != nil {
		return pg, badResponse("the Link header's next URL does not parse")
	}
	pg.next.NextURL = u
	return pg, nil
}

func (linkDialect) plan(pageState) []pageState { return nil }

// nextLink returns the rel="next" target of an RFC 8288 Link header.
func nextLink(h http.Header) string {
	for _, v := range h.Values("Link") {
		for _, part := range splitOutside(v, ',') {
			part = strings.TrimSpace(part)
			if !strings.HasPrefix(part, "<") {
				continue
			}
			end := strings.IndexByte(part, '>')
			if end < 0 {
				continue
			}
			target := part[1:end]
			for _, p := range splitOutside(part[end+1:], ';') {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(val), `"`)) {
					if strings.EqualFold(rel, "next") {
						return target
					}
				}
			}
		}
	}
	return ""
}

// splitOutside splits v on sep where sep is neither inside <...> nor inside
// a quoted string (where a backslash escapes the next character).
func splitOutside(v string, sep byte) []string {
	var out []string
	inAngle, inQuote, escaped := false, false, false
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case escaped:
			escaped = false
		case inQuote:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inQuote = false
			}
		case inAngle:
			if c == '>' {
				inAngle = false
			}
		case c == '"':
			inQuote = true
		case c == '<':
			inAngle = true
		case c == sep:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

// offsetDialect reads offset/limit pages. Every page after the first starts
// one item early: that overlap item must be the previous page's last item,
// which detects a shift (an insert or delete before the read position)
// between any two pages.
type offsetDialect struct {
	p      PaginationConfig
	idPath string
}

func (d offsetDialect) stride() int { return max(d.p.PageSize-1, 1) }

func (d offsetDialect) query(q url.Values, st pageState) *url.URL {
	off := st.Offset
	if off > 0 {
		off--
	}
	q.Set(d.p.OffsetParam, strconv.Itoa(off))
	q.Set(d.p.PageSizeParam, strconv.Itoa(d.p.PageSize))
	return nil
}

func (d offsetDialect) parse(_ *Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	pg.next.Started = true
	total, ok := intAt(doc, d.p.Total)
	if !ok {
		return pg, badResponse("%s is missing or not an integer", d.p.Total)
	}
	pg.total = &total
	if st.Offset > 0 {
		if len(items) == 0 {
			// The overlap item is gone: the collection shrank under us.
			pg.hasBoundary = true
			pg.boundary = ""
		} else {
			id, _ := itemID(items[0], d.idPath)
			pg.boundary, pg.hasBoundary = id, true
			pg.items = items[1:]
		}
	}
	if pg.next.Total == nil {
		pg.next.Total = &total
	}
	pg.next.Offset = st.Offset + len(pg.items)
	if len(items) < d.p.PageSize || pg.next.Offset >= total {
		pg.next.Done = true
	}
	return pg, nil
}

func (d offsetDialect) plan(st pageState) []pageState {
	if st.Total == nil || st.Done || d.p.Concurrency <= 1 {
		return nil
	}
	var out []pageState
	for off := st.Offset; off < *st.Total; off += d.stride() {
		s := st
		s.Offset = off
		out = append(out, s)
	}
	return out
}

type pageDialect struct{ p PaginationConfig }

func (d pageDialect) query(q url.Values, st pageState) *url.URL {
	n := st.Page
	if !st.Started {
		n = *d.p.FirstPage
	}
	q.Set(d.p.PageParam, strconv.Itoa(n))
	q.Set(d.p.PageSizeParam, strconv.Itoa(d.p.PageSize))
	return nil
}

func (d pageDialect) parse(_ *Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	if !st.Started {
		pg.next.Page = *d.p.FirstPage
	}
	pg.next.Started = true
	total, ok := intAt(doc, d.p.Total)
	if !ok {
		return pg, badResponse("%s is missing or not an integer", d.p.Total)
	}
	pg.total = &total
	if pg.next.Total == nil {
		pg.next.Total = &total
	}
	read := (pg.next.Page - *d.p.FirstPage + 1) * d.p.PageSize
	pg.next.Page++
	if len(items) < d.p.PageSize || read >= total {
		pg.next.Done = true
	}
	return pg, nil
}

func (d pageDialect) plan(st pageState) []pageState {
	if st.Total == nil || st.Done || d.p.Concurrency <= 1 {
		return nil
	}
	var out []pageState
	for n := st.Page; (n-*d.p.FirstPage)*d.p.PageSize < *st.Total; n++ {
		s := st
		s.Page = n
		out = append(out, s)
	}
	return out
}

type continueDialect struct{ p PaginationConfig }

func (d continueDialect) query(q url.Values, st pageState) *url.URL {
	q.Set(d.p.PageSizeParam, strconv.Itoa(d.p.PageSize))
	if st.Cursor != "" {
		q.Set(d.p.ContinueParam, st.Cursor)
	}
	return nil
}

func (d continueDialect) parse(_ *Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	pg.next.Started = true
	rv, _ := getPath(doc, d.p.ResourceVersion)
	if s, ok := rv.(string); ok {
		pg.snapshot = s
		if pg.next.Snapshot == "" {
			pg.next.Snapshot = s
		}
	}
	if n, ok := intAt(doc, "metadata.remainingItemCount"); ok {
		pg.estimate = &n
	}
	c, _ := getPath(doc, d.p.ContinuePath)
	s, _ := c.(string)
	pg.next.Cursor = s
	if s == "" {
		pg.next.Done = true
	}
	return pg, nil
}

func (continueDialect) plan(pageState) []pageState { return nil }

// getPath walks a dotted path through decoded JSON objects. The empty path
// is the document itself.
func getPath(doc any, path string) (any, bool) {
	if path == "" {
		return doc, true
	}
	cur := doc
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[part]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

func intAt(doc any, path string) (int, bool) {
	v, ok := getPath(doc, path)
	if !ok {
		return 0, false
	}
	return toInt(v)
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		if n == float64(int(n)) {
			return int(n), true
		}
	case int:
		return n, true
	case interface{ Int64() (int64, error) }:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// itemID reads an item's id as a string (numbers are formatted).
func itemID(item any, path string) (string, bool) {
	v, ok := getPath(item, path)
	if !ok || v == nil {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, x != ""
	case fmt.Stringer:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}
