package selection

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/contract"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
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
	Exclude      []config.RuleConfig
	IDs          []string
	Budget       upstream.Budget
	RequestID    string
	Environment  string
	RequestedBy  string
	Principal    Principal
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
		Principal: req.Principal.Recorded(),
	}
	if sel.Selector.Exclude == nil {
		sel.Selector.Exclude = []config.RuleConfig{}
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
		acount: map[string]map[string]*upstream.Group{}, batch: make([]Record, 0, recordBatch), stream: stream, filterKeys: slices.Sorted(maps.Keys(req.Filter)),
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
	if a.Config.Conditional == config.CondReread {
		// A re-read before the write is a check, not a condition: the
		// person approving is told of the window it leaves.
		sum.Warnings = append(sum.Warnings, envelope.NewWarning(envelope.WarnNotConditional, a.Name))
	}
	sum.Snapshot = out.Snapshot
	sum.Consistency = out.Consistency
	if sum.Consistency == "" {
		// Named ids are read one by one, each on its own.
		sum.Consistency = r.Consistency()
	}
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
		if err := read.CheckPathID(id); err != nil {
			// Never read or written: the id cannot address one record.
			if err := c.add(Record{ID: id, Disposition: Ambiguous, Note: err.Error()}); err != nil {
				return out, err
			}
			continue
		}
		doc, version, found, err := read.Item(ctx, r, id, req.RequestID)
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
		var broken []contract.Violation
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
	return &upstream.ScanError{Problem: transport.ProblemFor(err, nil), Err: err}
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
		e := Effect{Field: f, After: after[f], Before: bs, Op: config.EffectSet}
		for _, ec := range a.Config.Effect {
			if ec.Field == f && ec.Op != "" {
				e.Op = ec.Op
			}
		}
		if vals, ok := perTarget[f]; ok {
			key := "restored_per_target"
			if e.Op != config.EffectSet {
				// The whole list each target will hold: its before list
				// with the element added or removed.
				key, e.Value = "per_target", after[f]
			}
			e.After = map[string]any{key: groupList(map[string]map[string]*upstream.Group{f: vals})[f]}
		}
		out = append(out, e)
	}
	return out
}

func exclusionList(rules []config.RuleConfig, counts map[int]int) []ExclusionCount {
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
		b := envelope.NewBlocker(BlockAmbiguous)
		b.Count = envelope.Ptr(sum.Ambiguous)
		bs = append(bs, b)
	}
	if sum.Members > a.Config.MaxTargets {
		b := envelope.NewBlocker(BlockMaxTargets)
		b.Limit, b.LimitSource, b.Count = envelope.Ptr(a.Config.MaxTargets), envelope.LimitAirlock, envelope.Ptr(sum.Members)
		bs = append(bs, b)
	}
	if bs == nil {
		bs = []Blocker{}
	}
	return bs
}
