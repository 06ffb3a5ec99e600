package upstream

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/contract"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// process accounts for one page (signals, consistency checks, items) under
// the scan's lock and hands the matching items to the sink without it: the
// sink never runs with the scan's lock held. Sink calls are serialized in
// page order. Items are handed over a batch at a time, so that a page's
// decoded items never all exist at once.
func (s *Scan) process(src *sourceScan, st dialect.State, pg dialect.Page) error {
	if s.spec.Sink == nil {
		return s.account(src, st, pg, nil)
	}
	s.sinkMu.Lock()
	defer s.sinkMu.Unlock()
	return s.account(src, st, pg, func(items []*Item) error {
		for _, it := range items {
			if err := s.spec.Sink.Add(it); err != nil {
				return &ScanError{Problem: envelope.NewProblem(envelope.ProblemInternal, "airlock could not record the scanned items."), Err: err}
			}
		}
		return nil
	})
}

// handoffBatch is how many matching items account hands to the sink at a
// time.
const handoffBatch = 256

// account accounts for one page under the scan's lock; hand, when set,
// receives the matching items a batch at a time, with the lock released.
func (s *Scan) account(src *sourceScan, st dialect.State, pg dialect.Page, hand func([]*Item) error) error {
	r := s.r
	s.mu.Lock()
	locked := true
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	var handoff []*Item
	flush := func() error {
		if len(handoff) == 0 {
			return nil
		}
		s.mu.Unlock()
		locked = false
		err := hand(handoff)
		s.mu.Lock()
		locked = true
		handoff = handoff[:0]
		return err
	}
	s.pages++
	src.pages++
	for _, m := range pg.Doubts {
		s.unreadableLocked(src.cfg.Name, m, src.pages)
	}
	s.readSignalsLocked(src, pg)
	if pg.UpstreamErrors != "" {
		s.addStickyLocked(envelope.UpstreamReportedIncomplete, src.cfg.Name, "graphql_errors")
		s.quoteStickyLocked(envelope.UpstreamReportedIncomplete, src.cfg.Name, pg.UpstreamErrors)
	}
	if !st.Started && pg.Snapshot != "" && s.snapshot == "" {
		// The scan's snapshot is a first page's, never a later one's.
		s.snapshot = pg.Snapshot
	}
	if pg.NoSnapshot {
		s.snapshotMissingLocked(src.cfg.Name, src.pages)
	}
	if pg.Snapshot != "" && st.Snapshot != "" && pg.Snapshot != st.Snapshot {
		// A continuation promises the first page's snapshot; another one
		// is a list read at two points in time.
		s.addStickyLocked(envelope.InconsistentSnapshot, src.cfg.Name, "snapshot_changed")
	}
	if pg.Estimate != nil {
		e := src.items + len(pg.Items) + *pg.Estimate
		s.estimate = &e
	}
	if pg.Total != nil && st.Total != nil && *pg.Total != *st.Total {
		s.addStickyLocked(envelope.InconsistentSnapshot, src.cfg.Name, "total_changed")
	}
	if pg.TotalPages != nil && st.TotalPages != nil && *pg.TotalPages != *st.TotalPages {
		s.addStickyLocked(envelope.InconsistentSnapshot, src.cfg.Name, "total_pages_changed")
	}
	if !st.Started {
		src.first = firstTotalOf(r, pg)
	}
	if pg.HasBoundary && r.decodedID(pg.Boundary) != src.lastID {
		s.addStickyLocked(envelope.InconsistentSnapshot, src.cfg.Name, "page_boundary_shifted")
	}
	idPath := r.FieldPath(r.Config.IDField)
	verPath := ""
	if r.Config.VersionField != "" {
		verPath = r.FieldPath(r.Config.VersionField)
	}
	for _, raw := range pg.Items {
		// Before any item reaches the sink: a page is refused whole.
		if !dialect.IsObject(raw) {
			return transport.BadResponse("an item is not a JSON object")
		}
	}
	fresh, rejected, matchedBefore := 0, 0, s.matched
	var items dialect.ItemDecoder
	for _, raw := range pg.Items {
		v, dups, err := items.Item(raw)
		if err != nil {
			return err
		}
		doc, ok := v.(map[string]any)
		if !ok {
			return transport.BadResponse("an item is not a JSON object")
		}
		if err := r.DecodeFields(doc); err != nil {
			return err
		}
		id, ok := jsonvalue.GetID(doc, idPath)
		if !ok {
			field, rule := r.Config.IDField, "required"
			if twice := r.duplicated(dups); len(twice) > 0 {
				// The id itself is named twice: the record has none.
				field, rule = twice[0], contract.RuleDuplicateMember
			}
			s.violationLocked(field, rule, "")
			src.items++
			s.scanned++
			continue
		}
		src.lastID = id
		h := seenKey(s.salt, src.cfg.Name, id)
		if !s.seen.add(h) {
			s.addStickyLocked(envelope.InconsistentSnapshot, src.cfg.Name, "duplicate_id")
			continue
		}
		fresh++
		src.items++
		s.scanned++
		s.normalizeLocked(doc)
		var broken []contract.Violation
		brokenFilter := false
		for _, f := range r.duplicated(dups) {
			// A member named twice is read by neither value: the record
			// is ambiguous, and in scope or not as far as that member
			// decides it.
			broken = append(broken, contract.Violation{Field: f, Rule: contract.RuleDuplicateMember, Decision: true})
			brokenFilter = brokenFilter || s.filterFields[f]
		}
		if r.Contract != nil {
			vs, aliases := r.Contract.Check(doc, s.decision)
			for _, a := range aliases {
				s.aliases[a] = true
			}
			for _, v := range vs {
				switch {
				case slices.ContainsFunc(broken, func(b contract.Violation) bool { return b.Field == v.Field }):
					// Named twice: said once, as such.
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
			s.nullLikeLocked(doc)
			s.conflictsLocked(doc, id)
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
			v, _ := jsonvalue.Get(doc, r.FieldPath(g))
			k := groupKey{g, canonicalKey(v)}
			if _, seen := s.groupVals[k]; !seen {
				s.groupVals[k] = v
			}
			s.groups[k]++
		}
		if s.spec.Sink != nil {
			it := &Item{ID: id, Source: src.cfg.Name, Doc: doc, Violations: broken}
			if verPath != "" {
				it.Version, _ = jsonvalue.GetID(doc, verPath)
			}
			handoff = append(handoff, it)
			if len(handoff) == handoffBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if len(pg.Items) > 0 {
		if id, ok := jsonvalue.GetID(dialect.ItemValue(pg.Items[len(pg.Items)-1]), idPath); ok {
			src.lastID = id
		}
	}
	src.state = pg.Next
	if src.state.Recheck != nil && s.r.Pagination.BatchComplete == "" {
		// The page's own items, among which the smaller request's must
		// be (Scan.recheck); a batch's are its last answer's
		// (fetchBatch).
		src.state.RecheckIDs = s.idHashes(src.cfg.Name, pg.Items)
	}
	if s.spec.CountFromTotal && s.spec.Sink == nil && len(s.spec.GroupBy) == 0 && !st.Started && pg.Total != nil &&
		rejected == 0 && fresh == len(pg.Items) && !src.state.Done {
		// Every item of the first page matched: the upstream applies the
		// filter, and its total is declared exact. It counts the rest.
		s.matched += *pg.Total - (s.matched - matchedBefore)
		src.fromTotal = true
		src.state.Done, src.state.Probe, src.state.End, src.state.EndSignal = true, false, envelope.EndProven, dialect.SignalDeclaredTotal
	}
	if st.Started && len(pg.Items) > 0 && fresh == 0 && !src.state.Done {
		// A whole page of records already read: the upstream ignores the
		// page parameter or loops. Reading on proves nothing.
		src.state.Done, src.state.Probe, src.state.End, src.state.EndSignal = true, false, envelope.EndUnproven, dialect.SignalRepeatedPage
	}
	return flush()
}

func (s *Scan) finishSource(src *sourceScan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src.status = srcDone
	st := src.state
	if st.TotalUntrusted && !s.stickySeen[string(envelope.InconsistentSnapshot)+"/"+src.cfg.Name] {
		// More records than the upstream's own total, and no sign of a
		// change (which is INCONSISTENT_SNAPSHOT): one of the two is
		// wrong, and neither is believed.
		s.conflictLocked(src.cfg.Name, dialect.SignalTotalVsItems)
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
	if t := st.Total; t != nil && !st.TotalUntrusted && src.items < *t && !s.stickySeen[string(envelope.InconsistentSnapshot)+"/"+src.cfg.Name] {
		// The upstream stopped before its own total without any sign of a
		// change: it capped the result.
		src.capped, src.shortOf = true, *t
	}
}

// contradictedLocked warns once per declaration that the upstream
// contradicted it.
func (s *Scan) contradictedLocked(field string) {
	key := string(envelope.WarnDeclarationContradicted) + "/" + field
	if s.warnSeen[key] {
		return
	}
	s.warnSeen[key] = true
	w := envelope.NewWarning(envelope.WarnDeclarationContradicted, s.r.Name)
	w.Fields = []string{field}
	s.warnings = append(s.warnings, w)
}

func (s *Scan) readSignalsLocked(src *sourceScan, pg dialect.Page) {
	r := s.r
	if v := r.Config.Visibility; v != nil {
		var got string
		if v.Header != "" {
			got = pg.Header.Get(v.Header)
		} else if x, ok := jsonvalue.Get(pg.Doc, v.Field); ok {
			got = jsonvalue.String(x)
		}
		for _, rv := range v.RestrictedValues {
			if got != "" && strings.EqualFold(got, rv) {
				s.addStickyLocked(envelope.VisibilityRestricted, src.cfg.Name, "")
			}
		}
	}
	if inc := r.Config.Incomplete; inc != nil {
		for _, f := range inc.Flags {
			if x, ok := jsonvalue.Get(pg.Doc, f); ok && x == true {
				s.addStickyLocked(envelope.UpstreamReportedIncomplete, src.cfg.Name, lastSegment(f))
			}
		}
		if inc.TotalRelation != "" {
			if x, ok := jsonvalue.Get(pg.Doc, inc.TotalRelation); ok && jsonvalue.String(x) == "gte" {
				s.addStickyLocked(envelope.UpstreamReportedIncomplete, src.cfg.Name, "total_gte")
			}
		}
	}
	if f := r.Config.Freshness; f != nil {
		var ts string
		if f.Header != "" {
			ts = pg.Header.Get(f.Header)
		} else if x, ok := jsonvalue.Get(pg.Doc, f.Field); ok {
			ts = jsonvalue.String(x)
		}
		if t, err := time.Parse(time.RFC3339, ts); err == nil && r.Upstream.Clock().Now().Sub(t) > f.MaxAge {
			if !s.warnSeen[string(envelope.WarnStaleIndex)] {
				s.warnSeen[string(envelope.WarnStaleIndex)] = true
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

// stickyKey keys a sticky reason: one per code and source, and for
// CONFLICTING_EVIDENCE one per signal too (each names another pair), for
// SIGNAL_UNREADABLE one per member (detail).
func stickyKey(code envelope.ReasonCode, source, detail string) string {
	key := string(code) + "/" + source
	if code == envelope.ConflictingEvidence || code == envelope.SignalUnreadable {
		key += "/" + detail
	}
	return key
}

// stickyKeyOf is a saved reason's key.
func stickyKeyOf(rs envelope.Reason) string {
	if rs.Code == envelope.SignalUnreadable {
		return stickyKey(rs.Code, rs.Source, rs.Member)
	}
	return stickyKey(rs.Code, rs.Source, rs.Signal)
}

func (s *Scan) addStickyLocked(code envelope.ReasonCode, source, signal string) {
	key := stickyKey(code, source, signal)
	if s.stickySeen[key] {
		return
	}
	s.stickySeen[key] = true
	rs := envelope.NewReason(code)
	rs.Source, rs.Signal = source, signal
	s.sticky = append(s.sticky, rs)
}

// snapshotMissingLocked records, once per scan, a page that did not name
// the snapshot the list declares where it must: the scan then claims no
// snapshot (NO_SNAPSHOT naming the member and the page, consistency none).
func (s *Scan) snapshotMissingLocked(source string, page int) {
	if s.warnSeen[warnSnapshotMissing] {
		return
	}
	s.warnSeen[warnSnapshotMissing] = true
	w := envelope.NewWarning(envelope.WarnNoSnapshot, source)
	w.Member, w.Page = s.r.Pagination.Snapshot.From, envelope.Ptr(page)
	s.warnings = append(s.warnings, w)
}

// warnSnapshotMissing keys the NO_SNAPSHOT of a declared snapshot missing.
const warnSnapshotMissing = string(envelope.WarnNoSnapshot) + "/missing"

// unreadableLocked records a declared signal a page held in a form that
// cannot be read (SIGNAL_UNREADABLE), once per source and member: the
// first page it was unreadable on is named.
func (s *Scan) unreadableLocked(source, member string, page int) {
	key := stickyKey(envelope.SignalUnreadable, source, member)
	if s.stickySeen[key] {
		return
	}
	s.stickySeen[key] = true
	rs := envelope.NewReason(envelope.SignalUnreadable)
	rs.Source, rs.Member, rs.Page = source, member, envelope.Ptr(page)
	s.sticky = append(s.sticky, rs)
}

// quoteStickyLocked sets the upstream's words on a sticky reason (the
// first words it gave).
func (s *Scan) quoteStickyLocked(code envelope.ReasonCode, source, msg string) {
	for i := range s.sticky {
		if s.sticky[i].Code == code && s.sticky[i].Source == source && s.sticky[i].UpstreamMessage == "" {
			s.sticky[i].UpstreamMessage = msg
		}
	}
}

// nullLikeWords are values APIs write for "no value" besides null; an
// empty string is one too.
var nullLikeWords = map[string]bool{"": true, "null": true, "none": true, "nil": true, "-": true, "n/a": true, "na": true, "undefined": true}

// nullLikeLocked counts a record the filter rejected that it would have
// selected if an undeclared null stand-in in a field filtered on null
// (declared null_values are null already) meant no value.
func (s *Scan) nullLikeLocked(doc map[string]any) {
	if len(s.nullFilters) == 0 || !s.r.Matches(doc, s.nullRest) {
		return
	}
	var words []string
	for _, name := range s.nullFilters {
		v, _ := jsonvalue.Get(doc, s.r.FieldPath(s.r.Config.Filters[name].FieldOf(name)))
		str, ok := v.(string)
		w := strings.ToLower(strings.TrimSpace(str))
		if !ok || !nullLikeWords[w] {
			return
		}
		if w == "" {
			w = `""`
		}
		words = append(words, w)
	}
	for _, w := range words {
		s.nullLike[w]++
	}
	s.nullLikeCount++
}

// conflictsLocked records, for each filter sent upstream, a record the
// upstream returned for it that airlock's own check of that filter
// rejects: the two disagree on what the filter means, and the records the
// upstream's meaning kept out are unknown.
func (s *Scan) conflictsLocked(doc map[string]any, id string) {
	r := s.r
	for _, name := range s.sent {
		want := s.spec.Filter[name]
		if r.Matches(doc, map[string]any{name: want}) {
			continue
		}
		c := s.conflicts[name]
		if c == nil {
			field := r.Config.Filters[name].FieldOf(name)
			c = &conflict{sent: want, sample: id}
			if fd, _ := r.Field(field); fd == nil || !fd.Sensitive {
				seen, _ := jsonvalue.Get(doc, r.FieldPath(field))
				c.seen = boundedSample(seen)
			}
			s.conflicts[name] = c
		}
		c.count++
	}
}

// boundedSample keeps a value small enough to quote in a reason: a long
// value is left out (nil).
func boundedSample(v any) any {
	b, err := jsonvalue.Canonical(v)
	if err != nil || len(b) > 200 {
		return nil
	}
	return v
}

// conflictLocked records a contradiction between two signals of a source's
// pages (once per source and signal).
func (s *Scan) conflictLocked(source, signal string) {
	s.addStickyLocked(envelope.ConflictingEvidence, source, signal)
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

// canonicalKey is a group's key: the value's canonical encoding, so that
// null and "null" stay apart.
func canonicalKey(v any) string {
	b, err := jsonvalue.Canonical(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// duplicated names the declared fields that members named twice (dotted
// paths within an item) leave unreadable: a field at the path, inside
// it, or holding it. A path no declared field reaches is named as it is.
func (r *Resource) duplicated(dups []string) []string {
	if len(dups) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(r.Config.Fields))
	for _, f := range []string{r.Config.IDField, r.Config.VersionField} {
		if f != "" && !slices.Contains(names, f) {
			names = append(names, f)
		}
	}
	var out []string
	for _, d := range dups {
		n := len(out)
		for _, name := range names {
			p := r.FieldPath(name)
			if p == d || strings.HasPrefix(d, p+".") || strings.HasPrefix(p, d+".") {
				if !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
		if len(out) == n && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}
