package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
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
func (p *prober) smallerPage(ctx context.Context, refused error) (resp *transport.Response, ok bool) {
	var he *transport.HTTPError
	if !errors.As(refused, &he) || he.Kind != transport.FailStatus || (he.Status != http.StatusBadRequest && he.Status != http.StatusUnprocessableEntity) {
		return nil, false
	}
	pg := p.r.Pagination
	if pg.PageSizeParam == "" || pg.PageSize <= 1 {
		return nil, false
	}
	said := transport.UpstreamMessage(he.Header, he.Body)
	// The limit may sit in a nested field beside the message
	// ({"message": "invalid params", "data": {"params": {"limit": "must be
	// <= 50"}}}): every string and number the body holds is read.
	var tries []int
	for _, m := range number.FindAllString(said+" "+bodyWords(he.Body, pg.PageSizeParam), -1) {
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
		if nested := bodyWords(he.Body, pg.PageSizeParam); nested != "" && !strings.Contains(said, nested) {
			ev += fmt.Sprintf(" (%s)", envelope.QuoteUpstream(nested))
		}
		ev += fmt.Sprintf("; with %s=%d it answered %d", pg.PageSizeParam, n, resp.Status)
		hint := fmt.Sprintf("set pagination.page_size: %d", n)
		if !strings.Contains(said+" "+bodyWords(he.Body, pg.PageSizeParam), strconv.Itoa(n)) {
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

// maxBodyWords bounds what bodyWords reads of an error body.
const maxBodyWords = 2048

// bodyWords is what a JSON error body says about a parameter, wherever
// it says it: each string or number under a key naming the parameter or
// a limit (max, maximum, limit, params), as "path: value". "" when the
// body is not JSON or says nothing of the kind.
func bodyWords(body []byte, param string) string {
	doc, err := jsonvalue.Decode(body)
	if err != nil {
		return ""
	}
	var parts []string
	size := 0
	var walk func(v any, path string, relevant bool)
	walk = func(v any, path string, relevant bool) {
		if size > maxBodyWords {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				lk := strings.ToLower(k)
				rel := relevant || strings.EqualFold(k, param) || strings.Contains(lk, "max") || strings.Contains(lk, "limit") || lk == "params" || lk == "errors"
				walk(x[k], strings.TrimPrefix(path+"."+k, "."), rel)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s.%d", path, i), relevant)
			}
		case string, json.Number:
			if !relevant {
				return
			}
			s := fmt.Sprint(x)
			parts = append(parts, path+": "+s)
			size += len(path) + len(s)
		}
	}
	walk(doc, "", false)
	return strings.Join(parts, "; ")
}
