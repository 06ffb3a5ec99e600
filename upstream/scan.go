package upstream

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream/contract"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// Item is one record read from the upstream.
type Item struct {
	ID      string
	Version string
	Source  string
	Doc     map[string]any
	// Violations are the item's broken decision-field contracts (only
	// with ScanSpec.KeepViolations; otherwise such items are withheld).
	Violations []contract.Violation
}

// Sink receives every matching item in scan order, one call at a time and
// never with the scan's lock held (Add may read the scan's Outcome). An
// error from Add stops the scan and is returned by Run.
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

// Budget bounds one Run. PagesLimitSource says who set MaxPages (caller or
// airlock), for RESULT_LIMIT_REACHED.
type Budget struct {
	MaxPages         int
	PagesLimitSource string
	Deadline         time.Duration
	// FirstPages stops every source after its first page: a run that reads
	// the upstream's claim (see Scan.Claim) and no more. A later Run
	// without it goes on from there.
	FirstPages bool
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
	fromTotal bool
	// first is the source's first page's total as a claim, or why it
	// cannot be one (see Scan.Claim); claimStop says a run with
	// Budget.FirstPages stopped the source there. Neither outlives the
	// process: a claim is given in the call that read it.
	first      firstTotal
	claimStop  bool
	cfg        config.SourceConfig
	base       *url.URL
	state      dialect.State
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
	// sinkMu serializes the sink's calls; the scan's lock is never held
	// while the sink runs.
	sinkMu sync.Mutex
	srcs   []*sourceScan

	pages, scanned, matched int
	groups                  map[groupKey]int
	groupVals               map[groupKey]any
	seen                    seenSet
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
	// nullFilters are the filters that ask for null, nullRest the
	// others; nullLike counts the undeclared null stand-ins seen on
	// records that only they kept out (NULL_LIKE_VALUES).
	nullFilters   []string
	nullRest      map[string]any
	nullLike      map[string]int
	nullLikeCount int
	// sent names the filters sent upstream in a form the configuration
	// declares; conflicts counts, per filter, the records the upstream
	// returned for it that airlock's own check rejects.
	sent      []string
	conflicts map[string]*conflict

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

// conflict is a filter the upstream and airlock disagree on: the value
// sent, the value a rejected record holds, and how many were rejected.
type conflict struct {
	sent, seen any
	sample     string
	count      int
}

// NewScan prepares a scan of the resource with the given spec.
func (r *Resource) NewScan(spec ScanSpec) *Scan {
	s := &Scan{
		r: r, spec: spec, groups: map[groupKey]int{}, groupVals: map[groupKey]any{},
		salt: newSalt(), stickySeen: map[string]bool{},
		warnSeen: map[string]bool{}, normalized: map[string]bool{}, violations: map[string]*violation{},
		decision: map[string]bool{}, filterFields: map[string]bool{}, aliases: map[string]bool{},
		enumDrift: map[string]bool{}, fieldDrift: map[string]bool{}, nullRest: map[string]any{}, nullLike: map[string]int{},
		conflicts: map[string]*conflict{},
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Filter)) {
		if r.FilterForm(name, r.Config.Filters[name], spec.Filter[name]).Sent {
			s.sent = append(s.sent, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Filter)) {
		if asksNull(spec.Filter[name]) {
			s.nullFilters = append(s.nullFilters, name)
		} else {
			s.nullRest[name] = spec.Filter[name]
		}
	}
	for name := range spec.Filter {
		f := r.Config.Filters[name].FieldOf(name)
		s.decision[f], s.filterFields[f] = true, true
	}
	for _, f := range spec.Decision {
		s.decision[f] = true
	}
	s.decision[r.Config.IDField] = true
	for _, src := range r.Sources {
		ss := &sourceScan{cfg: src, base: r.SourceBase(src)}
		if !inScope(src, spec.Filter) {
			ss.status = srcOutOfScope
		}
		s.srcs = append(s.srcs, ss)
		if ss.status != srcOutOfScope && !r.viewShows(spec.Filter) {
			s.addStickyLocked(envelope.VisibilityRestricted, src.Name, SignalDeclaredView)
		}
		if ss.status != srcOutOfScope && r.SearchScope(spec.Filter) != nil {
			s.addStickyLocked(envelope.SearchMatchesUnverified, src.Name, dialect.SignalSearch)
		}
	}
	return s
}

// SignalDeclaredView says a VISIBILITY_RESTRICTED comes from the
// configuration's declaration (visibility.restricted), not from the
// upstream's answer.
const SignalDeclaredView = "declared"

// viewShows reports whether the credential's declared view shows every
// record the filter asks for: no restriction is declared, or the filter
// keeps each field the view is limited on to values it shows.
func (r *Resource) viewShows(filter map[string]any) bool {
	v := r.Config.Visibility
	if v == nil || v.Restricted == "" {
		return true
	}
	if len(v.Only) == 0 {
		return false
	}
	for field, shown := range v.Only {
		fd, _ := r.Field(field)
		limited := false
		for name, want := range filter {
			if fc := r.Config.Filters[name]; fc.FieldOf(name) != field || (fc != nil && fc.Op != "" && fc.Op != "eq") {
				continue
			}
			wants, isList := want.([]any)
			if !isList {
				wants = []any{want}
			}
			within := true
			for _, w := range wants {
				in := false
				for _, sv := range shown {
					if config.ValueEqual(w, config.NormalizeValue(sv), fd) {
						in = true
					}
				}
				within = within && in
			}
			limited = limited || within
		}
		if !limited {
			return false
		}
	}
	return true
}

// asksNull reports whether a filter value asks for null (alone or among
// others).
func asksNull(v any) bool {
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			if e == nil {
				return true
			}
		}
		return false
	}
	return v == nil
}

// inScope reports whether a source can hold records matching the filter.
func inScope(src config.SourceConfig, filter map[string]any) bool {
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
	pages0, scanned0 := s.pages, s.scanned
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
	if s.r.OnRun != nil {
		s.r.OnRun(s.pages-pages0, s.scanned-scanned0)
	}
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
		if st.Started && s.stopForClaim(src) {
			return
		}
		if st.Probe {
			if !s.probe(ctx, src) {
				return
			}
			continue
		}
		if plans := s.r.Dialect.Plan(st); plans != nil {
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
			if s.pageRefused(ctx, src, st, err) {
				continue
			}
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
// flight and processes them strictly in page order. A page is requested
// as soon as any request in flight ends, so that a page that comes back
// late delays only itself, and is let go once processed. At most one page
// more than the concurrency is held at a time: the one being processed and
// those requested after it. It returns false when the source stopped.
func (s *Scan) runParallel(ctx context.Context, src *sourceScan, plans []dialect.State) bool {
	ctx, cancel := context.WithCancel(ctx)
	type result struct {
		pg   dialect.Page
		err  error
		done chan struct{}
	}
	conc := s.r.Pagination.Concurrency
	results := make([]*result, len(plans))
	var mu sync.Mutex
	// next is the next page to request; processed counts the pages
	// processed; stopped is set once the source stops reading the plan.
	next, processed, inFlight, stopped := 0, 0, 0, false
	var launchLocked func()
	launchLocked = func() {
		for !stopped && inFlight < conc && next < len(plans) && next <= processed+conc && ctx.Err() == nil {
			if s.takePages(1) == 0 {
				stopped = true
				return
			}
			r := &result{done: make(chan struct{})}
			results[next] = r
			st := plans[next]
			next++
			inFlight++
			go func() {
				defer close(r.done)
				// A request is in flight until its answer is read; the
				// next one is sent before this one is decoded.
				resp, err := s.send(ctx, src, &st)
				mu.Lock()
				inFlight--
				launchLocked()
				mu.Unlock()
				if err != nil {
					r.err = err
					return
				}
				r.pg, r.err = s.read(src, st, resp)
			}()
		}
	}
	defer func() {
		// Pages requested past a stop are abandoned.
		mu.Lock()
		stopped = true
		mu.Unlock()
		cancel()
	}()
	mu.Lock()
	launchLocked()
	mu.Unlock()
	for i := range plans {
		mu.Lock()
		r := results[i]
		mu.Unlock()
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
			if s.pageRefused(ctx, src, plans[i], r.err) {
				return true
			}
			s.fail(ctx, src, r.err)
			return false
		}
		if err := s.process(src, plans[i], r.pg); err != nil {
			s.fail(ctx, src, err)
			return false
		}
		s.reportProgress()
		if r.pg.Next.Done || r.pg.Next.Probe || (!r.pg.Next.LastFull && i < len(plans)-1) {
			// The end came earlier than planned, or a short page broke
			// the plan's arithmetic (the upstream capped the page size):
			// the rest is read one page at a time from where this page
			// ended.
			return true
		}
		mu.Lock()
		results[i] = nil
		processed = i + 1
		launchLocked()
		mu.Unlock()
	}
	return true
}

// stopForContext marks a source cut by the scan's context. A cancel reads
// as the deadline: it comes from a fatal error elsewhere, which the answer
// reports instead, or from a caller that went away and reads nothing.
func (s *Scan) stopForContext(_ context.Context, src *sourceScan) {
	s.setStatus(src, srcCutDeadline)
}
