package upstream

import (
	"context"
	"maps"
	"regexp"
	"slices"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// PageTotal reads a page's total as the resource's dialect does (a
// GraphQL total in the body is the connection's).
func (r *Resource) PageTotal(resp *transport.Response, doc any) (int, bool) {
	if r.Pagination.Dialect == config.DialectGraphQL {
		n, known, _ := dialect.ConnectionTotal(r.Pagination, resp, doc)
		return n, known
	}
	n, known, _ := dialect.ReadTotal(r.Pagination, resp, doc)
	return n, known
}

// checkContinuation refuses a continuation object that would rewrite the
// request rather than continue it: a member named as a parameter airlock
// sets itself (list.params, a source's params, a filter's parameters, the
// page size, a query credential) with another value. The upstream's
// object may only add to what was asked, so that it can neither widen
// the scope nor point the request at another action.
func (r *Resource) checkContinuation(next dialect.State) error {
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
			for _, p := range dialect.ParamNames(fc) {
				own[p] = "\x00" // any value it carries is the caller's
			}
		}
	}
	own[r.Pagination.PageSizeParam] = "\x00"
	if q := r.Upstream.QueryCredential(); q != "" {
		own[q] = "\x00"
	}
	for k, v := range dialect.ContinuationMembers(next.Cursor) {
		if mine, ok := own[k]; ok && mine != jsonvalue.String(v) {
			return transport.BadResponse("the continuation object names %q, a parameter airlock sets itself; it was not followed", k)
		}
	}
	return nil
}

// fetchBatch reads one whole batch of a continue_object list that
// declares batch_complete: requests follow the continuation until an
// answer carries the member (or the list ends), and the items, which
// MediaWiki repeats in each answer of the batch with the next part of
// their properties, are merged by id into one page. A batch is read
// whole or not at all: a budget is never cut inside it, since a scan
// resumed there would deliver items with only part of their lists.
func (s *Scan) fetchBatch(ctx context.Context, src *sourceScan, st dialect.State) (dialect.Page, error) {
	idPath := s.r.FieldPath(s.r.Config.IDField)
	var merged batch
	// What an answer of the batch held unreadable, or left out of a
	// declared snapshot, is doubt on the batch's page: the batch's page
	// is its last answer's.
	var doubts []string
	noSnapshot := false
	cur := st
	for n := 1; ; n++ {
		resp, err := s.send(ctx, src, &cur)
		if err != nil {
			return dialect.Page{}, err
		}
		pg, err := s.read(src, cur, resp)
		if err != nil {
			return pg, err
		}
		if err := merged.add(pg.Items, idPath); err != nil {
			return pg, err
		}
		marker := dialect.Present(pg.Doc, s.r.Pagination.BatchComplete)
		if marker == dialect.Unreadable {
			pg.Doubt(s.r.Pagination.BatchComplete)
		}
		own := pg.Doubts
		pg.Doubts = slices.Clone(doubts)
		for _, m := range own {
			pg.Doubt(m)
		}
		pg.NoSnapshot = pg.NoSnapshot || noSnapshot
		doubts, noSnapshot = pg.Doubts, pg.NoSnapshot
		if marker == dialect.Read || pg.Next.Done || pg.Next.Probe {
			if pg.Next.Recheck != nil {
				// The recheck asks this answer's request again: its own
				// items are those the smaller answer must hold.
				pg.Next.RecheckIDs = s.idHashes(src.cfg.Name, pg.Items)
			}
			pg.Items = merged.items
			pg.Next.Seen = st.Seen + len(merged.items)
			pg.Next.LastFull = len(merged.items) >= s.r.Pagination.PageSize
			if marker != dialect.Read && !(pg.Next.Done && pg.Next.End == envelope.EndUnproven) {
				// The list ends on an answer that does not say its batch
				// is whole: the batch's items may be missing parts, and
				// the list an answer.
				pg.Unknown(dialect.SignalBatchIncomplete, false)
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
		cur = pg.Next
	}
}

// graphqlCheck refuses a GraphQL answer that carries errors and no data
// for the connection (a query or variable the upstream refused, or an
// expired cursor when the expiry declaration matches); an answer with
// both data and errors is read, and is partial.
func (r *Resource) graphqlCheck(doc any, st dialect.State) error {
	msgs := dialect.GraphQLMessages(doc)
	if msgs == "" {
		return nil
	}
	conn, _ := jsonvalue.Get(doc, "data."+r.Pagination.Connection)
	if conn != nil {
		return nil
	}
	if st.Started && r.expiryMatches(200, []byte(msgs)) {
		return dialect.ErrExpired
	}
	return &transport.BodyError{Kind: transport.BodyGraphQLErrors, Detail: "the GraphQL answer carries errors and no data", Message: msgs}
}

// expiryMatches reports whether an answer to a request that carried a
// continuation says the continuation expired: a status among the declared
// ones (410 by default) whose body matches the declared pattern, when one
// is declared. A 200 is an expiry only for a declared pattern (GraphQL
// errors).
func (r *Resource) expiryMatches(status int, body []byte) bool {
	e := r.Pagination.Expiry
	statuses := []int{410}
	if e != nil && len(e.Status) > 0 {
		statuses = e.Status
	}
	if status == 200 && (e == nil || e.Match == "") {
		return false
	}
	hit := status == 200
	for _, s := range statuses {
		hit = hit || s == status
	}
	if !hit {
		return false
	}
	if e == nil || e.Match == "" {
		return true
	}
	re, err := regexp.Compile(e.Match)
	return err == nil && re.Match(body)
}

// maxBatchRequests bounds the requests one batch may take (see
// fetchBatch): an upstream that never says its batch is whole is not
// followed forever.
const maxBatchRequests = 100

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
	var dec dialect.ItemDecoder
	for _, raw := range items {
		v, dups, err := dec.Item(raw)
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
