package selection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
)

// Blocker codes: why a reviewable selection cannot be committed, besides
// the scan's own incomplete reasons.
const (
	BlockAmbiguous  = envelope.BlockerAmbiguous
	BlockMaxTargets = envelope.BlockerMaxTargets
)

// maxGroupValues bounds the distinct values kept per review dimension.
const maxGroupValues = 200

// PreviewRequest is what preview_selection asks for, validated.
type PreviewRequest struct {
	Resource     *upstream.Resource
	Action       *upstream.Action
	Params       map[string]any
	Filter       map[string]any
	Exclude      []upstream.RuleConfig
	IDs          []string
	Budget       upstream.Budget
	RequestID    string
	Environment  string
	RequestedBy  string
	Compensates  string
	Irreversible []string
	// Restore and Expect, for a compensation: per target, the values the
	// fields go back to, and the values they must still hold (the
	// compensated write's after-values) for the restore to be safe.
	Restore map[string]map[string]any
	Expect  map[string]map[string]any
	// Progress, when set, is called after every page of the scan (see
	// upstream.ScanSpec.Progress).
	Progress func(upstream.ScanProgress)
}

// Previewer builds frozen selections.
type Previewer struct {
	Store  Store
	Clock  upstream.Clock
	Logger *slog.Logger
}

// PreviewResult is a finished selection with the scan's outcome.
type PreviewResult struct {
	Selection *Selection
	Outcome   upstream.Outcome
}

// recordBatch is how many records go to the store at once.
const recordBatch = 1000

// classifier turns scanned items into records and streams them to the
// store in batches, counting as it goes.
type classifier struct {
	store   Store
	sel     *Selection
	req     PreviewRequest
	review  []string
	groups  []string
	effect  []string
	mu      sync.Mutex
	batch   []Record
	sum     Summary
	excl    map[int]int
	gcount  map[string]map[string]*upstream.Group
	bcount  map[string]map[string]*upstream.Group
	acount  map[string]map[string]*upstream.Group
	samples []Record
	w       *recordWriter
	// q classifies a scope scan's items on a goroutine of its own (nil for
	// named ids, classified as they are read).
	q *itemQueue
	// filterKeys are the filter's names, sorted.
	filterKeys []string
	// key is a buffer for group keys.
	key []byte
	// stream digests the records as they are classified, while they
	// arrive in strictly ascending id order with values that read back
	// from the store unchanged (see streamable); nil once they do not,
	// and the digest is then computed from the store.
	stream *Digester
}

func (c *classifier) Add(it *upstream.Item) error {
	if c.q != nil {
		return c.q.add(it)
	}
	rec := c.classify(it.ID, it.Version, it.Source, it.Doc, it.Violations)
	return c.add(rec)
}

// itemBatch is how many scanned items go to the classifying goroutine at
// once.
const itemBatch = 250

// itemQueue classifies a scan's items on a goroutine of its own: the scan
// hands them over (Sink.Add, called with the scan's lock held) and goes on
// to read the next page while they are classified, counted, digested and
// queued for the store, in the order they were handed over. The scan does
// not touch an item once it has handed it over.
type itemQueue struct {
	c    *classifier
	done chan struct{}
	stop atomic.Bool

	mu      sync.Mutex // pending, queue sends, closed
	pending []*upstream.Item
	queue   chan []*upstream.Item
	closed  bool

	emu sync.Mutex
	err error
}

func newItemQueue(c *classifier) *itemQueue {
	q := &itemQueue{c: c, done: make(chan struct{}), queue: make(chan []*upstream.Item, 8), pending: make([]*upstream.Item, 0, itemBatch)}
	go q.run()
	return q
}

func (q *itemQueue) run() {
	defer close(q.done)
	for batch := range q.queue {
		// After a failure or an abort the rest is drained, never
		// classified.
		if q.stop.Load() || q.firstErr() != nil {
			continue
		}
		for _, it := range batch {
			if err := q.c.add(q.c.classify(it.ID, it.Version, it.Source, it.Doc, it.Violations)); err != nil {
				q.emu.Lock()
				q.err = err
				q.emu.Unlock()
				break
			}
		}
	}
}

func (q *itemQueue) firstErr() error {
	q.emu.Lock()
	defer q.emu.Unlock()
	return q.err
}

// add hands an item over. It returns the first error classifying or
// storing met so far: the scan stops, as it did when the sink failed.
func (q *itemQueue) add(it *upstream.Item) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errors.New("preview: item handed over after the scan ended")
	}
	q.pending = append(q.pending, it)
	if len(q.pending) < itemBatch {
		return nil
	}
	if err := q.firstErr(); err != nil {
		return err
	}
	if err := q.c.w.err(); err != nil {
		return err
	}
	q.queue <- q.pending
	q.pending = make([]*upstream.Item, 0, itemBatch)
	return nil
}

// finish classifies the items still pending, waits until every item is
// classified and returns the first error.
func (q *itemQueue) finish() error {
	q.mu.Lock()
	if !q.closed && len(q.pending) > 0 {
		q.queue <- q.pending
		q.pending = nil
	}
	q.mu.Unlock()
	q.close()
	return q.firstErr()
}

// abort drops what is left and waits for the goroutine to end.
func (q *itemQueue) abort() {
	q.stop.Store(true)
	q.close()
}

func (q *itemQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.queue)
	}
	q.mu.Unlock()
	<-q.done
}

func (c *classifier) add(rec Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sum.Scanned++
	switch rec.Disposition {
	case Member:
		c.sum.Members++
		for _, g := range c.groups {
			c.bump(c.gcount, g, rec.Groups[g])
		}
		for _, f := range c.effect {
			c.bump(c.bcount, f, rec.Before[f])
		}
		if rec.Restore != nil {
			if after, err := c.req.Action.AfterFor(c.req.Params, rec.Restore); err == nil {
				for _, f := range c.effect {
					c.bump(c.acount, f, after[f])
				}
			}
		}
	case Excluded:
		c.sum.Excluded++
		c.excl[rec.Rule]++
	case Ambiguous:
		c.sum.Ambiguous++
		if len(c.samples) < 20 {
			c.samples = append(c.samples, rec)
		}
	}
	// Add refuses a record out of id order.
	if c.stream != nil && (!streamable(&rec) || c.stream.Add(rec) != nil) {
		c.stream = nil
	}
	c.batch = append(c.batch, rec)
	if len(c.batch) >= recordBatch {
		if err := c.w.err(); err != nil {
			return err
		}
		c.w.put(c.batch)
		c.batch = make([]Record, 0, recordBatch)
	}
	return nil
}

// recordWriter writes batches of records to the store from its own
// goroutine, so that the scan (which calls the classifier with its lock
// held) does not wait for the store. It holds at most two batches besides
// the one being written; put blocks beyond that.
type recordWriter struct {
	store  Store
	selID  string
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan []Record
	done   chan struct{}
	closed bool
	puts   int // batches handed over

	mu        sync.Mutex
	firstErr  error
	failedPut int // the batch that failed, counting from 1
}

func newRecordWriter(ctx context.Context, store Store, selID string) *recordWriter {
	ctx, cancel := context.WithCancel(ctx)
	w := &recordWriter{store: store, selID: selID, ctx: ctx, cancel: cancel, queue: make(chan []Record, 2), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *recordWriter) run() {
	defer close(w.done)
	n := 0
	for batch := range w.queue {
		n++
		// After a failure the rest is drained, never written: the
		// selection fails.
		if w.err() != nil {
			continue
		}
		if err := w.store.PutRecords(w.ctx, w.selID, batch); err != nil {
			w.mu.Lock()
			w.firstErr, w.failedPut = err, n
			w.mu.Unlock()
		}
	}
}

// err is the first write error so far.
func (w *recordWriter) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr
}

// put hands a batch to the writer; the writer owns it from then on.
func (w *recordWriter) put(batch []Record) {
	w.puts++
	w.queue <- batch
}

// finish writes the last batch, waits for every batch handed over and
// returns the first write error, and whether it was one of the batches
// handed over before the last (while the records were being read).
func (w *recordWriter) finish(last []Record) (duringScan bool, err error) {
	handed := w.puts
	if len(last) > 0 {
		w.put(last)
	}
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr != nil && w.failedPut <= handed, w.firstErr
}

// abort stops writing and waits for the goroutine to end: the selection
// failed, its records do not matter.
func (w *recordWriter) abort() {
	w.cancel()
	w.close()
}

func (w *recordWriter) close() {
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	<-w.done
	w.cancel()
}

// streamable reports whether a record's values read back from the store
// exactly as they are (stored as JSON, read with numbers as json.Number), so
// that digesting it now gives the bytes a digest over the stored records
// would. Values decoded from JSON always do; a float64 (encoded in another
// number form) or a string that is not valid UTF-8 (replaced byte by byte
// when stored, by runs when digested) does not.
func streamable(r *Record) bool {
	return utf8.ValidString(r.ID) && utf8.ValidString(r.Disposition) && utf8.ValidString(r.Note) && utf8.ValidString(r.Version) &&
		roundTrips(r.Review) && roundTrips(r.Before) && roundTrips(r.Restore)
}

func roundTrips(v any) bool {
	switch x := v.(type) {
	case nil, bool, json.Number, int, int64:
		return true
	case string:
		return utf8.ValidString(x)
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !roundTrips(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !roundTrips(e) {
				return false
			}
		}
		return true
	case []string:
		for _, e := range x {
			if !utf8.ValidString(e) {
				return false
			}
		}
		return true
	}
	return false
}

// bump counts a value of a dimension. The value's key is its canonical
// encoding, built in a buffer the classifier reuses (a string is made only
// for a new value).
func (c *classifier) bump(m map[string]map[string]*upstream.Group, dim string, v any) {
	vals := m[dim]
	if vals == nil {
		vals = map[string]*upstream.Group{}
		m[dim] = vals
	}
	key, err := AppendCanonical(c.key[:0], v)
	if err != nil {
		key = mustCanonical(v)
	} else {
		c.key = key
	}
	g := vals[string(key)]
	if g == nil {
		k := string(key)
		if len(vals) >= maxGroupValues {
			k = "\x00other"
			if g = vals[k]; g == nil {
				g = &upstream.Group{Value: map[string]any{"other_values": true}}
				vals[k] = g
			}
		} else {
			g = &upstream.Group{Value: v}
			vals[k] = g
		}
	}
	g.Count++
}

func mustCanonical(v any) []byte {
	b, err := Canonical(v)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprint(v))
	}
	return b
}

// classify decides a record's disposition. An explicit exclusion that
// matches wins (an operator may exclude a broken record by id); then a
// broken decision-field contract or a missing decision field makes the
// record ambiguous, never silently in or out; then the precondition.
func (c *classifier) classify(id, version, source string, doc map[string]any, broken []upstream.Violation) Record {
	r := c.req.Resource
	rec := Record{ID: id, Version: version, Source: source, Rule: 0}
	rec.Review, _ = r.Project(doc, c.review)
	rec.Groups = make(map[string]any, len(c.groups))
	for _, g := range c.groups {
		v, _ := upstream.GetPath(doc, r.FieldPath(g))
		rec.Groups[g] = v
	}
	before, missing := r.Project(doc, c.effect)
	rec.Before = before
	unreadable := -1
	for i, rule := range c.req.Exclude {
		match, ok := r.EvalRule(doc, rule)
		if ok && match {
			rec.Disposition, rec.Rule = Excluded, i
			return rec
		}
		if !ok && unreadable < 0 {
			unreadable = i
		}
	}
	if len(broken) > 0 {
		rec.Disposition, rec.Note = Ambiguous, broken[0].Describe()
		return rec
	}
	for _, f := range c.filterKeys {
		if _, ok := upstream.GetPath(doc, r.FieldPath(filterField(r, f))); !ok {
			rec.Disposition, rec.Note = Ambiguous, fmt.Sprintf("filter field %s is missing", filterField(r, f))
			return rec
		}
	}
	if unreadable >= 0 {
		rec.Disposition, rec.Note = Ambiguous, fmt.Sprintf("field %s is missing or unreadable for exclusion rule %d", c.req.Exclude[unreadable].Field, unreadable)
		return rec
	}
	for _, rule := range c.req.Action.Config.Precondition {
		match, ok := r.EvalRule(doc, rule)
		if !ok {
			rec.Disposition, rec.Note = Ambiguous, fmt.Sprintf("field %s is missing or unreadable for the precondition", rule.Field)
			return rec
		}
		if !match {
			rec.Disposition, rec.Rule = Excluded, RulePrecondition
			return rec
		}
	}
	if len(missing) > 0 {
		rec.Disposition, rec.Note = Ambiguous, fmt.Sprintf("field %s that the action changes is missing", missing[0])
		return rec
	}
	if note := writable(c.req.Action, id, version); note != "" {
		rec.Disposition, rec.Note = Ambiguous, note
		return rec
	}
	rec.Disposition = Member
	return rec
}

// writable says why the action's write cannot be expressed for a target
// ("" when it can): an id that is not a URL path segment, or a conditional
// write without the version its condition needs. Such a target is never
// sent unconditionally: it is ambiguous until excluded or the
// configuration fixed.
func writable(a *upstream.Action, id, version string) string {
	if a.Config.Request != nil {
		if err := upstream.CheckPathID(id); err != nil {
			return err.Error()
		}
	}
	switch c := a.Config.Conditional; {
	case (c == upstream.CondIfMatch || c == upstream.CondVersion) && version == "":
		return fmt.Sprintf("no version (%s): the conditional write (%s) cannot be expressed", a.Resource.Config.VersionField, c)
	}
	return ""
}

// decisionFields are the fields this preview's decision rests on besides
// the resource's own: exclusions, the precondition and the effect.
func decisionFields(req PreviewRequest) []string {
	var out []string
	for _, r := range req.Exclude {
		out = append(out, r.Field)
	}
	for _, r := range req.Action.Config.Precondition {
		out = append(out, r.Field)
	}
	return append(out, req.Action.EffectFields()...)
}

// stillHolds reports whether every field holds the expected value.
func stillHolds(r *upstream.Resource, doc map[string]any, want map[string]any) bool {
	for f, v := range want {
		got, ok := upstream.GetPath(doc, r.FieldPath(f))
		if !ok || string(mustCanonical(got)) != string(mustCanonical(v)) {
			return false
		}
	}
	return true
}

func fieldSet(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

func filterField(r *upstream.Resource, name string) string {
	if fc := r.Config.Filters[name]; fc != nil && fc.Field != "" {
		return fc.Field
	}
	return name
}

// Preview scans the scope (or reads the named ids), classifies every
// record, streams the records into the store, and freezes the selection
// with its digest.
func (p *Previewer) Preview(ctx context.Context, req PreviewRequest) (*PreviewResult, error) {
	r, a := req.Resource, req.Action
	now := p.Clock.Now()
	act := Action{Type: a.Name, Params: req.Params}
	actionDigest, err := ActionDigest(act)
	if err != nil {
		return nil, err
	}
	kind := KindScope
	if req.IDs != nil {
		kind = KindExplicit
	}
	ttl := r.SelectionTTL()
	if a.Config.ExpiresAfter > 0 {
		ttl = a.Config.ExpiresAfter
	}
	sel := &Selection{
		ID: "sel_" + uuid.NewString(), Resource: r.Name, Environment: req.Environment, Upstream: r.Host(), Kind: kind,
		Selector: Selector{Filter: nonNil(req.Filter), Exclude: req.Exclude, IDs: req.IDs},
		Action:   act, ActionDigest: actionDigest, ActionSpecDigest: a.SpecDigest, State: StateBuilding,
		CreatedAt: now, ExpiresAt: now.Add(ttl), RequestedBy: req.RequestedBy, Compensates: req.Compensates,
	}
	if sel.Selector.Exclude == nil {
		sel.Selector.Exclude = []upstream.RuleConfig{}
	}
	if err := p.Store.CreateSelection(ctx, sel); err != nil {
		return nil, err
	}
	// The digest's header is known before the scan: the records can be
	// digested as they arrive.
	stream, err := NewDigester(sel)
	if err != nil {
		p.fail(sel)
		return nil, err
	}
	c := &classifier{store: p.Store, sel: sel, req: req, review: r.ReviewFields(), groups: reviewGroups(r),
		effect: a.EffectFields(), excl: map[int]int{}, gcount: map[string]map[string]*upstream.Group{}, bcount: map[string]map[string]*upstream.Group{},
		acount: map[string]map[string]*upstream.Group{}, batch: make([]Record, 0, recordBatch), stream: stream, filterKeys: sortedKeys(req.Filter),
		w: newRecordWriter(ctx, p.Store, sel.ID)}
	// Whatever happens, no goroutine of the preview outlives it.
	defer func() {
		if c.q != nil {
			c.q.abort()
		}
		c.w.abort()
	}()

	var out upstream.Outcome
	if kind == KindScope {
		c.q = newItemQueue(c)
		scan := r.NewScan(upstream.ScanSpec{Filter: req.Filter, RequestID: req.RequestID, Sink: c,
			Decision: decisionFields(req), KeepViolations: true, Progress: req.Progress})
		if err := scan.Run(ctx, req.Budget); err != nil {
			c.q.abort()
			c.w.abort()
			p.fail(sel)
			return nil, err
		}
		out = scan.Outcome()
		if err := c.q.finish(); err != nil {
			// The sink failed: as when it failed during the scan.
			c.w.abort()
			p.fail(sel)
			return nil, recordError(err)
		}
	} else {
		out, err = p.readExplicit(ctx, req, c)
		if err != nil {
			c.w.abort()
			p.fail(sel)
			return nil, err
		}
	}
	c.mu.Lock()
	last := c.batch
	c.batch = nil
	c.mu.Unlock()
	if duringScan, err := c.w.finish(last); err != nil {
		p.fail(sel)
		if duringScan && kind == KindScope {
			// As when the scan's sink fails: the batch was written while
			// the scan ran.
			return nil, recordError(err)
		}
		return nil, err
	}

	sum := c.sum
	sum.Groups = groupList(c.gcount)
	sum.Effect = p.effects(a, req.Params, c.bcount, c.acount)
	sum.Exclusions = exclusionList(req.Exclude, c.excl)
	sum.ScanReasons = out.Reasons
	sum.Warnings = out.Warnings
	sum.Snapshot = out.Snapshot
	sum.Consistency = r.Consistency()
	sum.Irreversible = append(append([]string(nil), a.Config.Irreversible...), req.Irreversible...)
	sum.Coverage = &envelope.Coverage{Pages: out.Pages, ItemsScanned: out.ItemsScanned, TotalMatched: out.Matched,
		TotalRelation: envelope.RelationEq, ElapsedMS: out.Elapsed.Milliseconds(), Sources: out.Sources}
	if !out.ScanComplete {
		sum.Coverage.TotalRelation = envelope.RelationGte
	}
	if sum.Coverage.Sources == nil {
		sum.Coverage.Sources = []envelope.SourceCoverage{}
	}
	sel.Summary = sum
	sel.Blockers = blockers(out, sum, a)
	sel.Committable = len(sel.Blockers) == 0

	// Records that came in id order were digested as they came; others
	// are digested from the store, where they are in id order.
	d := c.stream
	if d == nil {
		if d, err = NewDigester(sel); err != nil {
			p.fail(sel)
			return nil, err
		}
		if err := p.Store.EachRecord(ctx, sel.ID, d.Add); err != nil {
			p.fail(sel)
			return nil, err
		}
	}
	if sel.Digest, err = d.Sum(); err != nil {
		p.fail(sel)
		return nil, err
	}
	sel.State = StateReady
	fin := p.Clock.Now()
	sel.FinishedAt = &fin
	sel.ExpiresAt = fin.Add(ttl)
	if err := p.Store.FinishSelection(ctx, sel); err != nil {
		return nil, err
	}
	return &PreviewResult{Selection: sel, Outcome: out}, nil
}

func (p *Previewer) fail(sel *Selection) {
	sel.State = StateFailed
	// Best effort: a failed selection is never committable either way.
	if err := p.Store.FinishSelection(context.WithoutCancel(context.Background()), sel); err != nil && p.Logger != nil {
		p.Logger.Warn("could not mark selection failed", "selection_id", sel.ID, "err", err)
	}
}

func reviewGroups(r *upstream.Resource) []string {
	if len(r.Config.ReviewGroups) > 0 {
		return r.Config.ReviewGroups
	}
	var out []string
	for _, f := range r.ReviewFields() {
		if fc, ok := r.Field(f); ok && len(fc.Enum) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// readExplicit reads each named id through the resource's get endpoint.
func (p *Previewer) readExplicit(ctx context.Context, req PreviewRequest, c *classifier) (upstream.Outcome, error) {
	r := req.Resource
	ids := append([]string(nil), req.IDs...)
	sort.Strings(ids)
	var out upstream.Outcome
	start := time.Now()
	for i, id := range ids {
		if i > 0 && id == ids[i-1] {
			continue
		}
		if err := upstream.CheckPathID(id); err != nil {
			// Never read or written: the id cannot address one record.
			if err := c.add(Record{ID: id, Disposition: Ambiguous, Note: err.Error()}); err != nil {
				return out, err
			}
			continue
		}
		doc, version, found, err := r.Read(ctx, id, req.RequestID)
		if err != nil {
			return out, readError(err)
		}
		out.Pages++
		if !found {
			if err := c.add(Record{ID: id, Disposition: Excluded, Rule: RuleNotFound, Note: "not found"}); err != nil {
				return out, err
			}
			continue
		}
		out.ItemsScanned++
		if !r.Matches(doc, req.Filter) {
			if err := c.add(Record{ID: id, Disposition: Excluded, Rule: RuleFilter, Version: version}); err != nil {
				return out, err
			}
			continue
		}
		if want := req.Expect[id]; want != nil && !stillHolds(r, doc, want) {
			if err := c.add(Record{ID: id, Disposition: Excluded, Rule: RuleChanged, Version: version,
				Note: "changed since the operation: restoring it would overwrite a later change"}); err != nil {
				return out, err
			}
			continue
		}
		out.Matched++
		var broken []upstream.Violation
		if r.Contract != nil {
			vs, _ := r.Contract.Check(doc, fieldSet(decisionFields(req)))
			for _, v := range vs {
				if v.Decision {
					broken = append(broken, v)
				}
			}
		}
		rec := c.classify(id, version, r.Name, doc, broken)
		rec.Restore = req.Restore[id]
		if err := c.add(rec); err != nil {
			return out, err
		}
	}
	out.Elapsed = time.Since(start)
	out.ScanComplete = true
	out.Continuation = envelope.ContinueNone
	out.Sources = []envelope.SourceCoverage{{Name: r.Name, Status: envelope.SourceComplete, Pages: out.Pages, ItemsScanned: out.ItemsScanned}}
	return out, nil
}

// recordError is the error a scan ends with when its sink fails.
func recordError(err error) error {
	return &upstream.ScanError{Problem: envelope.NewProblem(envelope.ProblemInternal, "airlock could not record the scanned items."), Err: err}
}

// readError maps a failed single-item read to a scan error.
func readError(err error) error {
	return &upstream.ScanError{Problem: upstream.ProblemFor(err, nil), Err: err}
}

func groupList(m map[string]map[string]*upstream.Group) map[string][]upstream.Group {
	out := map[string][]upstream.Group{}
	for dim, vals := range m {
		var gs []upstream.Group
		for _, g := range vals {
			gs = append(gs, *g)
		}
		sort.Slice(gs, func(i, j int) bool {
			if gs[i].Count != gs[j].Count {
				return gs[i].Count > gs[j].Count
			}
			return string(mustCanonical(gs[i].Value)) < string(mustCanonical(gs[j].Value))
		})
		out[dim] = gs
	}
	return out
}

// effects summarizes each changed field: the distribution of before-values
// and the after-value (one value, or per target for a compensation, where
// After lists the distribution of restored values).
func (p *Previewer) effects(a *upstream.Action, params map[string]any, before, perTarget map[string]map[string]*upstream.Group) []Effect {
	after, _ := a.After(params)
	var out []Effect
	for _, f := range a.EffectFields() {
		bs := groupList(map[string]map[string]*upstream.Group{f: before[f]})[f]
		if bs == nil {
			bs = []upstream.Group{}
		}
		e := Effect{Field: f, After: after[f], Before: bs}
		if vals, ok := perTarget[f]; ok {
			e.After = map[string]any{"restored_per_target": groupList(map[string]map[string]*upstream.Group{f: vals})[f]}
		}
		out = append(out, e)
	}
	return out
}

func exclusionList(rules []upstream.RuleConfig, counts map[int]int) []ExclusionCount {
	var out []ExclusionCount
	for i, r := range rules {
		out = append(out, ExclusionCount{Rule: i, Field: r.Field, Op: r.Op, Value: r.Value, Reason: r.Reason, Count: counts[i]})
	}
	for _, special := range []struct {
		rule   int
		reason string
	}{
		{RulePrecondition, "fails the action's precondition"},
		{RuleFilter, "does not match the filter"},
		{RuleNotFound, "named id not found"},
		{RuleChanged, "changed since the operation: a restore would overwrite a later change"},
	} {
		if n := counts[special.rule]; n > 0 {
			out = append(out, ExclusionCount{Rule: special.rule, Reason: special.reason, Count: n})
		}
	}
	if out == nil {
		out = []ExclusionCount{}
	}
	return out
}

func blockers(out upstream.Outcome, sum Summary, a *upstream.Action) []Blocker {
	var bs []Blocker
	bs = append(bs, out.Reasons...)
	if sum.Ambiguous > 0 {
		b := envelope.Reason{Code: BlockAmbiguous, Message: mustMessage(BlockAmbiguous), Count: envelope.Ptr(sum.Ambiguous)}
		bs = append(bs, b)
	}
	if sum.Members > a.Config.MaxTargets {
		b := envelope.Reason{Code: BlockMaxTargets, Message: mustMessage(BlockMaxTargets), Limit: envelope.Ptr(a.Config.MaxTargets), LimitSource: envelope.LimitAirlock, Count: envelope.Ptr(sum.Members)}
		bs = append(bs, b)
	}
	if bs == nil {
		bs = []Blocker{}
	}
	return bs
}

func mustMessage(code string) string {
	c, ok := envelope.Lookup(code)
	if !ok {
		panic("selection: unregistered code " + code)
	}
	return c.Message
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
