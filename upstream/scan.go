package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
)

// Item is one record read from the upstream.
type Item struct {
	ID      string
	Version string
	Source  string
	Doc     map[string]any
	// Violations are the item's broken decision-field contracts (only
	// with ScanSpec.KeepViolations; otherwise such items are withheld).
	Violations []Violation
}

// Sink receives every matching item in scan order. An error from Add stops
// the scan and is returned by Run.
type Sink interface {
	Add(*Item) error
}

// ScanSpec is what a scan reads. Filter must already be validated against
// the resource (see Resource.CheckFilter).
type ScanSpec struct {
	Filter    map[string]any
	GroupBy   []string
	RequestID string
	Sink      Sink
	// Decision names fields that drive the caller's decision besides the
	// resource's decision fields and the filter's (exclusions,
	// preconditions, effects).
	Decision []string
	// KeepViolations passes items that break a decision-field contract to
	// the sink with their violations (a preview lists them as ambiguous);
	// otherwise they are withheld and counted under CONTRACT_VIOLATION.
	KeepViolations bool
	// Progress, when set, is called after every page with the work done
	// so far (never with the scan's lock held).
	Progress func(ScanProgress)
	// CountFromTotal answers a counts-only scan (no sink, no groups) from
	// the upstream's total on each source's first page, when every item of
	// that page matches the filter (see Resource.CountFromTotal).
	CountFromTotal bool
}

// ScanProgress is what a scan has done so far.
type ScanProgress struct {
	Pages, ItemsScanned, Matched int
	// Total is the upstream's total over every source, when each reported
	// one.
	Total *int
}

// CountFromTotal reports whether a counts-only scan with this filter may be
// answered from the upstream's total: the resource declares its total
// exact, and every filter is sent upstream in a form it declares.
func (r *Resource) CountFromTotal(filter map[string]any, groupBy []string) bool {
	if !r.Pagination.TotalExact || len(groupBy) > 0 {
		return false
	}
	q := url.Values{}
	r.filterParams(q, filter)
	for name, v := range filter {
		fc := r.Config.Filters[name]
		if fc == nil || fc.Param == "" || !q.Has(fc.Param) {
			return false
		}
		if arr, ok := v.([]any); ok && len(arr) > 1 && fc.Multi == "" {
			return false
		}
	}
	return true
}

// Budget bounds one Run. PagesLimitSource says who set MaxPages (caller or
// airlock), for RESULT_LIMIT_REACHED.
type Budget struct {
	MaxPages         int
	PagesLimitSource string
	Deadline         time.Duration
}

// ScanError ends a whole call with a problem: the scan cannot go on in a way
// that retrying or continuing would fix.
type ScanError struct {
	Problem *envelope.Problem
	Source  string
	Err     error
}

func (e *ScanError) Error() string {
	return fmt.Sprintf("%s (source %q): %v", e.Problem.Code, e.Source, e.Err)
}

type srcStatus int

const (
	srcPending srcStatus = iota
	srcDone
	srcCutPages
	srcCutDeadline
	srcUnavailable
	srcRateLimited
	srcExpired
	srcOutOfScope
)

type sourceScan struct {
	// fromTotal is set when the source's count is the upstream's declared
	// exact total (a counts-only scan), not the items read.
	fromTotal  bool
	cfg        SourceConfig
	base       *url.URL
	state      pageState
	status     srcStatus
	pages      int
	items      int
	lastID     string
	retryAfter time.Duration
	signal     string
	capped     bool
	shortOf    int
}

type groupKey struct{ field, key string }

// Scan is one resumable scan of a resource's scope. Run it, read its
// Outcome, and Run it again to continue where a budget stopped it. A Scan is
// safe for concurrent use; Runs are serialized.
type Scan struct {
	r    *Resource
	spec ScanSpec

	runMu sync.Mutex // one Run at a time
	mu    sync.Mutex
	srcs  []*sourceScan

	pages, scanned, matched int
	groups                  map[groupKey]int
	groupVals               map[groupKey]any
	seen                    map[uint64]struct{}
	salt                    uint64 // keys seen (see seenKey)
	elapsed                 time.Duration
	snapshot                string
	estimate                *int
	sticky                  []envelope.Reason
	stickySeen              map[string]bool
	warnings                []envelope.Warning
	warnSeen                map[string]bool
	normalized              map[string]bool
	violations              map[string]*violation
	decision                map[string]bool
	filterFields            map[string]bool
	aliases                 map[string]bool
	enumDrift, fieldDrift   map[string]bool

	// per run
	budget    Budget
	pagesLeft int
	fatal     error
	cancelRun context.CancelFunc
}

type violation struct {
	field, rule, sample string
	count               int
}

// NewScan prepares a scan of the resource with the given spec.
func (r *Resource) NewScan(spec ScanSpec) *Scan {
	s := &Scan{
		r: r, spec: spec, groups: map[groupKey]int{}, groupVals: map[groupKey]any{},
		seen: map[uint64]struct{}{}, salt: newSalt(), stickySeen: map[string]bool{},
		warnSeen: map[string]bool{}, normalized: map[string]bool{}, violations: map[string]*violation{},
		decision: map[string]bool{}, filterFields: map[string]bool{}, aliases: map[string]bool{},
		enumDrift: map[string]bool{}, fieldDrift: map[string]bool{},
	}
	for name := range spec.Filter {
		f := r.filterField(name, r.Config.Filters[name])
		s.decision[f], s.filterFields[f] = true, true
	}
	for _, f := range spec.Decision {
		s.decision[f] = true
	}
	s.decision[r.Config.IDField] = true
	for _, src := range r.Sources {
		ss := &sourceScan{cfg: src, base: r.sourceBase(src)}
		if !src.inScope(spec.Filter) {
			ss.status = srcOutOfScope
		}
		s.srcs = append(s.srcs, ss)
	}
	return s
}

// inScope reports whether a source can hold records matching the filter.
func (src SourceConfig) inScope(filter map[string]any) bool {
	for k, held := range src.Match {
		want, ok := filter[k]
		if !ok {
			continue
		}
		if !matchesAny(want, held) {
			return false
		}
	}
	return true
}

func matchesAny(want any, held string) bool {
	if arr, ok := want.([]any); ok {
		for _, w := range arr {
			if fmt.Sprint(w) == held {
				return true
			}
		}
		return false
	}
	return fmt.Sprint(want) == held
}

// Resource returns the scanned resource.
func (s *Scan) Resource() *Resource { return s.r }

// Spec returns the scan's spec.
func (s *Scan) Spec() ScanSpec { return s.spec }

// Run continues the scan within the budget. Sources that stopped for a
// budget, a rate limit or an outage are tried again; sources whose cursor
// expired are not (the scan must be restarted, never merged). A non-nil
// error is a *ScanError (or the sink's error): the call ends with a problem.
func (s *Scan) Run(ctx context.Context, b Budget) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, b.Deadline)
	defer cancel()

	s.mu.Lock()
	s.budget, s.pagesLeft, s.fatal, s.cancelRun = b, b.MaxPages, nil, cancel
	var todo []*sourceScan
	for _, src := range s.srcs {
		switch src.status {
		case srcPending, srcCutPages, srcCutDeadline, srcUnavailable, srcRateLimited:
			src.status, src.retryAfter = srcPending, 0
			todo = append(todo, src)
		}
	}
	s.mu.Unlock()

	var wg sync.WaitGroup
	for _, src := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.runSource(runCtx, src)
		}()
	}
	wg.Wait()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.elapsed += time.Since(start)
	return s.fatal
}

func (s *Scan) takePages(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n = min(n, s.pagesLeft)
	s.pagesLeft -= n
	return n
}

func (s *Scan) setStatus(src *sourceScan, st srcStatus) {
	s.mu.Lock()
	src.status = st
	s.mu.Unlock()
}

func (s *Scan) runSource(ctx context.Context, src *sourceScan) {
	for {
		s.mu.Lock()
		st := src.state
		s.mu.Unlock()
		if st.Done {
			s.finishSource(src)
			return
		}
		if st.Probe {
			if !s.probe(ctx, src) {
				return
			}
			continue
		}
		if plans := s.r.dialect.plan(st); plans != nil {
			if !s.runParallel(ctx, src, plans) {
				return
			}
			continue
		}
		if ctx.Err() != nil {
			s.stopForContext(ctx, src)
			return
		}
		if s.takePages(1) == 0 {
			s.setStatus(src, srcCutPages)
			return
		}
		pg, err := s.fetch(ctx, src, st)
		if err != nil {
			s.fail(ctx, src, err)
			return
		}
		if err := s.process(src, st, pg); err != nil {
			s.fail(ctx, src, err)
			return
		}
		s.reportProgress()
	}
}

// reportProgress calls the spec's Progress with the work done so far.
func (s *Scan) reportProgress() {
	if s.spec.Progress == nil {
		return
	}
	s.mu.Lock()
	p := ScanProgress{Pages: s.pages, ItemsScanned: s.scanned, Matched: s.matched}
	total, known := 0, true
	for _, src := range s.srcs {
		if src.status == srcOutOfScope {
			continue
		}
		if t := src.state.Total; t != nil && !src.state.TotalUntrusted {
			total += *t
		} else {
			known = false
		}
	}
	if known {
		p.Total = &total
	}
	s.mu.Unlock()
	s.spec.Progress(p)
}

// runParallel keeps up to the configured concurrency of planned pages in
// flight and processes them strictly in page order, requesting the next
// page as each one is processed (no batch waits for its slowest page). It
// returns false when the source stopped.
func (s *Scan) runParallel(ctx context.Context, src *sourceScan, plans []pageState) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // pages fetched past a stop are abandoned
	type result struct {
		pg   page
		err  error
		done chan struct{}
	}
	results := make([]*result, len(plans))
	next := 0
	launch := func() {
		if next >= len(plans) || ctx.Err() != nil || s.takePages(1) == 0 {
			return
		}
		r := &result{done: make(chan struct{})}
		results[next] = r
		st := plans[next]
		next++
		go func() {
			defer close(r.done)
			r.pg, r.err = s.fetch(ctx, src, st)
		}()
	}
	for range s.r.Pagination.Concurrency {
		launch()
	}
	for i := range plans {
		r := results[i]
		if r == nil {
			if ctx.Err() != nil {
				s.stopForContext(ctx, src)
			} else {
				s.setStatus(src, srcCutPages)
			}
			return false
		}
		<-r.done
		if r.err != nil {
			s.fail(ctx, src, r.err)
			return false
		}
		if err := s.process(src, plans[i], r.pg); err != nil {
			s.fail(ctx, src, err)
			return false
		}
		s.reportProgress()
		if r.pg.next.Done || r.pg.next.Probe || (!r.pg.next.LastFull && i < len(plans)-1) {
			// The end came earlier than planned, or a short page broke
			// the plan's arithmetic (the upstream capped the page size):
			// the rest is read one page at a time from where this page
			// ended. Pages fetched past it are abandoned.
			return true
		}
		launch()
	}
	return true
}

func (s *Scan) stopForContext(ctx context.Context, src *sourceScan) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.setStatus(src, srcCutDeadline)
		return
	}
	// Canceled: by a fatal error elsewhere, or by the caller going away.
	s.setStatus(src, srcCutDeadline)
}

func (s *Scan) fetch(ctx context.Context, src *sourceScan, st pageState) (page, error) {
	resp, doc, items, err := s.request(ctx, src, st, false)
	if err != nil {
		return page{}, err
	}
	pg, err := s.r.dialect.parse(resp, doc, items, st)
	if err != nil {
		return pg, err
	}
	pg.doc = doc
	if !pg.next.Done && sameContinuation(st, pg.next) {
		return pg, badResponse("the upstream returned the same continuation twice")
	}
	pg.header = resp.Header
	return pg, nil
}

// request sends one list request for the page st points at and returns the
// decoded body and its items. A probe asks for the source's first page at
// page size 1, without the upstream-side filters.
func (s *Scan) request(ctx context.Context, src *sourceScan, st pageState, probe bool) (*Response, any, []any, error) {
	r := s.r
	q := url.Values{}
	for k, v := range r.Config.List.Params {
		q.Set(k, v)
	}
	for k, v := range src.cfg.Params {
		q.Set(k, v)
	}
	if !probe {
		r.filterParams(q, s.spec.Filter)
	}
	var u *url.URL
	if next := r.dialect.query(q, st); next != nil {
		u = src.base.ResolveReference(next)
		if !r.Upstream.SameOrigin(src.base, u) {
			return nil, nil, nil, badResponse("the continuation points at another host; it was not followed")
		}
	} else {
		if probe {
			q.Set(r.Pagination.PageSizeParam, "1")
		}
		u = r.Upstream.ResolveURL(src.base, r.Config.List.Path, q)
	}
	resp, err := r.Upstream.Do(ctx, Request{Method: http.MethodGet, URL: u, RequestID: s.spec.RequestID, Idempotent: true})
	if err != nil {
		return nil, nil, nil, err
	}
	doc, err := decodeJSONBody(resp, true)
	if err != nil {
		return nil, nil, nil, err
	}
	items, err := r.itemsOf(doc)
	if err != nil {
		return nil, nil, nil, err
	}
	return resp, doc, items, nil
}

// itemsOf reads the items array of a list body; plain values become
// objects when list.scalar_item_field says so.
func (r *Resource) itemsOf(doc any) ([]any, error) {
	raw, ok := getPath(doc, r.Config.List.Items)
	items, isArr := raw.([]any)
	if !ok || !isArr {
		if ok && raw == nil {
			return []any{}, nil
		}
		return nil, badResponse("items are not an array at %q", r.Config.List.Items)
	}
	if f := r.Config.List.ScalarItemField; f != "" {
		wrapped := make([]any, len(items))
		for i, it := range items {
			switch it.(type) {
			case string, json.Number, float64, bool:
				wrapped[i] = map[string]any{f: it}
			default:
				return nil, badResponse("an item is not a plain value, as list.scalar_item_field declares")
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
	resp, doc, items, err := s.request(ctx, src, pageState{}, true)
	s.mu.Lock()
	s.pages++
	src.pages++
	s.mu.Unlock()
	var he *HTTPError
	switch {
	case err == nil:
	case errors.As(err, &he) && (he.Kind != FailStatus || he.Status == http.StatusTooManyRequests || he.Status >= 500):
		s.fail(ctx, src, err) // transient: the next Run probes again
		return false
	default:
		// The upstream refused or garbled the probe (a page size of 1
		// may be refused): nothing is proven.
		s.mu.Lock()
		src.state.Probe, src.state.Done, src.state.End, src.state.EndSignal = false, true, envelope.EndUnproven, SignalProbeFailed
		s.mu.Unlock()
		return true
	}
	more := len(items) > 0 && s.r.dialect.more(resp, doc)
	if more {
		s.r.endVerified.Store(key, true)
	}
	s.settleProbe(src, more)
	return true
}

func (s *Scan) settleProbe(src *sourceScan, verified bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &src.state
	st.Probe, st.Done = false, true
	if verified {
		st.End, st.EndSignal = envelope.EndProven, st.EndSignal+SignalVerified
		return
	}
	st.End, st.EndSignal = envelope.EndUnproven, SignalNotSeen
}

// sameContinuation reports a continuation that did not advance: the same
// cursor, next URL, offset or page again.
func sameContinuation(a, b pageState) bool {
	if !a.Started {
		return false
	}
	if a.NextURL != nil && b.NextURL != nil {
		return a.NextURL.String() == b.NextURL.String()
	}
	return a.Cursor == b.Cursor && a.Offset == b.Offset && a.Page == b.Page && a.NextURL == nil && b.NextURL == nil
}

// decodeJSONBody decodes a JSON response body, numbers as json.Number. A
// content type other than JSON and, when checkError is set, a body that is
// an error object behind a 2xx are refused with their own kinds.
func decodeJSONBody(resp *Response, checkError bool) (any, error) {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			if err != nil {
				mt = "unparseable"
			}
			return nil, &BodyError{Kind: BodyContentType, Detail: envelope.SafeName(mt)}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(resp.Body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, badResponse("the body is not valid JSON")
	}
	if dec.More() {
		return nil, badResponse("the body has data after the JSON document")
	}
	if checkError {
		if why, bad := errorInSuccess(doc); bad {
			return nil, &BodyError{Kind: BodyErrorInSuccess, Detail: why}
		}
	}
	return doc, nil
}

// filterParams sends the upstream-side filters, each only in a form the
// configuration declares the API accepts: a single value; a list only as
// the declared multi form (a list of one is a single value); null only as
// null_param. Everything else is left to airlock, which re-checks every
// filter on every item anyway: an upstream filter can only narrow what is
// read, so a form the API might misread must never be sent.
func (r *Resource) filterParams(q url.Values, filter map[string]any) {
	for _, name := range sortedKeys(filter) {
		fc := r.Config.Filters[name]
		if fc == nil || fc.Param == "" {
			continue
		}
		fd, _ := r.Field(r.filterField(name, fc))
		if fd != nil && fd.Normalize != "" {
			// airlock compares normalized values; the upstream might not.
			continue
		}
		v := filter[name]
		if arr, ok := v.([]any); ok && len(arr) == 1 {
			v = arr[0]
		}
		if v != nil && isNullValue(v, fd) {
			v = nil
		}
		switch x := v.(type) {
		case nil:
			if fc.NullParam != "" {
				q.Set(fc.Param, fc.NullParam)
			}
		case []any:
			var parts []string
			for _, e := range x {
				if e == nil || isNullValue(e, fd) {
					parts = nil // null among the values: only airlock can match it
					break
				}
				parts = append(parts, scalarString(e))
			}
			if len(parts) == 0 {
				continue
			}
			switch fc.Multi {
			case "repeat":
				for _, p := range parts {
					q.Add(fc.Param, p)
				}
			case "comma":
				q.Set(fc.Param, strings.Join(parts, ","))
			}
		default:
			q.Set(fc.Param, scalarString(x))
		}
	}
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func (s *Scan) fail(ctx context.Context, src *sourceScan, err error) {
	r := s.r
	var he *HTTPError
	var se *ScanError
	fatal := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		src.status = srcUnavailable
		if s.fatal == nil {
			s.fatal = &ScanError{Problem: ProblemFor(err, r.FieldName), Source: src.cfg.Name, Err: err}
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
	case IsBadResponse(err):
		fatal()
	case errors.As(err, &he):
		switch he.Kind {
		case FailCanceled:
			s.stopForContext(ctx, src)
		case FailTooLarge:
			fatal()
		case FailTimeout, FailConnection:
			if ctx.Err() != nil {
				s.stopForContext(ctx, src)
				return
			}
			s.mu.Lock()
			src.status, src.signal = srcUnavailable, failSignal(he)
			s.mu.Unlock()
		case FailStatus:
			switch st := he.Status; {
			case st == http.StatusGone && r.Pagination.Dialect == DialectContinue:
				s.setStatus(src, srcExpired)
			case st == http.StatusTooManyRequests:
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
func failSignal(he *HTTPError) string {
	switch he.Kind {
	case FailTimeout:
		return "timeout"
	case FailConnection:
		return "connection"
	}
	return fmt.Sprintf("status_%d", he.Status)
}

// paramToFilter maps an upstream query parameter back to the filter that
// sent it, so that an upstream's field error names the tool argument.
func (r *Resource) paramToFilter(param string) string {
	for name, fc := range r.Config.Filters {
		if fc != nil && fc.Param == param {
			return "filter." + name
		}
	}
	return ""
}

// process accounts for one page: signals, consistency checks, items.
func (s *Scan) process(src *sourceScan, st pageState, pg page) error {
	r := s.r
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages++
	src.pages++
	s.readSignalsLocked(src, pg)
	if pg.snapshot != "" && s.snapshot == "" {
		s.snapshot = pg.snapshot
	}
	if pg.estimate != nil {
		e := src.items + len(pg.items) + *pg.estimate
		s.estimate = &e
	}
	if pg.total != nil && st.Total != nil && *pg.total != *st.Total {
		s.addStickyLocked(envelope.InconsistentSnapshot, src.cfg.Name, "total_changed")
	}
	if pg.hasBoundary && pg.boundary != src.lastID {
		s.addStickyLocked(envelope.InconsistentSnapshot, src.cfg.Name, "page_boundary_shifted")
	}
	idPath := r.FieldPath(r.Config.IDField)
	verPath := ""
	if r.Config.VersionField != "" {
		verPath = r.FieldPath(r.Config.VersionField)
	}
	fresh, rejected, matchedBefore := 0, 0, s.matched
	for _, raw := range pg.items {
		doc, ok := raw.(map[string]any)
		if !ok {
			return badResponse("an item is not a JSON object")
		}
		id, ok := itemID(doc, idPath)
		if !ok {
			s.violationLocked(r.Config.IDField, "required", "")
			src.items++
			s.scanned++
			continue
		}
		src.lastID = id
		h := seenKey(s.salt, src.cfg.Name, id)
		if _, dup := s.seen[h]; dup {
			s.addStickyLocked(envelope.InconsistentSnapshot, src.cfg.Name, "duplicate_id")
			continue
		}
		s.seen[h] = struct{}{}
		fresh++
		src.items++
		s.scanned++
		s.normalizeLocked(doc)
		var broken []Violation
		brokenFilter := false
		if r.Contract != nil {
			vs, aliases := r.Contract.Check(doc, s.decision)
			for _, a := range aliases {
				s.aliases[a] = true
			}
			for _, v := range vs {
				switch {
				case v.Decision:
					broken = append(broken, v)
					brokenFilter = brokenFilter || s.filterFields[v.Field]
				case v.Rule == "enum":
					s.enumDrift[v.Field] = true
				default:
					s.fieldDrift[v.Field] = true
				}
			}
		}
		// A record whose filter fields are broken might be in scope; one
		// that clearly is not does not count either way.
		if !brokenFilter && !r.Matches(doc, s.spec.Filter) {
			rejected++
			continue
		}
		if len(broken) > 0 && !s.spec.KeepViolations {
			rejected++
			for _, v := range broken {
				rule := v.Rule
				if v.Invariant != "" {
					rule = "invariant: " + v.Invariant
				}
				s.violationLocked(v.Field, rule, id)
			}
			continue
		}
		s.matched++
		for _, g := range s.spec.GroupBy {
			v, _ := getPath(doc, r.FieldPath(g))
			k := groupKey{g, canonicalKey(v)}
			if _, seen := s.groupVals[k]; !seen {
				s.groupVals[k] = v
			}
			s.groups[k]++
		}
		if s.spec.Sink != nil {
			it := &Item{ID: id, Source: src.cfg.Name, Doc: doc, Violations: broken}
			if verPath != "" {
				it.Version, _ = itemID(doc, verPath)
			}
			if err := s.spec.Sink.Add(it); err != nil {
				return &ScanError{Problem: envelope.NewProblem(envelope.ProblemInternal, "airlock could not record the scanned items."), Err: err}
			}
		}
	}
	if len(pg.items) > 0 {
		if id, ok := itemID(pg.items[len(pg.items)-1], idPath); ok {
			src.lastID = id
		}
	}
	src.state = pg.next
	if s.spec.CountFromTotal && s.spec.Sink == nil && len(s.spec.GroupBy) == 0 && !st.Started && pg.total != nil &&
		rejected == 0 && fresh == len(pg.items) && !src.state.Done {
		// Every item of the first page matched: the upstream applies the
		// filter, and its total is declared exact. It counts the rest.
		s.matched += *pg.total - (s.matched - matchedBefore)
		src.fromTotal = true
		src.state.Done, src.state.Probe, src.state.End, src.state.EndSignal = true, false, envelope.EndProven, SignalDeclaredTotal
	}
	if st.Started && len(pg.items) > 0 && fresh == 0 && !src.state.Done {
		// A whole page of records already read: the upstream ignores the
		// page parameter or loops. Reading on proves nothing.
		src.state.Done, src.state.Probe, src.state.End, src.state.EndSignal = true, false, envelope.EndUnproven, SignalRepeatedPage
	}
	return nil
}

func (s *Scan) finishSource(src *sourceScan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src.status = srcDone
	st := src.state
	if st.TotalUntrusted && !s.stickySeen[envelope.InconsistentSnapshot+"/"+src.cfg.Name] {
		// (A total that changed during the scan is INCONSISTENT_SNAPSHOT.)
		s.contradictedLocked("total")
	}
	if st.End == envelope.EndUnproven || src.fromTotal {
		return // END_NOT_PROVEN, in Outcome; or counted from the total
	}
	if c := s.r.Config.ResultCap; c > 0 {
		switch {
		case src.items > c:
			// More than the declared cap came back: the declaration is
			// wrong, and the end proved by the dialect stands.
			s.contradictedLocked("result_cap")
		case src.items == c:
			src.capped = true
			return
		}
	}
	if t := st.Total; t != nil && !st.TotalUntrusted && src.items < *t && !s.stickySeen[envelope.InconsistentSnapshot+"/"+src.cfg.Name] {
		// The upstream stopped before its own total without any sign of a
		// change: it capped the result.
		src.capped, src.shortOf = true, *t
	}
}

// contradictedLocked warns once per declaration that the upstream
// contradicted it.
func (s *Scan) contradictedLocked(field string) {
	key := envelope.WarnDeclarationContradicted + "/" + field
	if s.warnSeen[key] {
		return
	}
	s.warnSeen[key] = true
	w := envelope.NewWarning(envelope.WarnDeclarationContradicted, s.r.Name)
	w.Fields = []string{field}
	s.warnings = append(s.warnings, w)
}

func (s *Scan) readSignalsLocked(src *sourceScan, pg page) {
	r := s.r
	if v := r.Config.Visibility; v != nil {
		var got string
		if v.Header != "" {
			got = pg.header.Get(v.Header)
		} else if x, ok := getPath(pg.doc, v.Field); ok {
			got = scalarString(x)
		}
		for _, rv := range v.RestrictedValues {
			if got != "" && strings.EqualFold(got, rv) {
				s.addStickyLocked(envelope.VisibilityRestricted, src.cfg.Name, "")
			}
		}
	}
	if inc := r.Config.Incomplete; inc != nil {
		for _, f := range inc.Flags {
			if x, ok := getPath(pg.doc, f); ok && x == true {
				s.addStickyLocked(envelope.UpstreamReportedIncomplete, src.cfg.Name, lastSegment(f))
			}
		}
		if inc.TotalRelation != "" {
			if x, ok := getPath(pg.doc, inc.TotalRelation); ok && scalarString(x) == "gte" {
				s.addStickyLocked(envelope.UpstreamReportedIncomplete, src.cfg.Name, "total_gte")
			}
		}
	}
	if f := r.Config.Freshness; f != nil {
		var ts string
		if f.Header != "" {
			ts = pg.header.Get(f.Header)
		} else if x, ok := getPath(pg.doc, f.Field); ok {
			ts = scalarString(x)
		}
		if t, err := time.Parse(time.RFC3339, ts); err == nil && r.Upstream.clock.Now().Sub(t) > f.MaxAge {
			if !s.warnSeen[envelope.WarnStaleIndex] {
				s.warnSeen[envelope.WarnStaleIndex] = true
				w := envelope.NewWarning(envelope.WarnStaleIndex, src.cfg.Name)
				w.Revision = t.UTC().Format(time.RFC3339)
				s.warnings = append(s.warnings, w)
			}
		}
	}
}

func lastSegment(p string) string {
	if i := strings.LastIndex(p, "."); i >= 0 {
		return p[i+1:]
	}
	return p
}

func (s *Scan) addStickyLocked(code, source, signal string) {
	key := code + "/" + source
	if s.stickySeen[key] {
		return
	}
	s.stickySeen[key] = true
	rs := envelope.NewReason(code)
	rs.Source, rs.Signal = source, signal
	s.sticky = append(s.sticky, rs)
}

func (s *Scan) violationLocked(field, rule, sample string) {
	k := field + "/" + rule
	v := s.violations[k]
	if v == nil {
		v = &violation{field: field, rule: rule, sample: sample}
		s.violations[k] = v
	}
	v.count++
}

func (s *Scan) normalizeLocked(doc map[string]any) {
	for _, n := range s.r.norms {
		if n.apply(doc) {
			s.normalized[n.name] = true
		}
	}
}

func setPath(doc map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	cur := doc
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = v
}

// canonicalKey is a group's key: the JSON encoding of the value, so that
// null and "null" stay apart.
func canonicalKey(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Group is one value of a group_by field and its count.
type Group struct {
	Value any `json:"value"`
	Count int `json:"count"`
}

// Outcome is what a scan can claim after its last Run.
type Outcome struct {
	// Reasons are the scan's incomplete reasons (delivery reasons are the
	// caller's to add). ScanComplete is true when there are none.
	Reasons      []envelope.Reason
	Warnings     []envelope.Warning
	ScanComplete bool
	// Continuation is the scan's recovery route; Resumable says a later Run
	// can read more of the scope.
	Continuation      string
	Resumable         bool
	RetryAfterSeconds int
	Narrow            []string
	Pages             int
	ItemsScanned      int
	Matched           int
	Elapsed           time.Duration
	Sources           []envelope.SourceCoverage
	Snapshot          *string
	UpstreamEstimate  *int
	Groups            map[string][]Group
}

// Outcome summarizes the scan so far.
func (s *Scan) Outcome() Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := Outcome{Pages: s.pages, ItemsScanned: s.scanned, Matched: s.matched, Elapsed: s.elapsed, Groups: map[string][]Group{}}
	var restart, retry, cursor, narrow bool
	var cutPages, cutDeadline bool
	retryAfter := 0
	for _, src := range s.srcs {
		cov := envelope.SourceCoverage{Name: src.cfg.Name, Pages: src.pages, ItemsScanned: src.items}
		switch src.status {
		case srcOutOfScope:
			continue
		case srcDone:
			cov.Status = envelope.SourceComplete
			cov.End, cov.EndSignal = src.state.End, src.state.EndSignal
			if src.state.End == envelope.EndUnproven {
				cov.Status, cov.Reason = envelope.SourcePartial, envelope.EndNotProven
				rs := envelope.NewReason(envelope.EndNotProven)
				rs.Source, rs.Signal = src.cfg.Name, src.state.EndSignal
				o.Reasons = append(o.Reasons, rs)
				break
			}
			if src.capped {
				cov.Status, cov.Reason = envelope.SourcePartial, envelope.ResultLimitReached
				rs := envelope.NewReason(envelope.ResultLimitReached)
				limit := src.items
				if c := s.r.Config.ResultCap; c > 0 {
					limit = c
				}
				rs.Limit, rs.LimitSource, rs.Source = envelope.Ptr(limit), envelope.LimitUpstream, src.cfg.Name
				o.Reasons = append(o.Reasons, rs)
				narrow = true
			}
		case srcCutPages:
			cov.Status, cov.Reason = envelope.SourcePartial, envelope.ResultLimitReached
			cutPages, cursor = true, true
		case srcCutDeadline, srcPending:
			cov.Status, cov.Reason = envelope.SourcePartial, envelope.TimeBudgetExceeded
			if src.pages == 0 {
				cov.Status = envelope.SourceNotStarted
			}
			cutDeadline, cursor = true, true
		case srcUnavailable:
			cov.Status, cov.Reason = envelope.SourceDown, envelope.SourceUnavailable
			rs := envelope.NewReason(envelope.SourceUnavailable)
			rs.Source, rs.Signal = src.cfg.Name, src.signal
			wait := max(int(src.retryAfter/time.Second), 10)
			rs.RetryAfterSeconds = envelope.Ptr(wait)
			o.Reasons = append(o.Reasons, rs)
			retry, retryAfter = true, max(retryAfter, wait)
		case srcRateLimited:
			cov.Status, cov.Reason = envelope.SourcePartial, envelope.RateLimited
			rs := envelope.NewReason(envelope.RateLimited)
			rs.Source = src.cfg.Name
			wait := max(int((src.retryAfter+time.Second-1)/time.Second), 1)
			rs.RetryAfterSeconds = envelope.Ptr(wait)
			o.Reasons = append(o.Reasons, rs)
			retry, retryAfter = true, max(retryAfter, wait)
		case srcExpired:
			cov.Status, cov.Reason = envelope.SourcePartial, envelope.CursorExpired
			rs := envelope.NewReason(envelope.CursorExpired)
			rs.Source = src.cfg.Name
			o.Reasons = append(o.Reasons, rs)
			restart = true
		}
		o.Sources = append(o.Sources, cov)
	}
	if cutPages {
		rs := envelope.NewReason(envelope.ResultLimitReached)
		rs.Limit, rs.LimitSource = envelope.Ptr(s.budget.MaxPages), s.budget.PagesLimitSource
		o.Reasons = append(o.Reasons, rs)
	}
	if cutDeadline {
		o.Reasons = append(o.Reasons, envelope.NewReason(envelope.TimeBudgetExceeded))
	}
	for _, rs := range s.sticky {
		o.Reasons = append(o.Reasons, rs)
		switch rs.Code {
		case envelope.InconsistentSnapshot:
			restart = true
		case envelope.UpstreamReportedIncomplete:
			narrow = true
		}
	}
	for _, k := range sortedKeys(s.violations) {
		v := s.violations[k]
		rs := envelope.NewReason(envelope.ContractViolation)
		rs.Field, rs.Rule, rs.Count, rs.SampleID = v.field, v.rule, envelope.Ptr(v.count), v.sample
		o.Reasons = append(o.Reasons, rs)
	}
	o.ScanComplete = len(o.Reasons) == 0
	o.Resumable = cursor || retry
	switch {
	case restart:
		o.Continuation = envelope.ContinueRestart
		o.Resumable = false
	case retry:
		o.Continuation, o.RetryAfterSeconds = envelope.ContinueRetryAfter, retryAfter
	case cursor:
		o.Continuation = envelope.ContinueNextCursor
	case narrow:
		o.Continuation = envelope.ContinueNarrowQuery
		for _, name := range sortedKeys(s.r.Config.Filters) {
			o.Narrow = append(o.Narrow, "filter."+name)
		}
	default:
		o.Continuation = envelope.ContinueNone
	}
	o.Warnings = append(o.Warnings, s.warnings...)
	if len(s.normalized) > 0 {
		w := envelope.NewWarning(envelope.WarnValueNormalized, s.r.Name)
		w.Fields = sortedKeys(s.normalized)
		o.Warnings = append(o.Warnings, w)
	}
	if len(s.aliases) > 0 {
		w := envelope.NewWarning(envelope.WarnDeprecatedField, s.r.Name)
		w.Fields = sortedKeys(s.aliases)
		o.Warnings = append(o.Warnings, w)
	}
	o.Warnings = append(o.Warnings, WarningsFor(s.r.Name, s.enumDrift, s.fieldDrift)...)
	if s.pages > 1 && s.r.Consistency() != ConsistencySnapshot {
		o.Warnings = append(o.Warnings, envelope.NewWarning(envelope.WarnNoSnapshot, s.r.Name))
	}
	if s.snapshot != "" {
		o.Snapshot = envelope.Ptr(s.snapshot)
	}
	if !o.ScanComplete && s.estimate != nil {
		o.UpstreamEstimate = envelope.Ptr(*s.estimate)
	}
	for k, n := range s.groups {
		o.Groups[k.field] = append(o.Groups[k.field], Group{Value: s.groupVals[k], Count: n})
	}
	for _, g := range s.spec.GroupBy {
		gs := o.Groups[g]
		sort.Slice(gs, func(i, j int) bool {
			if gs[i].Count != gs[j].Count {
				return gs[i].Count > gs[j].Count
			}
			return canonicalKey(gs[i].Value) < canonicalKey(gs[j].Value)
		})
		if gs == nil {
			gs = []Group{}
		}
		o.Groups[g] = gs
	}
	return o
}
