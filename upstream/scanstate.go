package upstream

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// newSalt is a scan's random key for seenKey.
func newSalt() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("upstream: no randomness: " + err.Error())
	}
	return binary.LittleEndian.Uint64(b[:])
}

// seenKey hashes a source and an item id for the duplicate check: FNV-1a
// over a per-scan random salt, the source and the id. Unlike a process's
// maphash seed, the salt travels with a saved scan (Scan.State), so that
// a scan resumed by another process recognizes the ids it saw.
func seenKey(salt uint64, source, id string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := range 8 {
		h ^= (salt >> (8 * i)) & 0xff
		h *= prime
	}
	for i := 0; i < len(source); i++ {
		h ^= uint64(source[i])
		h *= prime
	}
	h *= prime // a zero byte between the source and the id
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= prime
	}
	return h
}

// scanStateVersion is the version of the saved form; a state of another
// version is refused (the scan restarts). Version 2 seals what the
// upstream handed out to continue a list.
const scanStateVersion = 2

// StateSealer encrypts what a saved scan keeps that the upstream handed
// out to continue its list (next links, cursors, snapshots, points in
// time): the state is stored for any process to continue, and such a
// value can carry a credential (a cursor that is base64 of the request's
// own query, its API key included). Sealed, it is never redacted either,
// which would corrupt the continuation. signing.Box is one.
type StateSealer interface {
	// Seal returns plain encrypted for label.
	Seal(plain []byte, label string) string
	// Open returns what Seal was given, or an error for a value it did
	// not seal for label under this key.
	Open(sealed, label string) ([]byte, error)
}

// sealLabel is what sealed continuations are for.
const sealLabel = "airlock scan continuation"

// continuation is what savedPage and savedScan seal.
type continuation struct {
	Cursor   string `json:"cursor,omitempty"`
	NextURL  string `json:"next_url,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
	PIT      string `json:"pit,omitempty"`
	LastID   string `json:"last_id,omitempty"`
}

func (c continuation) seal(sealer StateSealer) (string, error) {
	if c == (continuation{}) {
		return "", nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return sealer.Seal(b, sealLabel), nil
}

// openContinuation reads a sealed continuation. Its error names no part
// of the value: a caller logs it.
func openContinuation(sealed string, sealer StateSealer) (continuation, error) {
	var c continuation
	if sealed == "" {
		return c, nil
	}
	b, err := sealer.Open(sealed, sealLabel)
	if err != nil {
		return c, fmt.Errorf("a sealed continuation does not open (another key, or altered): %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, errors.New("a sealed continuation is not one")
	}
	return c, nil
}

type savedScan struct {
	V          int                `json:"v"`
	Salt       uint64             `json:"salt"`
	Sources    []savedSource      `json:"sources"`
	Pages      int                `json:"pages"`
	Scanned    int                `json:"scanned"`
	Matched    int                `json:"matched"`
	Groups     []savedGroup       `json:"groups,omitempty"`
	Seen       []byte             `json:"seen,omitempty"`
	Elapsed    time.Duration      `json:"elapsed"`
	Sealed     string             `json:"sealed,omitempty"` // the scan's snapshot
	Estimate   *int               `json:"estimate,omitempty"`
	Sticky     []envelope.Reason  `json:"sticky,omitempty"`
	Warnings   []envelope.Warning `json:"warnings,omitempty"`
	Normalized []string           `json:"normalized,omitempty"`
	Violations []savedViolation   `json:"violations,omitempty"`
	Aliases    []string           `json:"aliases,omitempty"`
	EnumDrift  []string           `json:"enum_drift,omitempty"`
	FieldDrift []string           `json:"field_drift,omitempty"`
	NullLike   map[string]int     `json:"null_like,omitempty"`
	NullCount  int                `json:"null_like_count,omitempty"`
	Conflicts  []savedConflict    `json:"conflicts,omitempty"`
	Budget     Budget             `json:"budget"`
}

type savedSource struct {
	Name       string        `json:"name"`
	State      savedPage     `json:"state"`
	Status     srcStatus     `json:"status"`
	Pages      int           `json:"pages"`
	Items      int           `json:"items"`
	LastID     string        `json:"last_id,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	Signal     string        `json:"signal,omitempty"`
	Capped     bool          `json:"capped,omitempty"`
	ShortOf    int           `json:"short_of,omitempty"`
}

// savedPage is a dialect.State as stored: every member, so that a scan
// resumed by another process stands exactly where this one stopped (a
// probe owed, the signals seen, the items counted against the total).
// What the upstream handed out to continue (cursor, next URL, snapshot,
// point in time, the last id read) is Sealed.
type savedPage struct {
	Sealed         string `json:"sealed,omitempty"`
	Offset         int    `json:"offset,omitempty"`
	Page           int    `json:"page,omitempty"`
	Total          *int   `json:"total,omitempty"`
	Pages          *int   `json:"total_pages,omitempty"`
	Seen           int    `json:"seen,omitempty"`
	TotalUntrusted bool   `json:"total_untrusted,omitempty"`
	SignalSeen     bool   `json:"signal_seen,omitempty"`
	LastFull       bool   `json:"last_full,omitempty"`
	MaxPage        int    `json:"max_page,omitempty"`
	MaxEvaluated   int    `json:"max_evaluated,omitempty"`
	Started        bool   `json:"started,omitempty"`
	Done           bool   `json:"done,omitempty"`
	End            string `json:"end,omitempty"`
	EndSignal      string `json:"end_signal,omitempty"`
	Probe          bool   `json:"probe,omitempty"`
	// Recheck is the request of a whole page to ask for again (see
	// dialect.State), RecheckItems what it held.
	Recheck      *savedPage `json:"recheck,omitempty"`
	RecheckItems int        `json:"recheck_items,omitempty"`
	RecheckIDs   []uint64   `json:"recheck_ids,omitempty"`
	// RecheckFollowing: Recheck is the page after, by number.
	RecheckFollowing bool `json:"recheck_following,omitempty"`
}

// savePage stores a page state, its continuation sealed.
func savePage(st dialect.State, sealer StateSealer) (savedPage, error) {
	c := continuation{Cursor: st.Cursor, Snapshot: st.Snapshot, PIT: st.PIT, LastID: st.LastID}
	if st.NextURL != nil {
		c.NextURL = st.NextURL.String()
	}
	ps := savedPage{Offset: st.Offset, Page: st.Page, Total: st.Total, Pages: st.TotalPages, Seen: st.Seen, TotalUntrusted: st.TotalUntrusted,
		SignalSeen: st.SignalSeen, LastFull: st.LastFull, MaxPage: st.MaxPage, MaxEvaluated: st.MaxEvaluated, Started: st.Started, Done: st.Done, End: st.End,
		EndSignal: st.EndSignal, Probe: st.Probe, RecheckItems: st.RecheckItems, RecheckIDs: st.RecheckIDs, RecheckFollowing: st.RecheckFollowing}
	var err error
	if st.Recheck != nil {
		rc, err := savePage(*st.Recheck, sealer)
		if err != nil {
			return ps, err
		}
		ps.Recheck = &rc
	}
	ps.Sealed, err = c.seal(sealer)
	return ps, err
}

// state reads a stored page state back, opening its continuation. Its
// error quotes nothing of the continuation.
func (ps savedPage) state(sealer StateSealer) (dialect.State, error) {
	c, err := openContinuation(ps.Sealed, sealer)
	if err != nil {
		return dialect.State{}, err
	}
	st := dialect.State{Cursor: c.Cursor, Offset: ps.Offset, Page: ps.Page, Snapshot: c.Snapshot, PIT: c.PIT, Total: ps.Total,
		TotalPages: ps.Pages, LastID: c.LastID, Seen: ps.Seen, TotalUntrusted: ps.TotalUntrusted, SignalSeen: ps.SignalSeen,
		LastFull: ps.LastFull, MaxPage: ps.MaxPage, MaxEvaluated: ps.MaxEvaluated, Started: ps.Started, Done: ps.Done, End: ps.End, EndSignal: ps.EndSignal, Probe: ps.Probe,
		RecheckItems: ps.RecheckItems, RecheckIDs: ps.RecheckIDs, RecheckFollowing: ps.RecheckFollowing}
	if ps.Recheck != nil {
		rc, err := ps.Recheck.state(sealer)
		if err != nil {
			return st, err
		}
		st.Recheck = &rc
	}
	if c.NextURL != "" {
		u, err := url.Parse(c.NextURL)
		if err != nil {
			// Its error would quote the URL.
			return st, errors.New("a saved next URL does not parse")
		}
		st.NextURL = u
	}
	return st, nil
}

type savedGroup struct {
	Field string          `json:"field"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
	Count int             `json:"count"`
}

type savedConflict struct {
	Filter string `json:"filter"`
	Sent   any    `json:"sent,omitempty"`
	Seen   any    `json:"seen,omitempty"`
	Sample string `json:"sample,omitempty"`
	Count  int    `json:"count"`
}

type savedViolation struct {
	Field  string `json:"field"`
	Rule   string `json:"rule"`
	Sample string `json:"sample,omitempty"`
	Count  int    `json:"count"`
}

func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// State saves the scan's progress (not its spec or sink, which the caller
// gives again to ResumeScan): where each source stands, what was counted,
// the ids seen, the reasons and warnings so far. What the upstream handed
// out to continue is sealed with sealer, which must not be nil. Call it
// between Runs.
func (s *Scan) State(sealer StateSealer) ([]byte, error) {
	if sealer == nil {
		return nil, errors.New("save scan: no sealer for its continuations")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := savedScan{V: scanStateVersion, Salt: s.salt, Pages: s.pages, Scanned: s.scanned, Matched: s.matched, Elapsed: s.elapsed,
		Estimate: s.estimate, Sticky: s.sticky, Warnings: s.warnings, Normalized: setKeys(s.normalized),
		Aliases: setKeys(s.aliases), EnumDrift: setKeys(s.enumDrift), FieldDrift: setKeys(s.fieldDrift), Budget: s.budget,
		NullLike: s.nullLike, NullCount: s.nullLikeCount}
	var err error
	if st.Sealed, err = (continuation{Snapshot: s.snapshot}).seal(sealer); err != nil {
		return nil, fmt.Errorf("save scan: %w", err)
	}
	for _, src := range s.srcs {
		ps, err := savePage(src.state, sealer)
		if err != nil {
			return nil, fmt.Errorf("save scan: %w", err)
		}
		st.Sources = append(st.Sources, savedSource{Name: src.cfg.Name, State: ps, Status: src.status, Pages: src.pages, Items: src.items,
			LastID: src.lastID, RetryAfter: src.retryAfter, Signal: src.signal, Capped: src.capped, ShortOf: src.shortOf})
	}
	for k, n := range s.groups {
		v, err := json.Marshal(s.groupVals[k])
		if err != nil {
			return nil, fmt.Errorf("save scan: group value: %w", err)
		}
		st.Groups = append(st.Groups, savedGroup{Field: k.field, Key: k.key, Value: v, Count: n})
	}
	sort.Slice(st.Groups, func(i, j int) bool {
		if st.Groups[i].Field != st.Groups[j].Field {
			return st.Groups[i].Field < st.Groups[j].Field
		}
		return st.Groups[i].Key < st.Groups[j].Key
	})
	for _, k := range slices.Sorted(maps.Keys(s.violations)) {
		v := s.violations[k]
		st.Violations = append(st.Violations, savedViolation{Field: v.field, Rule: v.rule, Sample: v.sample, Count: v.count})
	}
	for _, name := range slices.Sorted(maps.Keys(s.conflicts)) {
		c := s.conflicts[name]
		st.Conflicts = append(st.Conflicts, savedConflict{Filter: name, Sent: c.sent, Seen: c.seen, Sample: c.sample, Count: c.count})
	}
	st.Seen = make([]byte, 0, 8*s.seen.len())
	s.seen.each(func(h uint64) {
		st.Seen = binary.LittleEndian.AppendUint64(st.Seen, h)
	})
	return json.Marshal(st)
}

// ResumeScan rebuilds a scan saved by Scan.State, in this process or
// another, with the same spec it was started with and a sealer with the
// same key: a Run continues where the saved scan stopped and its Outcome
// is the saved one. A state this resource's configuration cannot continue
// (its sources changed, another version) or whose continuations do not
// open is an error, which names no part of them; the caller then starts
// over.
func (r *Resource) ResumeScan(spec ScanSpec, state []byte, sealer StateSealer) (*Scan, error) {
	if sealer == nil {
		return nil, errors.New("resume scan: no sealer for its continuations")
	}
	var st savedScan
	dec := json.NewDecoder(bytes.NewReader(state))
	dec.UseNumber()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("resume scan: %w", err)
	}
	if st.V != scanStateVersion {
		return nil, fmt.Errorf("resume scan: state version %d, want %d", st.V, scanStateVersion)
	}
	s := r.NewScan(spec)
	if len(st.Sources) != len(s.srcs) || len(st.Seen)%8 != 0 {
		return nil, fmt.Errorf("resume scan: the saved scan does not match the resource's sources")
	}
	for i, src := range s.srcs {
		ss := st.Sources[i]
		if ss.Name != src.cfg.Name {
			return nil, fmt.Errorf("resume scan: source %q saved where %q is configured", ss.Name, src.cfg.Name)
		}
		ps, err := ss.State.state(sealer)
		if err != nil {
			return nil, fmt.Errorf("resume scan: source %q: %w", ss.Name, err)
		}
		src.state, src.status, src.pages, src.items, src.lastID = ps, ss.Status, ss.Pages, ss.Items, ss.LastID
		src.retryAfter, src.signal, src.capped, src.shortOf = ss.RetryAfter, ss.Signal, ss.Capped, ss.ShortOf
	}
	scan, err := openContinuation(st.Sealed, sealer)
	if err != nil {
		return nil, fmt.Errorf("resume scan: %w", err)
	}
	s.salt, s.pages, s.scanned, s.matched, s.elapsed = st.Salt, st.Pages, st.Scanned, st.Matched, st.Elapsed
	s.snapshot, s.estimate, s.sticky, s.warnings, s.budget = scan.Snapshot, st.Estimate, st.Sticky, st.Warnings, st.Budget
	for k, n := range st.NullLike {
		s.nullLike[k] = n
	}
	s.nullLikeCount = st.NullCount
	for _, g := range st.Groups {
		var v any
		d := json.NewDecoder(bytes.NewReader(g.Value))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("resume scan: group value: %w", err)
		}
		k := groupKey{g.Field, g.Key}
		s.groups[k], s.groupVals[k] = g.Count, v
	}
	for _, rs := range st.Sticky {
		s.stickySeen[stickyKeyOf(rs)] = true
	}
	for _, c := range st.Conflicts {
		s.conflicts[c.Filter] = &conflict{sent: c.Sent, seen: c.Seen, sample: c.Sample, count: c.Count}
	}
	for _, w := range st.Warnings {
		s.warnSeen[string(w.Code)] = true
		if w.Code == envelope.WarnNoSnapshot && w.Member != "" {
			s.warnSeen[warnSnapshotMissing] = true
		}
	}
	for _, v := range st.Violations {
		s.violations[v.Field+"/"+v.Rule] = &violation{field: v.Field, rule: v.Rule, sample: v.Sample, count: v.Count}
	}
	for _, set := range []struct {
		keys []string
		m    map[string]bool
	}{{st.Normalized, s.normalized}, {st.Aliases, s.aliases}, {st.EnumDrift, s.enumDrift}, {st.FieldDrift, s.fieldDrift}} {
		for _, k := range set.keys {
			set.m[k] = true
		}
	}
	for i := 0; i < len(st.Seen); i += 8 {
		s.seen.add(binary.LittleEndian.Uint64(st.Seen[i:]))
	}
	return s, nil
}
