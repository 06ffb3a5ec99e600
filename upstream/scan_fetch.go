package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// fetch requests the page st points at and reads it.
func (s *Scan) fetch(ctx context.Context, src *sourceScan, st dialect.State) (dialect.Page, error) {
	if s.r.Pagination.BatchComplete != "" {
		return s.fetchBatch(ctx, src, st)
	}
	resp, err := s.send(ctx, src, &st)
	if err != nil {
		return dialect.Page{}, err
	}
	return s.read(src, st, resp)
}

// send requests the page st points at (opening the point in time it needs
// first): the exchange alone, without decoding the body.
func (s *Scan) send(ctx context.Context, src *sourceScan, st *dialect.State) (*transport.Response, error) {
	if err := s.r.EnsurePIT(ctx, src.cfg, st, s.spec.RequestID); err != nil {
		return nil, err
	}
	return s.r.sendList(ctx, src.cfg, *st, s.listOptions(false))
}

// read decodes a page's answer and reads the dialect's verdict on it.
func (s *Scan) read(src *sourceScan, st dialect.State, resp *transport.Response) (dialect.Page, error) {
	doc, items, err := s.r.decodeList(resp, st, s.listOptions(false))
	if err != nil {
		return dialect.Page{}, err
	}
	pg, err := s.r.Dialect.Parse(resp, doc, items, st)
	if err != nil {
		return pg, err
	}
	s.r.afterParse(resp, doc, st, &pg)
	pg.Doc = doc
	if !pg.Next.Done && !pg.Next.Probe && sameContinuation(st, pg.Next) {
		return pg, transport.BadResponse("the upstream returned the same continuation twice")
	}
	if err := s.r.checkContinuation(pg.Next); err != nil {
		return pg, err
	}
	pg.Header = resp.Header
	return pg, nil
}

func (s *Scan) listOptions(probe bool) dialect.ListOptions {
	return dialect.ListOptions{Filter: s.spec.Filter, Probe: probe, RequestID: s.spec.RequestID}
}

// request sends one list request for the page st points at and returns the
// decoded body and its items. A probe asks for the source's first page at
// page size 1, without the upstream-side filters.
func (s *Scan) request(ctx context.Context, src *sourceScan, st dialect.State, probe bool) (*transport.Response, any, []any, error) {
	o := s.listOptions(probe)
	resp, err := s.r.sendList(ctx, src.cfg, st, o)
	if err != nil {
		return nil, nil, nil, err
	}
	doc, items, err := s.r.decodeList(resp, st, o)
	if err != nil {
		return nil, nil, nil, err
	}
	return resp, doc, items, nil
}

// sendList sends one list request and returns the answer, its body read.
func (r *Resource) sendList(ctx context.Context, src config.SourceConfig, st dialect.State, o dialect.ListOptions) (*transport.Response, error) {
	req, err := r.PageRequest(src, st, o)
	if err != nil {
		return nil, err
	}
	resp, err := r.Upstream.Do(ctx, req)
	if err != nil {
		var he *transport.HTTPError
		if st.Started && errors.As(err, &he) && he.Kind == transport.FailStatus && r.expiryMatches(he.Status, he.Body) {
			return nil, dialect.ErrExpired
		}
		return nil, err
	}
	return resp, nil
}

// decodeList decodes a list page: the body, then (for a graphql list) the
// answer's errors, then the items.
func (r *Resource) decodeList(resp *transport.Response, st dialect.State, o dialect.ListOptions) (any, []any, error) {
	if !o.Probe && r.Pagination.Dialect != config.DialectGraphQL && r.Config.List.ScalarItemField == "" {
		// A scan's page: its items are decoded one at a time as the scan
		// reads them.
		doc, items, found, err := transport.DecodeListBody(resp, r.Config.List.Items)
		if err != nil {
			return nil, nil, err
		}
		if found {
			return doc, items, nil
		}
		// No array where the items belong: ItemsOf says what is there.
		items, err = r.ItemsOf(doc)
		if err != nil {
			return nil, nil, err
		}
		return doc, items, nil
	}
	doc, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		return nil, nil, err
	}
	if r.Pagination.Dialect == config.DialectGraphQL {
		if err := r.graphqlCheck(doc, st); err != nil {
			return nil, nil, err
		}
	}
	items, err := r.ItemsOf(doc)
	if err != nil {
		return nil, nil, err
	}
	return doc, items, nil
}

// ItemsOf reads the items array of a list body; plain values become
// objects when list.scalar_item_field says so.
func (r *Resource) ItemsOf(doc any) ([]any, error) {
	if r.Pagination.Dialect == config.DialectGraphQL {
		return dialect.GraphQLItems(doc, r.Pagination.Connection)
	}
	raw, ok := jsonvalue.Get(doc, r.Config.List.Items)
	items, isArr := raw.([]any)
	if !ok || !isArr {
		if !ok && (r.Pagination.EmptyWithoutItems || dialect.AbsentZero(r.Pagination, doc, r.Config.List.Items)) {
			// Absent, where the configuration says what absence means.
			return []any{}, nil
		}
		if ok && raw == nil {
			// null is not a list: read as an empty page, it would end
			// the list beside a cursor that says it goes on.
			return nil, transport.BadResponse("the items at %q are null, not an array", r.Config.List.Items)
		}
		return nil, transport.BadResponse("items are not an array at %q", r.Config.List.Items)
	}
	if f := r.Config.List.ScalarItemField; f != "" {
		wrapped := make([]any, len(items))
		for i, it := range items {
			switch it.(type) {
			case string, json.Number, float64, bool:
				wrapped[i] = map[string]any{f: it}
			default:
				return nil, transport.BadResponse("an item is not a plain value, as list.scalar_item_field declares")
			}
		}
		items = wrapped
	}
	return items, nil
}

// probe settles an unknown end with one request: the source's first page
// at page size 1 without the upstream-side filters. When it carries the
// dialect's "more follows" signal, the upstream is known to send that
// signal, so its absence on the scan's last page proves the end (and this
// is remembered for the resource and source for the process's life).
// Otherwise the end stays unproven. It returns false when the source
// stopped (budget, deadline, a failure).
func (s *Scan) probe(ctx context.Context, src *sourceScan) bool {
	s.mu.Lock()
	rc := src.state.Recheck
	s.mu.Unlock()
	if rc != nil {
		return s.recheck(ctx, src)
	}
	key := src.cfg.Name
	if _, ok := s.r.endVerified.Load(key); ok {
		s.settleProbe(src, true)
		return true
	}
	if ctx.Err() != nil {
		s.stopForContext(ctx, src)
		return false
	}
	if s.takePages(1) == 0 {
		s.setStatus(src, srcCutPages)
		return false
	}
	resp, doc, items, err := s.request(ctx, src, dialect.State{}, true)
	s.mu.Lock()
	s.pages++
	src.pages++
	s.mu.Unlock()
	var he *transport.HTTPError
	switch {
	case err == nil:
	case errors.As(err, &he) && (he.Kind != transport.FailStatus || he.RateLimited() || he.Status >= 500), transport.IsTokenError(err):
		s.fail(ctx, src, err) // transient: the next Run probes again
		return false
	default:
		// The upstream refused or garbled the probe (a page size of 1
		// may be refused): nothing is proven.
		s.mu.Lock()
		src.state.Probe, src.state.Done, src.state.End, src.state.EndSignal = false, true, envelope.EndUnproven, dialect.SignalProbeFailed
		s.mu.Unlock()
		return true
	}
	more := len(items) > 0 && s.r.Dialect.More(resp, doc)
	if more {
		s.r.endVerified.Store(key, true)
	}
	s.settleProbe(src, more)
	return true
}

// recheck settles a whole page that came without the "more follows"
// signal: the list may have ended on a full page (Kubernetes omits the
// last chunk's continue token), or the upstream dropped the signal from
// one page. The page's own request is sent again one item smaller: the
// upstream then holds one item back, and an answer of exactly that many
// items that says more follows shows it sends the signal from that place
// when more follows; the whole page without it proves the end
// (…_rechecked). Anything else (the size ignored, no signal, a refusal)
// proves nothing (next_signal_missing). Asking one item larger instead
// would prove nothing on an upstream that caps its pages at the size the
// page had. Behind links that number the pages (GitHub's page=N), a
// smaller request starts at another item, so the page after, by number,
// is asked for instead: an empty answer proves the end. It returns false
// when the source stopped (budget, deadline, a failure).
func (s *Scan) recheck(ctx context.Context, src *sourceScan) bool {
	s.mu.Lock()
	st := src.state
	s.mu.Unlock()
	unproven := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		p := &src.state
		p.Probe, p.Recheck, p.RecheckFollowing, p.Done, p.End, p.EndSignal = false, nil, false, true, envelope.EndUnproven, dialect.SignalMissingOnFull
		return true
	}
	size := st.RecheckItems - 1
	if st.RecheckFollowing {
		// Links that number the pages (dialect.State.RecheckFollowing):
		// the page after, at the same size.
		size = st.RecheckItems
	} else if st.RecheckItems < 2 {
		// A page of one item cannot be asked for smaller, and asked for
		// larger it proves nothing where the upstream caps its pages at
		// one.
		return unproven()
	}
	if ctx.Err() != nil {
		s.stopForContext(ctx, src)
		return false
	}
	if s.takePages(1) == 0 {
		s.setStatus(src, srcCutPages)
		return false
	}
	o := s.listOptions(false)
	o.PageSize = size
	resp, err := s.r.sendList(ctx, src.cfg, *st.Recheck, o)
	var doc any
	var items []any
	if err == nil {
		doc, items, err = s.r.decodeList(resp, *st.Recheck, o)
	}
	s.mu.Lock()
	s.pages++
	src.pages++
	s.mu.Unlock()
	var he *transport.HTTPError
	switch {
	case err == nil:
	case errors.As(err, &he) && (he.Kind != transport.FailStatus || he.Status == http.StatusTooManyRequests || he.Status >= 500), transport.IsTokenError(err):
		s.fail(ctx, src, err) // transient: the next Run rechecks again
		return false
	default:
		// Refused or garbled: nothing is proven.
		return unproven()
	}
	if st.RecheckFollowing {
		if len(items) != 0 || s.r.Dialect.More(resp, doc) {
			// Items after the page, or a way on: a next link dropped
			// from the page looks the same as the end.
			return unproven()
		}
	} else if len(items) != size || !s.r.Dialect.More(resp, doc) || !s.among(src.cfg.Name, items, st.RecheckIDs) {
		// Not the page's own items, or no signal: nothing is
		// proven of the place the page was read at.
		return unproven()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &src.state
	p.Probe, p.Recheck, p.RecheckFollowing, p.Done = false, nil, false, true
	p.End, p.EndSignal = envelope.EndProven, p.EndSignal+dialect.SignalRechecked
	return true
}

// idHashes hashes the ids of items (an item without one counts as an
// empty id), for Scan.recheck.
func (s *Scan) idHashes(source string, items []any) []uint64 {
	idPath := s.r.FieldPath(s.r.Config.IDField)
	out := make([]uint64, 0, len(items))
	for _, it := range items {
		id, _ := jsonvalue.GetID(dialect.ItemValue(it), idPath)
		out = append(out, seenKey(s.salt, source, id))
	}
	return out
}

// among reports whether every item's id is one of ids (idHashes).
func (s *Scan) among(source string, items []any, ids []uint64) bool {
	for _, h := range s.idHashes(source, items) {
		if !slices.Contains(ids, h) {
			return false
		}
	}
	return true
}

func (s *Scan) settleProbe(src *sourceScan, verified bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &src.state
	st.Probe, st.Done = false, true
	if verified {
		st.End, st.EndSignal = envelope.EndProven, st.EndSignal+dialect.SignalVerified
		return
	}
	st.End, st.EndSignal = envelope.EndUnproven, dialect.SignalNotSeen
}

// sameContinuation reports a continuation that did not advance: the same
// cursor, next URL, offset or page again.
func sameContinuation(a, b dialect.State) bool {
	if !a.Started {
		return false
	}
	if a.NextURL != nil && b.NextURL != nil {
		return a.NextURL.String() == b.NextURL.String()
	}
	return a.Cursor == b.Cursor && a.Offset == b.Offset && a.Page == b.Page && a.NextURL == nil && b.NextURL == nil
}

// pageRefused settles the refusal of a numbered page after the first was
// accepted with the same arguments (WordPress answers 400 for a page past
// its last): only the page number changed, so the arguments are not what
// is wrong. The source ends without a proven end (END_NOT_PROVEN,
// page_refused), and one request for the first page reads the total
// again: a total that fell is also INCONSISTENT_SNAPSHOT (the collection
// shrank under the scan, which must restart). It reports false, leaving
// the error to fail, for anything else.
func (s *Scan) pageRefused(ctx context.Context, src *sourceScan, st dialect.State, err error) bool {
	if s.continuationRefused(src, st, err) {
		return true
	}
	var he *transport.HTTPError
	k, _ := config.DialectKindOf(s.r.Pagination.Dialect)
	if !st.Started || !k.Positional || !errors.As(err, &he) || he.Kind != transport.FailStatus ||
		(he.Status != http.StatusBadRequest && he.Status != http.StatusNotFound && he.Status != http.StatusUnprocessableEntity && he.Status != http.StatusRequestedRangeNotSatisfiable) {
		return false
	}
	if s.takePages(1) == 0 {
		return false
	}
	resp, doc, _, rerr := s.request(ctx, src, dialect.State{}, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages++
	src.pages++
	if rerr != nil {
		return false
	}
	now, known, _ := dialect.ReadTotal(s.r.Pagination, resp, doc)
	pages, counted, _ := dialect.ReadTotalPages(s.r.Pagination, resp, doc)
	shrank := (known && st.Total != nil && now < *st.Total) || (counted && st.TotalPages != nil && pages < *st.TotalPages)
	if shrank {
		s.addStickyLocked(envelope.InconsistentSnapshot, src.cfg.Name, "total_changed")
	}
	src.state = st
	src.state.Done, src.state.Probe, src.state.End, src.state.EndSignal = true, false, envelope.EndUnproven, dialect.SignalPageRefused
	return true
}

func (s *Scan) fail(ctx context.Context, src *sourceScan, err error) {
	r := s.r
	var he *transport.HTTPError
	var se *ScanError
	var te *transport.TokenError
	fatal := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		src.status = srcUnavailable
		if s.fatal == nil {
			s.fatal = &ScanError{Problem: transport.ProblemFor(err, r.FieldName), Source: src.cfg.Name, Err: err}
			s.cancelRun()
		}
	}
	switch {
	case errors.As(err, &se):
		s.mu.Lock()
		if s.fatal == nil {
			s.fatal = se
			s.cancelRun()
		}
		s.mu.Unlock()
	case errors.Is(err, dialect.ErrExpired):
		s.setStatus(src, srcExpired)
	case transport.IsBadResponse(err), errors.As(err, &te):
		// No access token: nothing can be read until an operator (or the
		// authorization server) fixes it; the problem says which.
		fatal()
	case errors.As(err, &he):
		switch he.Kind {
		case transport.FailCanceled:
			s.stopForContext(ctx, src)
		case transport.FailTooLarge:
			fatal()
		case transport.FailTimeout, transport.FailConnection:
			if ctx.Err() != nil {
				s.stopForContext(ctx, src)
				return
			}
			s.mu.Lock()
			src.status, src.signal = srcUnavailable, failSignal(he)
			s.mu.Unlock()
		case transport.FailStatus:
			switch st := he.Status; {
			case he.RateLimited():
				s.mu.Lock()
				src.status, src.retryAfter = srcRateLimited, max(he.RetryAfter, time.Second)
				s.mu.Unlock()
			case st >= 500:
				s.mu.Lock()
				src.status, src.retryAfter, src.signal = srcUnavailable, he.RetryAfter, failSignal(he)
				s.mu.Unlock()
			default:
				fatal()
			}
		}
	default:
		s.mu.Lock()
		if s.fatal == nil {
			s.fatal = &ScanError{Problem: envelope.NewProblem(envelope.ProblemInternal, ""), Source: src.cfg.Name, Err: err}
			s.cancelRun()
		}
		s.mu.Unlock()
	}
}

// failSignal names how a source failed, for SOURCE_UNAVAILABLE.
func failSignal(he *transport.HTTPError) string {
	switch he.Kind {
	case transport.FailTimeout:
		return "timeout"
	case transport.FailConnection:
		return "connection"
	}
	return fmt.Sprintf("status_%d", he.Status)
}

// continuationRefused settles a 404 to a next link the upstream handed out
// (link, next_url) after its first page was read at the configured
// endpoint: the endpoint exists, so the 404 says nothing about the
// configuration, and nothing about the end either. The source ends without
// a proven end (END_NOT_PROVEN, continuation_refused); what was read
// stands. A cursor or token sent to the configured endpoint keeps its
// problem: there, a 404 may say the endpoint is gone.
func (s *Scan) continuationRefused(src *sourceScan, st dialect.State, err error) bool {
	var he *transport.HTTPError
	if !st.Started || st.NextURL == nil || !errors.As(err, &he) || he.Kind != transport.FailStatus || he.Status != http.StatusNotFound {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	src.state = st
	src.state.Done, src.state.Probe, src.state.End, src.state.EndSignal = true, false, envelope.EndUnproven, dialect.SignalContinuationRefused
	return true
}
