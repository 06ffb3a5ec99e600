package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"slices"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// SignalContinuationNone: the answer carried no continuation object, or
// an empty one (continue_object).
const SignalContinuationNone = "continuation_empty"

// objectDialect is continue_object: the answer's continuation object
// (MediaWiki's continue) is sent back whole, each member as a parameter
// of its own, in the next request. The state keeps the object as its
// canonical JSON in Cursor, so that it is saved and sealed as any cursor
// is, and the same object twice is the same continuation twice.
type objectDialect struct{ p config.PaginationConfig }

// newObjectDialect builds the continue_object dialect.
func newObjectDialect(p config.PaginationConfig, _ string) dialect { return objectDialect{p} }

func (d objectDialect) query(p *listParams, st pageState) *url.URL {
	p.set(d.p.PageSizeParam, d.p.PageSize)
	if d.p.ContinueParam != "" {
		// Sent back whole, as it was read (DynamoDB's ExclusiveStartKey).
		if o := continuationMembers(st.Cursor); o != nil {
			p.set(d.p.ContinueParam, o)
		}
		return nil
	}
	for k, v := range continuationMembers(st.Cursor) {
		// Each member under its own name: at the top of a body, never
		// split at a dot.
		if p.kind == config.ListQuery {
			p.query.Set(k, jsonvalue.String(v))
		} else {
			p.body[k] = v
		}
	}
	return nil
}

func (d objectDialect) parse(resp *transport.Response, doc any, items []any, st pageState) (page, error) {
	pg := page{items: items, next: st}
	pg.next.Started = true
	pg.next.Seen += len(items)
	pg.next.LastFull = len(items) >= d.p.PageSize
	pg.next.MaxPage = max(st.MaxPage, len(items))
	total, known := pg.totalOf(d.p, resp, doc)
	totalVerdict(&pg, total, known, true)
	pg.next.Cursor = ""
	o, ost := readObject(doc, d.p.ContinuePath)
	if d.p.ContinueParam != "" && ost == signalRead && len(o) == 0 {
		// Sent whole, the object is the continuation itself: null or {}
		// in its place says neither "go on from here" nor "the end"
		// (DynamoDB leaves LastEvaluatedKey out on the last page).
		ost = signalUnreadable
	}
	if len(o) > 0 && d.p.ContinueParam != "" {
		enc, err := jsonvalue.Canonical(o)
		if err != nil {
			return pg, transport.BadResponse("the continuation object at %q cannot be encoded", d.p.ContinuePath)
		}
		pg.next.Cursor, pg.next.SignalSeen = string(enc), true
		return pg, nil
	}
	if len(o) > 0 {
		for _, v := range o {
			switch v.(type) {
			case string, json.Number, bool:
			default:
				return pg, transport.BadResponse("a member of the continuation object at %q is not a string, number or boolean", d.p.ContinuePath)
			}
		}
		enc, err := jsonvalue.Canonical(o)
		if err != nil {
			return pg, transport.BadResponse("the continuation object at %q cannot be encoded", d.p.ContinuePath)
		}
		pg.next.Cursor, pg.next.SignalSeen = string(enc), true
		return pg, nil
	}
	switch {
	case ost == signalUnreadable:
		// Not an object: how to go on cannot be read.
		pg.doubt(d.p.ContinuePath)
		pg.unknown(SignalUnreadable, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case ost == signalRead:
		// Present, and null or {}: the upstream says there is nothing to
		// continue with.
		pg.none(d.p, st, SignalContinuationNone, len(items))
	default:
		// MediaWiki leaves continue out on the last page: proof only once
		// the object was seen on this scan or a probe showed it is sent.
		pg.absent(d.p, st, SignalContinuationNone, len(items))
	}
	return pg, nil
}

func (d objectDialect) more(_ *transport.Response, doc any) bool {
	o, _ := readObject(doc, d.p.ContinuePath)
	return len(o) > 0
}

func (objectDialect) plan(pageState) []pageState { return nil }

// continuationMembers decodes a continuation object kept in a state.
func continuationMembers(enc string) map[string]any {
	if enc == "" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(enc)))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// checkContinuation refuses a continuation object that would rewrite the
// request rather than continue it: a member named as a parameter airlock
// sets itself (list.params, a source's params, a filter's parameters, the
// page size, a query credential) with another value. The upstream's
// object may only add to what was asked, so that it can neither widen
// the scope nor point the request at another action.
func (r *Resource) checkContinuation(next pageState) error {
	if r.Pagination.Dialect != config.DialectContinueObject || next.Cursor == "" || r.Pagination.ContinueParam != "" {
		// Sent whole in one member, the object names no parameter.
		return nil
	}
	own := map[string]string{}
	for k, v := range r.Config.List.Params {
		own[k] = v
	}
	for _, src := range r.Sources {
		for k, v := range src.Params {
			own[k] = v
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Config.Filters)) {
		if fc := r.Config.Filters[name]; fc != nil {
			for _, p := range paramNames(fc) {
				own[p] = "\x00" // any value it carries is the caller's
			}
		}
	}
	own[r.Pagination.PageSizeParam] = "\x00"
	if q := r.Upstream.QueryCredential(); q != "" {
		own[q] = "\x00"
	}
	for k, v := range continuationMembers(next.Cursor) {
		if mine, ok := own[k]; ok && mine != jsonvalue.String(v) {
			return transport.BadResponse("the continuation object names %q, a parameter airlock sets itself; it was not followed", k)
		}
	}
	return nil
}

// maxBatchRequests bounds the requests one batch may take (see
// fetchBatch): an upstream that never says its batch is whole is not
// followed forever.
const maxBatchRequests = 100

// fetchBatch reads one whole batch of a continue_object list that
// declares batch_complete: requests follow the continuation until an
// answer carries the member (or the list ends), and the items, which
// MediaWiki repeats in each answer of the batch with the next part of
// their properties, are merged by id into one page. A batch is read
// whole or not at all: a budget is never cut inside it, since a scan
// resumed there would deliver items with only part of their lists.
func (s *Scan) fetchBatch(ctx context.Context, src *sourceScan, st pageState) (page, error) {
	idPath := s.r.FieldPath(s.r.Config.IDField)
	var merged batch
	cur := st
	for n := 1; ; n++ {
		resp, err := s.send(ctx, src, &cur)
		if err != nil {
			return page{}, err
		}
		pg, err := s.read(src, cur, resp)
		if err != nil {
			return pg, err
		}
		if err := merged.add(pg.items, idPath); err != nil {
			return pg, err
		}
		marker := present(pg.doc, s.r.Pagination.BatchComplete)
		if marker == signalUnreadable {
			pg.doubt(s.r.Pagination.BatchComplete)
		}
		if marker == signalRead || pg.next.Done || pg.next.Probe {
			pg.items = merged.items
			pg.next.Seen = st.Seen + len(merged.items)
			pg.next.LastFull = len(merged.items) >= s.r.Pagination.PageSize
			if marker != signalRead && !(pg.next.Done && pg.next.End == envelope.EndUnproven) {
				// The list ends on an answer that does not say its batch
				// is whole: the batch's items may be missing parts, and
				// the list an answer.
				pg.unknown(SignalBatchIncomplete, false)
			}
			return pg, nil
		}
		if n == maxBatchRequests {
			return pg, transport.BadResponse("a batch was not complete after %d requests (no %q member)", maxBatchRequests, s.r.Pagination.BatchComplete)
		}
		// Every request is a page read, though the batch is one page of
		// items.
		s.mu.Lock()
		s.pages++
		src.pages++
		s.mu.Unlock()
		cur = pg.next
	}
}

// batch merges the items of a batch's answers by id, in the order first
// seen.
type batch struct {
	items []any
	byID  map[string]map[string]any
}

func (b *batch) add(items []any, idPath string) error {
	if b.byID == nil {
		b.byID = map[string]map[string]any{}
	}
	var dec itemDecoder
	for _, raw := range items {
		v, dups, err := dec.item(raw)
		if err != nil {
			return err
		}
		if len(dups) > 0 {
			// Ambiguous: left raw, for the scan to find its duplicates
			// and withhold it, and never merged with another part.
			b.items = append(b.items, raw)
			continue
		}
		m, ok := v.(map[string]any)
		id, hasID := jsonvalue.GetID(m, idPath)
		if !ok || !hasID {
			// Left for the scan to refuse or count as it does any item.
			b.items = append(b.items, v)
			continue
		}
		if prev, seen := b.byID[id]; seen {
			mergeInto(prev, m)
			continue
		}
		b.byID[id] = m
		b.items = append(b.items, m)
	}
	return nil
}

// mergeInto adds what a later answer holds of an item to what earlier
// ones held: members it did not have, the elements its lists did not
// have, and the same for nested objects. A value both hold otherwise is
// the earlier one (MediaWiki repeats a page's title and namespace as
// they were).
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		prev, ok := dst[k]
		if !ok {
			dst[k] = v
			continue
		}
		switch p := prev.(type) {
		case []any:
			if more, ok := v.([]any); ok {
				for _, e := range more {
					if !slices.ContainsFunc(p, func(x any) bool { return jsonvalue.Equal(x, e) }) {
						p = append(p, e)
					}
				}
				dst[k] = p
			}
		case map[string]any:
			if more, ok := v.(map[string]any); ok {
				mergeInto(p, more)
			}
		}
	}
}
