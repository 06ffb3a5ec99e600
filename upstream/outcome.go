package upstream

import (
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream/contract"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

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
	// Consistency is what the scan can claim of its pages' consistency:
	// the dialect's, or none when the snapshot it declares was missing.
	Consistency      string
	UpstreamEstimate *int
	Groups           map[string][]Group
}

// Outcome summarizes the scan so far.
func (s *Scan) Outcome() Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := Outcome{Pages: s.pages, ItemsScanned: s.scanned, Matched: s.matched, Elapsed: s.elapsed, Groups: map[string][]Group{}}
	var restart, retry, cursor, narrow bool
	var cutPages, cutDeadline bool
	retryAfter := 0
	// A run that stopped after the first pages to read the upstream's
	// claim: what is unverified is the claim, not a budget's cut.
	claim := s.claimCutLocked()
	for _, src := range s.srcs {
		cov := envelope.SourceCoverage{Name: src.cfg.Name, Pages: src.pages, ItemsScanned: src.items}
		switch src.status {
		case srcOutOfScope:
			continue
		case srcDone:
			cov.Status = envelope.SourceComplete
			cov.End, cov.EndSignal = src.state.End, src.state.EndSignal
			if src.state.End == envelope.EndUnproven && src.state.EndSignal == dialect.SignalUnreadable {
				// The page's SIGNAL_UNREADABLE (a sticky reason) names the
				// member and the page.
				cov.Status, cov.Reason = envelope.SourcePartial, envelope.SignalUnreadable
				break
			}
			if src.state.End == envelope.EndUnproven {
				code := envelope.EndNotProven
				if dialect.IsConflict(src.state.EndSignal) {
					// Two signals on a page contradict each other about
					// the end.
					code = envelope.ConflictingEvidence
				}
				cov.Status, cov.Reason = envelope.SourcePartial, code
				rs := envelope.NewReason(code)
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
			if claim {
				cov.Reason = envelope.UpstreamClaimUnverified
			}
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
	switch {
	case cutPages && claim:
		rs := envelope.NewReason(envelope.UpstreamClaimUnverified)
		rs.Member = s.r.TotalMember()
		o.Reasons = append(o.Reasons, rs)
	case cutPages:
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
	for _, k := range slices.Sorted(maps.Keys(s.violations)) {
		v := s.violations[k]
		rs := envelope.NewReason(envelope.ContractViolation)
		rs.Field, rs.Rule, rs.Count, rs.SampleID = v.field, v.rule, envelope.Ptr(v.count), v.sample
		o.Reasons = append(o.Reasons, rs)
	}
	for _, name := range slices.Sorted(maps.Keys(s.conflicts)) {
		c := s.conflicts[name]
		rs := envelope.NewReason(envelope.ConflictingEvidence)
		rs.Signal, rs.Filter, rs.Sent, rs.Seen = dialect.SignalFilterConflict, name, c.sent, c.seen
		rs.Count, rs.SampleID = envelope.Ptr(c.count), c.sample
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
		for _, name := range slices.Sorted(maps.Keys(s.r.Config.Filters)) {
			o.Narrow = append(o.Narrow, "filter."+name)
		}
	default:
		o.Continuation = envelope.ContinueNone
	}
	o.Warnings = append(o.Warnings, s.warnings...)
	if len(s.normalized) > 0 {
		w := envelope.NewWarning(envelope.WarnValueNormalized, s.r.Name)
		w.Fields = slices.Sorted(maps.Keys(s.normalized))
		o.Warnings = append(o.Warnings, w)
	}
	if len(s.aliases) > 0 {
		w := envelope.NewWarning(envelope.WarnDeprecatedField, s.r.Name)
		w.Fields = slices.Sorted(maps.Keys(s.aliases))
		o.Warnings = append(o.Warnings, w)
	}
	o.Warnings = append(o.Warnings, contract.WarningsFor(s.r.Name, s.enumDrift, s.fieldDrift)...)
	if s.nullLikeCount > 0 {
		w := envelope.NewWarning(envelope.WarnNullLikeValues, s.r.Name)
		for _, name := range s.nullFilters {
			w.Fields = append(w.Fields, s.r.Config.Filters[name].FieldOf(name))
		}
		w.Values = slices.Sorted(maps.Keys(s.nullLike))
		w.Count = envelope.Ptr(s.nullLikeCount)
		o.Warnings = append(o.Warnings, w)
	}
	o.Consistency = s.r.Consistency()
	if s.warnSeen[warnSnapshotMissing] {
		// A page did not name the declared snapshot (NO_SNAPSHOT, with
		// the member and the page, is among the warnings).
		o.Consistency = config.ConsistencyNone
	} else {
		if s.pages > 1 && o.Consistency != config.ConsistencySnapshot {
			o.Warnings = append(o.Warnings, envelope.NewWarning(envelope.WarnNoSnapshot, s.r.Name))
		}
		if s.snapshot != "" {
			o.Snapshot = envelope.Ptr(s.snapshot)
		}
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
