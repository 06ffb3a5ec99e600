// Package envelope defines the result envelope that every airlock tool returns,
// the RFC 9457 problems it carries on failure, and the registry of stable codes
// (incomplete reasons, warnings, problems) with their JSON Schema.
//
// The envelope exists so that an agent can never mistake a partial answer for
// a complete one: Complete is the decision field and is always present. This
// package must never put caller- or upstream-supplied text into a message or a
// next_action: those come from fixed templates only.
package envelope

import "encoding/json"

// Status is the coarse outcome of a tool call. It is never "success": a partial
// answer is "partial".
type Status string

// The three statuses.
const (
	StatusComplete Status = "complete"
	StatusPartial  Status = "partial"
	StatusError    Status = "error"
)

// Continuation kinds: each names a real recovery route.
const (
	ContinueNextCursor        = "next_cursor"
	ContinueRetryAfter        = "retry_after"
	ContinueRetryWithDeadline = "retry_with_deadline"
	ContinueNarrowQuery       = "narrow_query"
	ContinueRestart           = "restart"
	ContinueNone              = "none"
)

// Limit sources for RESULT_LIMIT_REACHED.
const (
	LimitUpstream = "upstream"
	LimitAirlock  = "airlock"
	LimitCaller   = "caller"
)

// Envelope is the object every tool result carries, as structuredContent and
// serialized as text. Data holds the tool-specific payload; Problem is set only
// when Status is StatusError.
type Envelope struct {
	Status            Status       `json:"status"`
	Complete          bool         `json:"complete"`
	IncompleteReasons []Reason     `json:"incomplete_reasons"`
	Continuation      Continuation `json:"continuation"`
	Scope             *Scope       `json:"scope,omitempty"`
	Coverage          *Coverage    `json:"coverage,omitempty"`
	Warnings          []Warning    `json:"warnings"`
	Data              any          `json:"data,omitempty"`
	Problem           *Problem     `json:"problem,omitempty"`
}

// Reason says why a response cannot support claims about the unreturned part
// of the requested scope. Code is one of the registered reason codes; Message
// comes from the code's fixed template.
type Reason struct {
	Code              ReasonCode `json:"code"`
	Message           string     `json:"message"`
	Limit             *int       `json:"limit,omitempty"`
	LimitSource       string     `json:"limit_source,omitempty"`
	Source            string     `json:"source,omitempty"`
	RetryAfterSeconds *int       `json:"retry_after_seconds,omitempty"`
	// Signal names how the upstream reported incompleteness
	// (UPSTREAM_REPORTED_INCOMPLETE) or how a change was detected
	// (INCONSISTENT_SNAPSHOT).
	Signal string `json:"signal,omitempty"`
	// Field, Rule, Count and SampleID describe CONTRACT_VIOLATION.
	Field    string `json:"field,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Count    *int   `json:"count,omitempty"`
	SampleID string `json:"sample_id,omitempty"`
	// UpstreamMessage quotes what the upstream said (see QuoteUpstream),
	// as GraphQL errors beside partial data.
	UpstreamMessage string `json:"upstream_message,omitempty"`
	// Filter, Sent and Seen describe a CONFLICTING_EVIDENCE on a filter:
	// the filter, the value sent for it, and the value a record the
	// upstream returned for it holds (left out for a sensitive field).
	Filter string `json:"filter,omitempty"`
	Sent   any    `json:"sent,omitempty"`
	Seen   any    `json:"seen,omitempty"`
	// Member and Page name a declared signal and the source's page it was
	// on (SIGNAL_UNREADABLE; NO_SNAPSHOT when a declared snapshot was
	// missing).
	Member string `json:"member,omitempty"`
	Page   *int   `json:"page,omitempty"`
}

// Warning is about trust, freshness or interpretation; it never makes an
// answer incomplete.
type Warning struct {
	Code     WarningCode `json:"code"`
	Message  string      `json:"message"`
	Source   string      `json:"source,omitempty"`
	Revision string      `json:"revision,omitempty"`
	Fields   []string    `json:"fields,omitempty"`
	// Values and Count describe NULL_LIKE_VALUES: the null stand-ins
	// seen (from a fixed list, never an upstream's free text) and how
	// many records held them.
	Values []string `json:"values,omitempty"`
	Count  *int     `json:"count,omitempty"`
	// Member and Page name a declared signal a page did not carry
	// (NO_SNAPSHOT: the declared snapshot missing) and the page.
	Member string `json:"member,omitempty"`
	Page   *int   `json:"page,omitempty"`
	// Signal says why (CLAIM_UNAVAILABLE: what kept the claim from being
	// given).
	Signal string `json:"signal,omitempty"`
}

// Continuation names the recovery route for an incomplete answer.
type Continuation struct {
	Kind              string   `json:"kind"`
	Cursor            string   `json:"cursor,omitempty"`
	RetryAfterSeconds *int     `json:"retry_after_seconds,omitempty"`
	MinimumSeconds    *int     `json:"minimum_seconds,omitempty"`
	Narrow            []string `json:"narrow,omitempty"`
}

// Scope makes Complete concrete: what exactly was (or was not) covered.
type Scope struct {
	Resource    string         `json:"resource"`
	Environment string         `json:"environment"`
	Upstream    string         `json:"upstream"`
	Filter      map[string]any `json:"filter"`
	Visibility  string         `json:"visibility"`
	Snapshot    *string        `json:"snapshot"`
	Consistency string         `json:"consistency"`
	// Search names the scope's filters that are upstream searches, whose
	// matches are the upstream's claim (SEARCH_MATCHES_UNVERIFIED); nil
	// when there are none.
	Search *ScopeSearch `json:"search,omitempty"`
}

// ScopeSearch names the upstream searches in a scope: the filters and the
// parameters that carried them. MatchedBy is always "upstream": airlock
// did not re-check what they matched.
type ScopeSearch struct {
	Filters   []string `json:"filters"`
	Params    []string `json:"params"`
	MatchedBy string   `json:"matched_by"`
}

// Coverage reports the work done.
type Coverage struct {
	Pages         int              `json:"pages"`
	ItemsScanned  int              `json:"items_scanned"`
	TotalMatched  int              `json:"total_matched"`
	TotalRelation string           `json:"total_relation"`
	ElapsedMS     int64            `json:"elapsed_ms"`
	Sources       []SourceCoverage `json:"sources"`
}

// SourceCoverage is one source's (partition's, region's) share of the work.
// Status is "complete", "partial", "unavailable" or "not_started".
type SourceCoverage struct {
	Name         string     `json:"name"`
	Status       string     `json:"status"`
	Pages        int        `json:"pages"`
	ItemsScanned int        `json:"items_scanned"`
	Reason       ReasonCode `json:"reason,omitempty"`
	// End says how the source's end was established: "proven" (EndSignal
	// names the proof) or "unproven" (EndSignal names what was missing).
	// Empty when the scan did not reach the source's end.
	End       string `json:"end,omitempty"`
	EndSignal string `json:"end_signal,omitempty"`
}

// Source statuses.
const (
	SourceComplete   = "complete"
	SourcePartial    = "partial"
	SourceDown       = "unavailable"
	SourceNotStarted = "not_started"
)

// Source end states.
const (
	EndProven   = "proven"
	EndUnproven = "unproven"
)

// Total relations. RelationClaimed is a data total only: the upstream's
// word, not a count (coverage counts what was read, eq or gte).
const (
	RelationEq      = "eq"
	RelationGte     = "gte"
	RelationClaimed = "claimed"
)

// Finish sets Status and Complete from the reasons: no reason means complete.
// It also makes the lists non-nil so that they always serialize as arrays.
func (e *Envelope) Finish() {
	if e.IncompleteReasons == nil {
		e.IncompleteReasons = []Reason{}
	}
	if e.Warnings == nil {
		e.Warnings = []Warning{}
	}
	if e.Problem != nil {
		e.Status, e.Complete = StatusError, false
		if e.Continuation.Kind == "" {
			e.Continuation.Kind = ContinueNone
		}
		return
	}
	e.Complete = len(e.IncompleteReasons) == 0
	if e.Complete {
		e.Status = StatusComplete
		e.Continuation = Continuation{Kind: ContinueNone}
		return
	}
	e.Status = StatusPartial
	if e.Continuation.Kind == "" {
		e.Continuation.Kind = ContinueNone
	}
}

// HasReason reports whether the envelope carries the reason code.
func (e *Envelope) HasReason(code ReasonCode) bool {
	for _, r := range e.IncompleteReasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// HasWarning reports whether the envelope carries the warning code.
func (e *Envelope) HasWarning(code WarningCode) bool {
	for _, w := range e.Warnings {
		if w.Code == code {
			return true
		}
	}
	return false
}

// ErrorEnvelope wraps a problem in an otherwise empty error envelope.
func ErrorEnvelope(p *Problem) *Envelope {
	e := &Envelope{Problem: p}
	e.Finish()
	return e
}

// Marshal serializes the envelope as it leaves airlock: I-JSON (see
// IJSON), so that every number in it (an upstream's id in items, a
// manifest, a journal, a problem) reads the same in every client. Every
// tool result is made of these bytes, its structured content as its text.
// It cannot fail for envelopes built from this package's types, so a
// failure is reported as a bug by panicking.
func (e *Envelope) Marshal() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic("envelope: marshal: " + err.Error())
	}
	return IJSON(b)
}

// Ptr returns a pointer to v; a helper for the optional numeric members.
func Ptr[T any](v T) *T { return &v }
