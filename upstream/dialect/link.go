package dialect

import (
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// linkDialect follows an RFC 8288 Link header's rel="next" target.
type linkDialect struct{ p config.PaginationConfig }

// newLinkDialect builds the link dialect.
func newLinkDialect(p config.PaginationConfig, _ string) Dialect { return linkDialect{p} }

func (d linkDialect) Query(p *Params, st State) *url.URL {
	if st.NextURL != nil {
		return st.NextURL
	}
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	return nil
}

func (d linkDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg, full := newPage(d.p, st, items)
	total, known := pg.totalOf(d.p, resp, doc)
	reached := totalVerdict(&pg, total, known, full)
	next, lst := readNextLink(resp.Header)
	last, _ := readLink(resp.Header, "last")
	lastSelf := last != "" && isPageURL(resp.URL, last)
	if next != "" {
		u, err := url.Parse(next)
		if err != nil {
			return pg, transport.BadResponse("the Link header's next URL does not parse")
		}
		if lastSelf {
			// The last link names this page, and a next link says how to
			// go on: neither is believed.
			pg.Unknown(SignalFlagVsContinuation, false)
			return pg, nil
		}
		pg.Next.NextURL, pg.Next.SignalSeen = u, true
		return pg, nil
	}
	pg.Next.NextURL = nil
	switch {
	case lst == Unreadable:
		// A Link header that cannot be read says nothing of the end.
		pg.Doubt("Link")
		pg.Unknown(SignalUnreadable, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case reached:
		pg.proven(SignalTotalReached)
	case known && !pg.Next.TotalUntrusted && pg.Next.Seen < total:
		// Fewer items than the upstream's own total, and no way on: the
		// upstream stopped short (Scan.finishSource reports the cap).
		pg.proven(SignalNoNextLink)
	case lst == Read && lastSelf && !shortPage(d.p, st, len(items)):
		// A whole page whose rel="last" link names the page itself
		// (json-server's last page): the upstream says it is the last.
		pg.proven(SignalLastLink)
	case lst == Read && !shortPage(d.p, st, len(items)) && followingByNumber(resp) != nil:
		// A whole page whose links name the page before it by number, and
		// none next (GitHub's last page names first and prev): asked for
		// again one item smaller, it would start at another item. The
		// page after it by number settles it (Scan.recheck): empty, the
		// list ended here.
		pg.Unknown(SignalNoNextLink, true)
		rc := st
		rc.Recheck, rc.NextURL = nil, followingByNumber(resp)
		pg.Next.Recheck, pg.Next.RecheckItems, pg.Next.RecheckFollowing = &rc, len(items), true
	case lst == Read:
		// Links, and none of them next (json-server's last page names
		// first, prev and last): the upstream says so.
		pg.none(d.p, st, SignalNoNextLink, len(items))
	default:
		pg.absent(d.p, st, SignalNoNextLink, len(items))
	}
	return pg, nil
}

func (linkDialect) More(resp *transport.Response, _ any) bool {
	next, st := readNextLink(resp.Header)
	return st == Read && next != ""
}

func (linkDialect) Plan(State) []State { return nil }

// nextLink returns the rel="next" target of an RFC 8288 Link header, ""
// when there is none or it cannot be read (see readNextLink).
func nextLink(h http.Header) string {
	next, _ := readNextLink(h)
	return next
}

// readNextLink reads the rel="next" target of an RFC 8288 Link header, in
// the three states of any signal: absent (no Link header), read (links,
// with one next target or none: a last page's first, prev and last), or
// unreadable (a value that holds no link, or two next targets that differ).
func readNextLink(h http.Header) (string, Reading) { return readLink(h, "next") }

// isPageURL reports whether the link target ref, resolved against the
// page's own URL, is that URL: the same scheme, host and path, and the
// same query parameters with the same values.
func isPageURL(page *url.URL, ref string) bool {
	if page == nil {
		return false
	}
	u, err := page.Parse(ref)
	if err != nil {
		return false
	}
	if !strings.EqualFold(u.Scheme, page.Scheme) || !strings.EqualFold(u.Host, page.Host) || u.Path != page.Path {
		return false
	}
	a, errA := url.ParseQuery(u.RawQuery)
	b, errB := url.ParseQuery(page.RawQuery)
	return errA == nil && errB == nil && reflect.DeepEqual(a, b)
}

// followingByNumber is the URL of the page after the one resp answers,
// where its Link header's rel="prev" names the page before it by number:
// the page's own URL with one query parameter one less (page=N-1 beside
// page=N), every other part the same. It is that URL with the parameter
// one more; nil where no such parameter is seen.
func followingByNumber(resp *transport.Response) *url.URL {
	if resp == nil || resp.URL == nil {
		return nil
	}
	prevRef, st := readLink(resp.Header, "prev")
	if st != Read || prevRef == "" {
		return nil
	}
	prev, err := resp.URL.Parse(prevRef)
	if err != nil || !strings.EqualFold(prev.Scheme, resp.URL.Scheme) || !strings.EqualFold(prev.Host, resp.URL.Host) || prev.Path != resp.URL.Path {
		return nil
	}
	own, errA := url.ParseQuery(resp.URL.RawQuery)
	before, errB := url.ParseQuery(prev.RawQuery)
	if errA != nil || errB != nil || len(own) != len(before) {
		return nil
	}
	number := ""
	for k, vs := range own {
		bs, ok := before[k]
		if !ok || len(vs) != 1 || len(bs) != 1 {
			return nil
		}
		if vs[0] == bs[0] {
			continue
		}
		n, errN := strconv.Atoi(vs[0])
		b, errP := strconv.Atoi(bs[0])
		if number != "" || errN != nil || errP != nil || b != n-1 || b < 0 || strconv.Itoa(n) != vs[0] {
			return nil
		}
		number = k
	}
	if number == "" {
		return nil
	}
	n, _ := strconv.Atoi(own.Get(number))
	own.Set(number, strconv.Itoa(n+1))
	u := *resp.URL
	u.RawQuery = own.Encode()
	return &u
}

// readLink reads the target of the Link header's rel relation as
// readNextLink reads next's.
func readLink(h http.Header, relation string) (string, Reading) {
	var next string
	st := Absent
	for _, v := range h.Values("Link") {
		if strings.TrimSpace(v) == "" {
			continue
		}
		links := 0
		for _, part := range splitOutside(v, ',') {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			end := strings.IndexByte(part, '>')
			if !strings.HasPrefix(part, "<") || end < 0 {
				return "", Unreadable
			}
			links++
			target := part[1:end]
			for _, p := range splitOutside(part[end+1:], ';') {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(val), `"`)) {
					if !strings.EqualFold(rel, relation) {
						continue
					}
					if next != "" && next != target {
						// Two targets of one relation: neither is read.
						return "", Unreadable
					}
					next = target
				}
			}
		}
		if links == 0 {
			return "", Unreadable
		}
		st = Read
	}
	return next, st
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
