package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
)

// Every signal of every dialect, read in every form it can take: each
// dialect in config's table has a minimal honest list here (five records
// over a few pages, the last one its proven end), and each signal it reads
// is then sent wrong on one page at a time (removed, null, of another
// type, an object, an array, an empty or blank string, named twice, a
// number as a string, negative, a fraction, past 2^63). Whatever the form,
// the answer is never complete with other records than the list's; when
// it is not complete it says why in a stable code; and a signal sent in a
// form that cannot be read is doubt naming its member.

// sigKind is how a signal is read, by the rules of evidence: the forms
// that are read, and every other form unreadable.
type sigKind int

const (
	kItems       sigKind = iota // an array
	kFlag                       // true or false
	kToken                      // a string or a number as written; null for none
	kURL                        // a string; null for none
	kCount                      // an integer; null or negative for "not counted"
	kObject                     // an object; null for none
	kKey                        // an object sent back whole: no other form, null included
	kEvaluated                  // a count of items the upstream read: an integer, not negative
	kMarker                     // any value but null: its presence is the signal
	kSortVals                   // an item's sort values: an array
	kHeaderCount                // a header holding a decimal integer
	kLink                       // an RFC 8288 Link header
)

// signal is one member a dialect reads from its pages.
type signal struct {
	member string // dotted path in the body ("." the body itself), or a header's name
	kind   sigKind
	// key is the pagination key that declares the signal ("" for the
	// items, or a signal no key names: the Link header).
	key string
}

// name is the member as airlock names it: an item's member by its path
// in the item.
func (s signal) name() string {
	if s.member == "." {
		return ""
	}
	if _, in, ok := strings.Cut(s.member, ".-1."); ok {
		return in
	}
	return s.member
}

func (s signal) header() bool { return s.kind == kHeaderCount || s.kind == kLink }

// obj is a JSON object that keeps its members' order and may name one
// twice.
type obj []member

type member struct {
	k string
	v any
}

// raw is JSON text written as it is (a number no Go value holds).
type raw string

func writeJSON(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case obj:
		b.WriteByte('{')
		for i, m := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(m.k)
			b.Write(k)
			b.WriteByte(':')
			writeJSON(b, m.v)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case raw:
		b.WriteString(string(x))
	default:
		enc, err := json.Marshal(x)
		if err != nil {
			panic(err)
		}
		b.Write(enc)
	}
}

// mutation is one wrong form of a signal.
type mutation struct {
	name   string
	value  any
	remove bool
	// twice names the member twice, with the honest value first (1) or
	// last (2) and another value beside it.
	twice int
	// asString writes the honest value as a JSON string.
	asString bool
}

var mutations = []mutation{
	{name: "removed", remove: true},
	{name: "null", value: nil},
	{name: "string", value: "x9"},
	{name: "number", value: 7},
	{name: "bool", value: true},
	{name: "object", value: obj{{"k", "v"}}},
	{name: "array", value: []any{"x"}},
	{name: "empty_string", value: ""},
	{name: "blank_string", value: "  "},
	{name: "twice_honest_first", twice: 1},
	{name: "twice_honest_last", twice: 2},
	{name: "number_as_string", asString: true},
	{name: "negative", value: -1},
	{name: "fraction", value: raw("2.5")},
	{name: "past_2^63", value: raw("9223372036854775808")},
}

// other is the value beside the honest one in a member named twice: one
// that says something else.
func other(honest any) any {
	switch x := honest.(type) {
	case bool:
		return !x
	case int:
		return x + 7
	case string:
		if x == "" {
			return "zz9"
		}
		return ""
	case nil:
		return "zz9"
	}
	return nil
}

// mutate returns doc with the member at path changed by m; ok is false
// when the mutation does not apply (named twice, or written as a string,
// where the page does not hold the member, or holds a string).
func mutate(doc any, path []string, m mutation) (any, bool) {
	switch x := doc.(type) {
	case obj:
		out := make(obj, 0, len(x)+1)
		found, ok := false, true
		for _, mb := range x {
			if mb.k != path[0] {
				out = append(out, mb)
				continue
			}
			found = true
			if len(path) > 1 {
				v, applied := mutate(mb.v, path[1:], m)
				out, ok = append(out, member{mb.k, v}), applied
				continue
			}
			switch {
			case m.remove:
			case m.twice == 1:
				out = append(out, mb, member{mb.k, other(mb.v)})
			case m.twice == 2:
				out = append(out, member{mb.k, other(mb.v)}, mb)
			case m.asString:
				switch v := mb.v.(type) {
				case int:
					out = append(out, member{mb.k, strconv.Itoa(v)})
				case bool:
					out = append(out, member{mb.k, strconv.FormatBool(v)})
				default:
					ok = false
				}
			default:
				out = append(out, member{mb.k, m.value})
			}
		}
		if !found {
			if m.remove || m.twice > 0 || m.asString || len(path) > 1 {
				return doc, false
			}
			out = append(out, member{path[0], m.value})
		}
		return out, ok
	case []any:
		if path[0] != "-1" || len(x) == 0 {
			return doc, false
		}
		out := slices.Clone(x)
		v, ok := mutate(x[len(x)-1], path[1:], m)
		out[len(out)-1] = v
		return out, ok
	}
	return doc, false
}

// mutateHeader is m on a header: its values as the header carries them.
func mutateHeader(h http.Header, name string, m mutation) bool {
	honest := h.Get(name)
	switch {
	case m.remove:
		if honest == "" {
			return false
		}
		h.Del(name)
	case m.twice > 0:
		if honest == "" {
			return false
		}
		alt := "12"
		if strings.HasPrefix(honest, "<") {
			alt = `</elsewhere?page=9>; rel="next"`
		}
		h.Del(name)
		if m.twice == 1 {
			h.Add(name, honest)
			h.Add(name, alt)
		} else {
			h.Add(name, alt)
			h.Add(name, honest)
		}
	case m.asString:
		if _, err := strconv.Atoi(honest); err != nil {
			return false
		}
		h.Set(name, strconv.Quote(honest))
	default:
		var b bytes.Buffer
		writeJSON(&b, m.value)
		v := b.String()
		if s, ok := m.value.(string); ok {
			v = s
		}
		h.Set(name, v)
	}
	return true
}

// unreadable reports whether a signal read as k, sent as m, cannot be
// read (doubt), rather than read or absent.
func unreadable(k sigKind, m mutation) bool {
	if m.twice > 0 {
		return true
	}
	if m.remove {
		return k == kItems
	}
	if m.asString {
		return k != kToken && k != kURL && k != kMarker && k != kLink
	}
	v := m.value
	switch k {
	case kItems, kSortVals:
		_, isArr := v.([]any)
		return !isArr
	case kFlag:
		_, isBool := v.(bool)
		return !isBool
	case kToken:
		switch v.(type) {
		case string, int, nil:
			return false
		case raw:
			return false // a number as written
		}
		return true
	case kURL:
		switch v.(type) {
		case string, nil:
			return false
		}
		return true
	case kCount:
		switch x := v.(type) {
		case int, nil:
			return false
		case raw:
			_, err := strconv.ParseInt(string(x), 10, 64)
			return err != nil
		}
		return true
	case kObject:
		switch v.(type) {
		case obj, nil:
			return false
		}
		return true
	case kKey:
		_, isObj := v.(obj)
		return !isObj
	case kEvaluated:
		n, isInt := v.(int)
		return !isInt || n < 0
	case kMarker:
		return v == nil
	case kHeaderCount:
		var b bytes.Buffer
		writeJSON(&b, v)
		s := b.String()
		if str, ok := v.(string); ok {
			s = str
		}
		_, err := strconv.Atoi(strings.TrimSpace(s))
		return err != nil
	case kLink:
		s, isStr := v.(string)
		return !isStr || strings.TrimSpace(s) != ""
	}
	return false
}

// dialectList is one dialect's honest list: its configuration, and the
// page at a position of the five records, found from a request.
type dialectList struct {
	name       string
	list       string // the list's YAML flow mapping, without the path
	pagination string // pagination's YAML flow mapping
	// ask reads a request's position and page size; ok is false for one
	// the list does not serve.
	ask func(r *http.Request, body map[string]any) (start, size int, ok bool)
	// page is the page of records from start, size of them at most.
	page func(start, size int, recs []any) (doc any, h http.Header)
	// starts are the positions the honest scan reads its pages from.
	starts  []int
	signals []signal
	// bare: the body is the items array itself, and holds no other
	// member (the shared signals are not added to it).
	bare bool
	// added, in a list derived from another, are the signals added to
	// it: only they are mutated, the others were in the list it came
	// from.
	added []string
}

const listSize = 5

func record(i int) obj { return obj{{"id", fmt.Sprintf("r%d", i+1)}, {"status", "active"}} }

func recordsFrom(start, size int) []any {
	out := []any{}
	for i := start; i < min(start+size, listSize); i++ {
		out = append(out, record(i))
	}
	return out
}

func qint(r *http.Request, name string) int {
	n, err := strconv.Atoi(r.URL.Query().Get(name))
	if err != nil {
		return -1
	}
	return n
}

// afterID is the position after the record whose id is id ("" the start).
func afterID(id string) (int, bool) {
	if id == "" {
		return 0, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(id, "r"))
	if err != nil || !strings.HasPrefix(id, "r") || n < 1 || n > listSize {
		return 0, false
	}
	return n, true
}

// fromToken is the position a token of the form prefix+N names.
func fromToken(tok, prefix string) (int, bool) {
	if tok == "" {
		return 0, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(tok, prefix))
	if err != nil || !strings.HasPrefix(tok, prefix) || n < 0 || n > listSize {
		return 0, false
	}
	return n, true
}

func bodyInt(v any) int {
	n, err := strconv.Atoi(fmt.Sprint(v))
	if err != nil {
		return -1
	}
	return n
}

// dialectLists are the honest lists, by dialect: every dialect in
// config's table must have at least one (TestEverySignalOfEveryDialect).
var dialectLists = map[string][]dialectList{
	config.DialectCursor: {{
		name: "has_more", list: `items: data`,
		pagination: `dialect: cursor, has_more: has_more, total: total_count, page_size: 2`,
		ask: func(r *http.Request, _ map[string]any) (int, int, bool) {
			start, ok := afterID(r.URL.Query().Get("starting_after"))
			return start, qint(r, "limit"), ok
		},
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"data", recs}, {"has_more", start+len(recs) < listSize}, {"total_count", listSize}}, nil
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"data", kItems, ""}, {"has_more", kFlag, "has_more"}, {"total_count", kCount, "total"}},
	}, {
		name: "next_cursor", list: `items: data`,
		pagination: `dialect: cursor, next_cursor: next_cursor, is_last: is_last, page_size: 2`,
		ask: func(r *http.Request, _ map[string]any) (int, int, bool) {
			start, ok := fromToken(r.URL.Query().Get("cursor"), "c")
			return start, qint(r, "limit"), ok
		},
		page: func(start, size int, recs []any) (any, http.Header) {
			end := start + len(recs)
			next := ""
			if end < listSize {
				next = fmt.Sprintf("c%d", end)
			}
			return obj{{"data", recs}, {"next_cursor", next}, {"is_last", end >= listSize}}, nil
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"data", kItems, ""}, {"next_cursor", kToken, "next_cursor"}, {"is_last", kFlag, "is_last"}},
	}},
	config.DialectLink: {{
		name: "root_array", list: `items: .`, bare: true,
		pagination: `dialect: link, total_header: X-Total-Count, page_size: 2`,
		ask:        pageAsk("page", "per_page"),
		page: func(start, size int, recs []any) (any, http.Header) {
			return recs, linkHeaders(start, size, len(recs), "X-Total-Count")
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{".", kItems, ""}, {"Link", kLink, ""}, {"X-Total-Count", kHeaderCount, "total_header"}},
	}, {
		name: "wrapped", list: `items: items`,
		pagination: `dialect: link, page_size: 2`,
		ask:        pageAsk("page", "per_page"),
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"items", recs}}, linkHeaders(start, size, len(recs), "")
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"items", kItems, ""}, {"Link", kLink, ""}},
	}},
	config.DialectOffset: {{
		name: "total", list: `items: items`,
		pagination: `dialect: offset, total: total, page_size: 3`,
		ask: func(r *http.Request, _ map[string]any) (int, int, bool) {
			return qint(r, "offset"), qint(r, "limit"), qint(r, "offset") >= 0
		},
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"items", recs}, {"total", listSize}}, nil
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"items", kItems, ""}, {"total", kCount, "total"}},
	}, {
		name: "total_header", list: `items: items`,
		pagination: `dialect: offset, total_header: X-Total-Count, page_size: 3`,
		ask: func(r *http.Request, _ map[string]any) (int, int, bool) {
			return qint(r, "offset"), qint(r, "limit"), qint(r, "offset") >= 0
		},
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"items", recs}}, http.Header{"X-Total-Count": {strconv.Itoa(listSize)}}
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"items", kItems, ""}, {"X-Total-Count", kHeaderCount, "total_header"}},
	}},
	config.DialectPage: {{
		name: "body", list: `items: items`,
		pagination: `dialect: page, total: total, total_pages: total_pages, page_size: 2`,
		ask:        pageAsk("page", "per_page"),
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"items", recs}, {"total", listSize}, {"total_pages", (listSize + size - 1) / size}}, nil
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"items", kItems, ""}, {"total", kCount, "total"}, {"total_pages", kCount, "total_pages"}},
	}, {
		name: "headers", list: `items: items`,
		pagination: `dialect: page, total_header: X-Total, total_pages_header: X-Total-Pages, page_size: 2`,
		ask:        pageAsk("page", "per_page"),
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"items", recs}}, http.Header{"X-Total": {strconv.Itoa(listSize)}, "X-Total-Pages": {strconv.Itoa((listSize + size - 1) / size)}}
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"items", kItems, ""}, {"X-Total", kHeaderCount, "total_header"}, {"X-Total-Pages", kHeaderCount, "total_pages_header"}},
	}},
	config.DialectContinue: {{
		name: "kubernetes", list: `items: items`,
		pagination: `dialect: continue, page_size: 2`,
		ask: func(r *http.Request, _ map[string]any) (int, int, bool) {
			start, ok := fromToken(r.URL.Query().Get("continue"), "k")
			return start, qint(r, "limit"), ok
		},
		page: func(start, size int, recs []any) (any, http.Header) {
			end := start + len(recs)
			next := ""
			if end < listSize {
				next = fmt.Sprintf("k%d", end)
			}
			return obj{{"metadata", obj{{"resourceVersion", "77"}, {"continue", next}, {"remainingItemCount", listSize - end}}}, {"items", recs}}, nil
		},
		starts: []int{0, 2, 4},
		signals: []signal{{"items", kItems, ""}, {"metadata.continue", kToken, "continue_path"},
			{"metadata.resourceVersion", kToken, "resource_version"}, {"metadata.remainingItemCount", kCount, "remaining"}},
	}},
	config.DialectNextURL: {{
		name: "done", list: `items: results`,
		pagination: `dialect: next_url, total: count, is_last: done, page_size: 2`,
		ask:        pageAsk("page", "page_size"),
		page: func(start, size int, recs []any) (any, http.Header) {
			end := start + len(recs)
			var next any
			if end < listSize {
				next = fmt.Sprintf("/items?page=%d&page_size=%d", end/size+1, size)
			}
			return obj{{"count", listSize}, {"next", next}, {"done", end >= listSize}, {"results", recs}}, nil
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"results", kItems, ""}, {"next", kURL, "next"}, {"count", kCount, "total"}, {"done", kFlag, "is_last"}},
	}, {
		name: "has_more", list: `items: results`,
		pagination: `dialect: next_url, has_more: more, page_size: 2`,
		ask:        pageAsk("page", "page_size"),
		page: func(start, size int, recs []any) (any, http.Header) {
			end := start + len(recs)
			var next any
			if end < listSize {
				next = fmt.Sprintf("/items?page=%d&page_size=%d", end/size+1, size)
			}
			return obj{{"next", next}, {"more", end < listSize}, {"results", recs}}, nil
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"results", kItems, ""}, {"next", kURL, "next"}, {"more", kFlag, "has_more"}},
	}},
	config.DialectGraphQL: {{
		name:       "relay",
		list:       `graphql: "query($first: Int!, $after: String) { items(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id status } } }"`,
		pagination: `dialect: graphql, connection: items, total: totalCount, total_relation: totalRelation, page_size: 2`,
		ask:        graphqlAsk,
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"data", obj{{"items", connection(start, recs, obj{{"totalCount", listSize}, {"totalRelation", "eq"}})}}}}, nil
		},
		starts: []int{0, 2, 4},
		signals: []signal{{"data.items.nodes", kItems, ""}, {"data.items.pageInfo.hasNextPage", kFlag, "has_more"},
			{"data.items.pageInfo.endCursor", kToken, "next_cursor"}, {"data.items.totalCount", kCount, "total"},
			{"data.items.totalRelation", kToken, "total_relation"}},
	}, {
		name:       "total_header",
		list:       `graphql: "query($first: Int!, $after: String) { items(first: $first, after: $after) { pageInfo { hasNextPage endCursor } nodes { id status } } }"`,
		pagination: `dialect: graphql, connection: items, total_header: X-Total-Count, page_size: 2`,
		ask:        graphqlAsk,
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"data", obj{{"items", connection(start, recs, nil)}}}}, http.Header{"X-Total-Count": {strconv.Itoa(listSize)}}
		},
		starts: []int{0, 2, 4},
		signals: []signal{{"data.items.nodes", kItems, ""}, {"data.items.pageInfo.hasNextPage", kFlag, "has_more"},
			{"data.items.pageInfo.endCursor", kToken, "next_cursor"}, {"X-Total-Count", kHeaderCount, "total_header"}},
	}},
	config.DialectSearchAfter: {{
		name: "point_in_time", list: `method: POST, items: hits.hits, body: {sort: [{id: asc}]}`,
		pagination: `dialect: search_after, page_size: 2, pit: {open: /_pit, id: id, param: pit.id, response: pit_id}`,
		ask:        searchAfterAsk,
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"pit_id", "pit-1"}, {"hits", obj{{"total", obj{{"value", listSize}, {"relation", "eq"}}}, {"hits", hits(start, recs)}}}}, nil
		},
		starts: []int{0, 2, 4},
		signals: []signal{{"hits.hits", kItems, ""}, {"hits.total.value", kCount, "total"}, {"hits.total.relation", kToken, "total_relation"},
			{"pit_id", kToken, "pit"}, {"hits.hits.-1.sort", kSortVals, "sort_values"}},
	}, {
		name: "total_header", list: `method: POST, items: hits.hits, body: {sort: [{id: asc}]}`,
		pagination: `dialect: search_after, total_header: X-Total-Count, page_size: 2`,
		ask: func(r *http.Request, body map[string]any) (int, int, bool) {
			body["pit"] = map[string]any{"id": "pit-1"}
			return searchAfterAsk(r, body)
		},
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"hits", obj{{"hits", hits(start, recs)}}}}, http.Header{"X-Total-Count": {strconv.Itoa(listSize)}}
		},
		starts: []int{0, 2, 4},
		signals: []signal{{"hits.hits", kItems, ""}, {"X-Total-Count", kHeaderCount, "total_header"},
			{"hits.hits.-1.sort", kSortVals, "sort_values"}},
	}},
	config.DialectContinueObject: {{
		name: "mediawiki", list: `items: items`,
		pagination: `dialect: continue_object, batch_complete: batchcomplete, page_size: 2`,
		ask: func(r *http.Request, _ map[string]any) (int, int, bool) {
			q := r.URL.Query()
			if !q.Has("gcontinue") {
				return 0, qint(r, "limit"), !q.Has("continue")
			}
			start, ok := afterID(q.Get("gcontinue"))
			return start, qint(r, "limit"), ok && q.Get("continue") == "gcontinue||"
		},
		page: func(start, size int, recs []any) (any, http.Header) {
			end := start + len(recs)
			doc := obj{{"batchcomplete", true}}
			if end < listSize {
				doc = append(doc, member{"continue", obj{{"gcontinue", fmt.Sprintf("r%d", end)}, {"continue", "gcontinue||"}}})
			}
			return append(doc, member{"items", recs}), nil
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"items", kItems, ""}, {"continue", kObject, "continue_path"}, {"batchcomplete", kMarker, "batch_complete"}},
	}, {
		name: "dynamodb", list: `method: POST, items: Items`,
		pagination: `dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: 2`,
		ask:        dynamoAsk,
		page: func(start, size int, recs []any) (any, http.Header) {
			return dynamoPage(start, obj{{"Items", recs}}, len(recs)), nil
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"Items", kItems, ""}, {"LastEvaluatedKey", kKey, "continue_path"}},
	}, {
		name: "dynamodb_scan", list: `method: POST, items: Items`,
		pagination: `dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, evaluated: ScannedCount, page_size: 2`,
		ask:        dynamoAsk,
		page: func(start, size int, recs []any) (any, http.Header) {
			return dynamoPage(start, obj{{"Items", recs}, {"Count", len(recs)}, {"ScannedCount", len(recs)}}, len(recs)), nil
		},
		starts:  []int{0, 2, 4},
		signals: []signal{{"Items", kItems, ""}, {"LastEvaluatedKey", kKey, "continue_path"}, {"ScannedCount", kEvaluated, "evaluated"}},
	}},
	config.DialectBookmark: {{
		name: "couchdb", list: `method: POST, items: docs`,
		pagination: `dialect: bookmark, page_size: 2`,
		ask: func(_ *http.Request, body map[string]any) (int, int, bool) {
			bm, _ := body["bookmark"].(string)
			start, ok := fromToken(bm, "b")
			return start, bodyInt(body["limit"]), ok
		},
		page: func(start, size int, recs []any) (any, http.Header) {
			return obj{{"docs", recs}, {"bookmark", fmt.Sprintf("b%d", start+len(recs))}}, nil
		},
		starts:  []int{0, 2, 4, 5},
		signals: []signal{{"docs", kItems, ""}, {"bookmark", kToken, "next_cursor"}},
	}},
}

func graphqlAsk(_ *http.Request, body map[string]any) (int, int, bool) {
	vars, _ := body["variables"].(map[string]any)
	after, _ := vars["after"].(string)
	start, ok := fromToken(after, "c")
	return start, bodyInt(vars["first"]), ok
}

// connection is a Relay connection's page from start, with more members.
func connection(start int, recs []any, more obj) obj {
	end := start + len(recs)
	return append(more, member{"pageInfo", obj{{"hasNextPage", end < listSize}, {"endCursor", fmt.Sprintf("c%d", end)}}}, member{"nodes", recs})
}

func searchAfterAsk(_ *http.Request, body map[string]any) (int, int, bool) {
	start := 0
	if sa, ok := body["search_after"]; ok {
		arr, isArr := sa.([]any)
		if !isArr || len(arr) != 1 {
			return 0, 0, false
		}
		start = bodyInt(arr[0])
	}
	pit, _ := body["pit"].(map[string]any)
	return start, bodyInt(body["size"]), start >= 0 && start <= listSize && pit["id"] == "pit-1"
}

// hits are Elasticsearch's hits of the records from start, each with its
// sort values.
func hits(start int, recs []any) []any {
	out := make([]any, len(recs))
	for i, r := range recs {
		out[i] = append(slices.Clone(r.(obj)), member{"sort", []any{start + i + 1}})
	}
	return out
}

// dynamoAsk reads a DynamoDB Query's or Scan's position: after the key
// it is sent back.
func dynamoAsk(_ *http.Request, body map[string]any) (int, int, bool) {
	start := 0
	if k, ok := body["ExclusiveStartKey"]; ok {
		m, _ := k.(map[string]any)
		id, _ := m["id"].(string)
		var found bool
		if start, found = afterID(id); !found || id == "" {
			return 0, 0, false
		}
	}
	return start, bodyInt(body["Limit"]), true
}

// dynamoPage is doc with the LastEvaluatedKey of the page from start of n
// items, while more follow.
func dynamoPage(start int, doc obj, n int) obj {
	if end := start + n; end < listSize {
		doc = append(doc, member{"LastEvaluatedKey", obj{{"id", fmt.Sprintf("r%d", end)}}})
	}
	return doc
}

// pageAsk reads a numbered page's position.
func pageAsk(pageParam, sizeParam string) func(*http.Request, map[string]any) (int, int, bool) {
	return func(r *http.Request, _ map[string]any) (int, int, bool) {
		n, size := qint(r, pageParam), qint(r, sizeParam)
		if !r.URL.Query().Has(pageParam) {
			n = 1
		}
		return (n - 1) * size, size, n >= 1 && size >= 1
	}
}

// linkHeaders are GitHub's: a next link while more follow, first and
// prev links on the last page, and the total when total is set.
func linkHeaders(start, size, n int, total string) http.Header {
	h := http.Header{}
	page := start/size + 1
	if start+n < listSize {
		h.Set("Link", fmt.Sprintf(`</items?page=%d&per_page=%d>; rel="next", </items?page=1&per_page=%d>; rel="first"`, page+1, size, size))
	} else {
		h.Set("Link", fmt.Sprintf(`</items?page=1&per_page=%d>; rel="first"`, size))
	}
	if total != "" {
		h.Set(total, strconv.Itoa(listSize))
	}
	return h
}

// extra is a signal every dialect reads (config's sharedKeys: a total,
// its relation, a remaining count, a snapshot), added to a list that
// does not send it already: its pagination key, and its value on the
// page from start that holds n records.
type extra struct {
	pagination string
	sig        signal
	value      func(start, n int) any
}

var (
	extraTotal       = extra{"total: x_total", signal{"x_total", kCount, "total"}, func(int, int) any { return listSize }}
	extraRelation    = extra{"total_relation: x_relation", signal{"x_relation", kToken, "total_relation"}, func(int, int) any { return "eq" }}
	extraTotalHeader = extra{"total_header: X-Total-Count", signal{"X-Total-Count", kHeaderCount, "total_header"}, func(int, int) any { return strconv.Itoa(listSize) }}
	extraRemaining   = extra{"remaining: x_remaining", signal{"x_remaining", kCount, "remaining"}, func(start, n int) any { return listSize - start - n }}
	extraSnapshot    = extra{"snapshot: {from: x_revision}", signal{"x_revision", kToken, "snapshot"}, func(int, int) any { return "77" }}
)

// variantsOf is the list as declared, and beside it the same list with
// the shared signals it does not send added (a total in the body and, in
// a list of its own, in a header, when it has none; a total's relation; a
// remaining count; a snapshot), so that none of them stands in for the
// dialect's own signals.
func variantsOf(l dialectList) []dialectList {
	if l.bare {
		return []dialectList{l}
	}
	has := func(key string) bool {
		return slices.ContainsFunc(l.signals, func(s signal) bool { return s.key == key })
	}
	var shared []extra
	if !has("remaining") {
		shared = append(shared, extraRemaining)
	}
	if !has("snapshot") && !has("resource_version") && !has("pit") {
		shared = append(shared, extraSnapshot)
	}
	out := []dialectList{l}
	switch {
	case !has("total") && !has("total_header"):
		shared = append(shared, extraTotal, extraRelation)
		out = append(out, withExtras(l, "total_header", []extra{extraTotalHeader}))
	case has("total") && !has("total_relation"):
		shared = append(shared, extraRelation)
	}
	if len(shared) > 0 {
		out = append(out, withExtras(l, "shared", shared))
	}
	return out
}

func withExtras(l dialectList, suffix string, extras []extra) dialectList {
	if suffix != "" {
		l.name += "/" + suffix
	}
	page := l.page
	l.page = func(start, size int, recs []any) (any, http.Header) {
		doc, h := page(start, size, recs)
		out := slices.Clone(doc.(obj))
		for _, e := range extras {
			if e.sig.header() {
				if h == nil {
					h = http.Header{}
				}
				h.Set(e.sig.member, e.value(start, len(recs)).(string))
				continue
			}
			out = append(out, member{e.sig.member, e.value(start, len(recs))})
		}
		return out, h
	}
	l.signals = slices.Clone(l.signals)
	for _, e := range extras {
		l.pagination += ", " + e.pagination
		l.signals = append(l.signals, e.sig)
		l.added = append(l.added, e.sig.member)
	}
	return l
}

// listServer is the peer: the honest list, but for one page whose signal
// is sent in the mutated form. The page is known by its place in the
// list, whatever size it is asked for at: a fault of the upstream's at
// that place, which a probe or a recheck of the page meets too.
type listServer struct {
	l  dialectList
	mu sync.Mutex
	// at, sig and m are the mutation: the page at position at, or none
	// when sig is nil.
	at      int
	sig     *signal
	m       mutation
	applied bool
	// doubt is false where the mutated form is read after all.
	doubt bool
}

func (s *listServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_pit" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"pit-1"}`)
		return
	}
	var body map[string]any
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(r.Body)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if dec.Decode(&body) != nil {
			http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
			return
		}
	}
	start, size, ok := s.l.ask(r, body)
	if !ok || size < 1 || start < 0 || start > listSize || r.URL.Path != "/items" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"no such page"}`)
		return
	}
	doc, h := s.l.page(start, size, recordsFrom(start, size))
	if h == nil {
		h = http.Header{}
	}
	s.mu.Lock()
	if s.sig != nil && start == s.at {
		sig := *s.sig
		switch {
		case sig.header():
			// Two Link fields are one list of links: unreadable only
			// when they name two next targets.
			s.doubt = !(sig.kind == kLink && s.m.twice > 0 && !strings.Contains(h.Get(sig.member), `rel="next"`))
			if mutateHeader(h, sig.member, s.m) {
				s.applied = true
			}
		case sig.member == ".":
			// The body is the signal: it can be neither left out nor
			// named twice.
			if s.m.twice == 0 && !s.m.asString && !s.m.remove {
				s.applied = true
				doc = s.m.value
			}
		default:
			if d, ok := mutate(doc, strings.Split(sig.member, "."), s.m); ok {
				doc, s.applied = d, true
			}
		}
	}
	s.mu.Unlock()
	for k, vs := range h {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	var b bytes.Buffer
	writeJSON(&b, doc)
	w.Write(b.Bytes())
}

// config is the list's configuration over the peer at url.
func (s *listServer) config(t *testing.T, url string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(itemsConfig(url, s.l.list, s.l.pagination, ""))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// resource is a fresh runtime's resource over the list (nothing a scan
// learns of the upstream carries over from another case).
func resourceOf(t *testing.T, cfg *config.Config) *Resource {
	t.Helper()
	rt, err := Initialize(t.Context(), cfg, Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return rt.Resources["items"]
}

var truth = []string{"r1", "r2", "r3", "r4", "r5"}

// named reports whether the outcome or the problem names member.
func named(out Outcome, err error, member string) bool {
	for _, rs := range out.Reasons {
		if rs.Member == member || rs.Field == member {
			return true
		}
	}
	for _, w := range out.Warnings {
		if w.Member == member {
			return true
		}
	}
	var se *ScanError
	if errors.As(err, &se) && se.Problem != nil {
		return strings.Contains(se.Problem.Detail, strconv.Quote(member))
	}
	return false
}

// signalCase is one scan of a list with one signal of one page mutated.
type signalCase struct {
	sink *collect
	out  Outcome
	err  error
}

func scanCase(t *testing.T, cfg *config.Config) signalCase {
	t.Helper()
	r := resourceOf(t, cfg)
	sink, out, err := scanAll(t, r, nil, Budget{MaxPages: 50, PagesLimitSource: "airlock"})
	return signalCase{sink, out, err}
}

func TestEverySignalOfEveryDialect(t *testing.T) {
	var cases atomic.Int64
	t.Run("lists", func(t *testing.T) {
		for _, k := range config.DialectKinds() {
			lists, ok := dialectLists[k.Name]
			if !ok {
				t.Errorf("dialect %s has no honest list here: declare its list and the signals it reads", k.Name)
				continue
			}
			covered := map[string]bool{}
			for _, l := range lists {
				for _, l := range variantsOf(l) {
					for _, sg := range l.signals {
						covered[sg.key] = true
						if sg.key == "resource_version" || sg.key == "pit" {
							// Each is the snapshot the list declares.
							covered["snapshot"] = true
						}
					}
					t.Run(k.Name+"/"+l.name, func(t *testing.T) {
						t.Parallel()
						cases.Add(int64(checkList(t, l)))
					})
				}
			}
			for _, key := range k.Keys() {
				switch {
				case !signalKeys[key] && !requestKeys[key]:
					t.Errorf("dialect %s reads %s, neither a signal nor a way of asking here: classify it", k.Name, key)
				case signalKeys[key] && !covered[key]:
					t.Errorf("dialect %s reads %s, and no list here sends it: declare the signal", k.Name, key)
				}
			}
		}
	})
	t.Logf("%d cases", cases.Load())
}

// checkList scans the honest list, then the list with each of its
// signals mutated on each page in each way, and returns how many
// mutated scans it checked.
func checkList(t *testing.T, l dialectList) int {
	s := &listServer{l: l}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	cfg := s.config(t, ts.URL)
	honest := scanCase(t, cfg)
	if honest.err != nil || !honest.out.ScanComplete || !slices.Equal(honest.sink.ids, truth) {
		t.Fatalf("the honest list: err %v, complete %v, items %v, reasons %+v, coverage %+v",
			honest.err, honest.out.ScanComplete, honest.sink.ids, honest.out.Reasons, honest.out.Sources)
	}
	n := 0
	for _, sg := range l.signals {
		if l.added != nil && !slices.Contains(l.added, sg.member) {
			continue
		}
		for page, at := range l.starts {
			for _, m := range mutations {
				s.mu.Lock()
				s.sig, s.at, s.m, s.applied, s.doubt = &sg, at, m, false, true
				s.mu.Unlock()
				c := scanCase(t, cfg)
				s.mu.Lock()
				applied, doubt := s.applied, s.doubt
				s.sig = nil
				s.mu.Unlock()
				if !applied {
					continue
				}
				n++
				want := expect(sg, m, page == len(l.starts)-1)
				if !doubt && want == wantDoubt {
					want = wantEither
				}
				checkSignalCase(t, fmt.Sprintf("%s on page %d %s", sg.member, page+1, m.name), sg, page+1, want, c)
			}
		}
	}
	return n
}

// signalKeys are the pagination keys that name a signal read from a page;
// the others say how to ask for one.
var signalKeys = map[string]bool{
	"has_more": true, "is_last": true, "next_cursor": true, "next": true, "total": true, "total_header": true,
	"total_relation": true, "total_pages": true, "total_pages_header": true, "continue_path": true,
	"resource_version": true, "remaining": true, "snapshot": true, "sort_values": true, "pit": true,
	"batch_complete": true, "evaluated": true,
}

// requestKeys are the pagination keys that say how a page is asked for,
// or what a signal's absence means: no page sends them.
var requestKeys = map[string]bool{
	"dialect": true, "consistency": true, "page_size": true, "page_size_param": true, "total_exact": true,
	"expiry": true, "absent_means_zero": true, "cursor_param": true, "cursor_field": true, "cursor_exclusive": true,
	"offset_param": true, "concurrency": true, "page_param": true, "first_page": true, "continue_param": true,
	"connection": true, "search_after_param": true, "empty_without_items": true,
}

// want is what a mutated scan must answer.
type want int

const (
	// wantEither: complete with the list's records, or not complete with
	// a stable code.
	wantEither want = iota
	// wantDoubt: not complete, the member named.
	wantDoubt
	// wantComplete: the mutated form says what the honest one said, or
	// nothing a claim rests on: complete with the list's records.
	wantComplete
	// wantNoSnapshot: complete, claiming no snapshot, NO_SNAPSHOT naming
	// the member and the page.
	wantNoSnapshot
)

// none are the mutations that leave a signal absent or say "none".
var none = map[string]bool{"removed": true, "null": true, "empty_string": true}

// expect is what a scan must answer with sg sent as m, on the last page
// or another.
func expect(sg signal, m mutation, last bool) want {
	if unreadable(sg.kind, m) {
		return wantDoubt
	}
	switch {
	case sg.key == "snapshot" || sg.key == "resource_version":
		// A snapshot missing from a page is named, and none is claimed;
		// the records are read all the same.
		if none[m.name] {
			return wantNoSnapshot
		}
	case sg.kind == kCount || sg.kind == kHeaderCount:
		// A count missing, null or negative is no count: nothing rests
		// on it.
		if m.name == "removed" || m.name == "null" || m.name == "negative" {
			return wantComplete
		}
	case sg.key == "total_relation":
		// A total that is not exact proves nothing: the dialect's own
		// signals end the list.
		return wantComplete
	case last && (sg.key == "next_cursor" || sg.key == "continue_path" || sg.key == "next" || sg.kind == kLink):
		// No continuation on the last page: the end the dialect proves.
		if none[m.name] {
			return wantComplete
		}
	}
	return wantEither
}

func checkSignalCase(t *testing.T, name string, sg signal, page int, w want, c signalCase) {
	t.Helper()
	out, err := c.out, c.err
	complete := err == nil && out.ScanComplete
	if complete {
		if !slices.Equal(c.sink.ids, truth) || out.Matched != listSize {
			t.Errorf("%s: complete with %v (matched %d); the list holds %v", name, c.sink.ids, out.Matched, truth)
		}
	} else {
		var se *ScanError
		switch {
		case err != nil && (!errors.As(err, &se) || se.Problem == nil || se.Problem.Code == ""):
			t.Errorf("%s: failed without a problem code: %v", name, err)
		case err == nil && len(out.Reasons) == 0:
			t.Errorf("%s: incomplete without a reason", name)
		}
		for _, rs := range out.Reasons {
			if rs.Code == "" {
				t.Errorf("%s: a reason without a code: %+v", name, rs)
			}
		}
	}
	switch w {
	case wantDoubt:
		if complete {
			t.Errorf("%s: complete over a signal that cannot be read (coverage %+v)", name, out.Sources)
		} else if !named(out, err, sg.name()) {
			t.Errorf("%s: the member is not named: err %v, reasons %+v, warnings %+v", name, err, out.Reasons, out.Warnings)
		}
	case wantComplete:
		if !complete {
			t.Errorf("%s: not complete: err %v, reasons %+v, coverage %+v", name, err, out.Reasons, out.Sources)
		}
	case wantNoSnapshot:
		w := warningOf(out, envelope.WarnNoSnapshot)
		if !complete || out.Snapshot != nil || out.Consistency != config.ConsistencyNone || w == nil || w.Member != sg.member || w.Page == nil || *w.Page != page {
			t.Errorf("%s: err %v, complete %v, snapshot %v, consistency %q, warnings %+v; want complete without a snapshot, NO_SNAPSHOT naming it on page %d",
				name, err, complete, out.Snapshot, out.Consistency, out.Warnings, page)
		}
	}
}
