package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/upstream"
)

// maxPageSizeTries bounds the smaller page sizes probe tries after the
// first page is refused.
const maxPageSizeTries = 3

var number = regexp.MustCompile(`\d+`)

// smallerPage is tried when the first page is refused with 400 or 422:
// APIs refuse a page size over their maximum that way ("_size must be <=
// 1000"). It asks for the size the API's own message suggests (the
// largest number in it below the configured size), else for half as many,
// a few times. When one is answered, it reports pagination.page_size
// wrong with the API's words and the size that works, and the probe goes
// on at that size; ok is false when none was.
func (p *prober) smallerPage(ctx context.Context, refused error) (resp *upstream.Response, ok bool) {
	var he *upstream.HTTPError
	if !errors.As(refused, &he) || he.Kind != upstream.FailStatus || (he.Status != http.StatusBadRequest && he.Status != http.StatusUnprocessableEntity) {
		return nil, false
	}
	pg := p.r.Pagination
	if pg.PageSizeParam == "" || pg.PageSize <= 1 {
		return nil, false
	}
	said := upstream.UpstreamMessage(he.Header, he.Body)
	var tries []int
	for _, m := range number.FindAllString(said, -1) {
		if n, err := strconv.Atoi(m); err == nil && n >= 1 && n < pg.PageSize && (len(tries) == 0 || n > tries[0]) {
			tries = []int{n}
		}
	}
	for n := pg.PageSize / 2; n >= 1 && len(tries) < maxPageSizeTries; n /= 2 {
		if len(tries) == 0 || n < tries[len(tries)-1] {
			tries = append(tries, n)
		}
	}
	original := p.r
	for _, n := range tries {
		if p.left() <= 1 {
			break
		}
		candidate := original.WithPageSize(n)
		p.r = candidate
		req, err := candidate.FirstPageRequest(p.opts.RequestID)
		if err != nil {
			break
		}
		resp, err := p.do(ctx, req)
		if err != nil {
			continue
		}
		ev := fmt.Sprintf("%s %s with %s=%d answered %d", req.Method, original.Config.List.Path, pg.PageSizeParam, pg.PageSize, he.Status)
		if said != "" {
			ev += fmt.Sprintf("; the API said: %q", said)
		}
		ev += fmt.Sprintf("; with %s=%d it answered %d", pg.PageSizeParam, n, resp.Status)
		hint := fmt.Sprintf("set pagination.page_size: %d", n)
		if !strings.Contains(said, strconv.Itoa(n)) {
			hint += " (or the largest size the API accepts)"
		} else {
			hint += " (the API's maximum)"
		}
		p.add("pagination.page_size", Wrong, ev, hint)
		return resp, true
	}
	p.r = original
	return nil, false
}
