// Package selection freezes the exact set of targets of a bulk write, binds
// it to one action with digests, and carries the write out with a durable
// per-target journal.
//
// It must never write to a target that is not a member of a committable,
// unexpired selection whose digest and action the caller repeated, never
// send a write before its intent is journaled, and never retry a write whose
// outcome it did not observe unless the upstream can tell the retry apart
// (an idempotency key or a conditional write).
package selection

import (
	"errors"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
)

// Kinds of selection.
const (
	// KindScope: the scan covered the whole filter, so the selection may
	// support claims about absence.
	KindScope = "scope"
	// KindExplicit: named ids only; positive evidence, each member
	// re-verified at commit.
	KindExplicit = "explicit"
)

// Record dispositions.
const (
	Member    = "member"
	Excluded  = "excluded"
	Ambiguous = "ambiguous"
)

// RulePrecondition is the Rule index of a record excluded because it fails
// the action's eligibility precondition; RuleFilter of an explicit id that
// does not match the filter; RuleNotFound of an explicit id that does not
// exist; RuleChanged of a compensation target that changed since the
// operation wrote it.
const (
	RulePrecondition = -1
	RuleFilter       = -2
	RuleNotFound     = -3
	RuleChanged      = -4
)

// Action is what a commit does: a configured action type and its params.
type Action struct {
	Type   string         `json:"type"`
	Params map[string]any `json:"params"`
}

// Selector is what produced the selection.
type Selector struct {
	Filter  map[string]any      `json:"filter"`
	Exclude []config.RuleConfig `json:"exclude"`
	IDs     []string            `json:"ids,omitempty"`
}

func (s Selector) canonicalValue() map[string]any {
	filter := s.Filter
	if filter == nil {
		filter = map[string]any{}
	}
	ex := make([]any, len(s.Exclude))
	for i, r := range s.Exclude {
		ex[i] = map[string]any{"field": r.Field, "op": r.Op, "value": r.Value, "reason": r.Reason}
	}
	out := map[string]any{"filter": filter, "exclude": ex}
	if s.IDs != nil {
		ids := make([]any, len(s.IDs))
		for i, id := range s.IDs {
			ids[i] = id
		}
		out["ids"] = ids
	}
	return out
}

// Record is one record of a selection's scope: a member, an excluded
// record (with the rule) or an ambiguous one (with why).
type Record struct {
	ID          string         `json:"id"`
	Disposition string         `json:"disposition"`
	Rule        int            `json:"rule"`
	Note        string         `json:"note,omitempty"`
	Version     string         `json:"version,omitempty"`
	Source      string         `json:"source,omitempty"`
	Review      map[string]any `json:"review"`
	Before      map[string]any `json:"before"`
	Groups      map[string]any `json:"groups"`
	// Restore holds, for a compensation, the values each field goes back
	// to (the compensated operation's journaled before-values).
	Restore map[string]any `json:"restore,omitempty"`
	// Frame is the member's declared fields outside the effect, as
	// digests of the values the preview read (write.Frame): evidence for
	// judging its write, not part of what is approved (not digested).
	Frame map[string]string `json:"frame,omitempty"`
}

func (r Record) canonicalValue() map[string]any {
	review, before := r.Review, r.Before
	if review == nil {
		review = map[string]any{}
	}
	if before == nil {
		before = map[string]any{}
	}
	out := map[string]any{"id": r.ID, "disposition": r.Disposition, "rule": r.Rule, "note": r.Note,
		"version": r.Version, "review": review, "before": before}
	if len(r.Restore) > 0 {
		out["restore"] = r.Restore
	}
	return out
}

// Selection is a frozen selection.
type Selection struct {
	ID               string     `json:"selection_id"`
	Resource         string     `json:"resource"`
	Environment      string     `json:"environment"`
	Upstream         string     `json:"upstream"`
	Kind             string     `json:"kind"`
	Selector         Selector   `json:"selector"`
	Action           Action     `json:"action"`
	ActionDigest     string     `json:"action_digest"`
	ActionSpecDigest string     `json:"action_spec_digest"`
	Digest           string     `json:"digest"`
	State            string     `json:"state"`
	Committable      bool       `json:"committable"`
	Blockers         []Blocker  `json:"blockers"`
	Summary          Summary    `json:"summary"`
	CreatedAt        time.Time  `json:"created_at"`
	ExpiresAt        time.Time  `json:"expires_at"`
	RequestedBy      string     `json:"requested_by,omitempty"`
	Compensates      string     `json:"compensates,omitempty"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
	// Principal is who previewed the selection (who asked).
	Principal Principal `json:"principal"`
}

// Selection states.
const (
	StateBuilding = "building"
	StateReady    = "ready"
	StateFailed   = "failed"
)

// Blocker says why a selection is not committable. Code is an incomplete
// reason code or a blocker code from the registry.
type Blocker = envelope.Reason

// Summary is what a reviewer needs besides the manifest.
type Summary struct {
	Members      int                         `json:"members"`
	Excluded     int                         `json:"excluded"`
	Ambiguous    int                         `json:"ambiguous"`
	Scanned      int                         `json:"scanned"`
	Groups       map[string][]upstream.Group `json:"groups"`
	Exclusions   []ExclusionCount            `json:"exclusions"`
	Effect       []Effect                    `json:"effect"`
	Coverage     *envelope.Coverage          `json:"coverage,omitempty"`
	ScanReasons  []envelope.Reason           `json:"scan_reasons"`
	Warnings     []envelope.Warning          `json:"warnings"`
	Snapshot     *string                     `json:"snapshot"`
	Consistency  string                      `json:"consistency"`
	Irreversible []string                    `json:"irreversible,omitempty"`
}

// ExclusionCount is one exclusion rule and how many records it excluded.
type ExclusionCount struct {
	Rule   int    `json:"rule"`
	Field  string `json:"field,omitempty"`
	Op     string `json:"op,omitempty"`
	Value  any    `json:"value,omitempty"`
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// Effect is what one field becomes: the after-value and the distribution
// of before-values (summarized: every member gets the same after-value).
type Effect struct {
	Field string `json:"field"`
	// Op is set, add or remove; Value, for add and remove, the element.
	Op    string `json:"op,omitempty"`
	Value any    `json:"value,omitempty"`
	// After is the value every target gets (set), or the distribution of
	// whole after-values per target (per_target for add and remove,
	// restored_per_target for a compensation).
	After  any              `json:"after"`
	Before []upstream.Group `json:"before"`
}

// Operation is one commit (or dry run) of a selection.
type Operation struct {
	ID             string          `json:"operation_id"`
	SelectionID    string          `json:"selection_id"`
	Digest         string          `json:"digest"`
	ActionDigest   string          `json:"action_digest"`
	Action         Action          `json:"action"`
	Mode           string          `json:"mode"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Status         string          `json:"status"`
	StopReason     string          `json:"stop_reason,omitempty"`
	Counts         map[Outcome]int `json:"counts"`
	Total          int             `json:"total"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	FinishedAt     *time.Time      `json:"finished_at,omitempty"`
	ApprovalID     string          `json:"approval_id,omitempty"`
	// Principal is who committed (or resumed) the operation.
	Principal Principal `json:"principal"`
	// Lease is the process's hold on the running operation; stores keep
	// it beside the document.
	Lease Lease `json:"-"`
}

// Operation modes and statuses.
const (
	ModeExecute = "execute"
	ModeDryRun  = "dry_run"

	OpRunning               = "running"
	OpCompleted             = "completed"
	OpCompletedWithFailures = "completed_with_failures"
	OpStopped               = "stopped"
	OpInterrupted           = "interrupted"
)

// Outcome is a target's outcome in the journal.
type Outcome string

// Target outcomes (and the journal's intermediate states).
const (
	TargetPending   Outcome = "pending"
	TargetInFlight  Outcome = "in_flight"
	TargetSucceeded Outcome = "succeeded"
	TargetFailed    Outcome = "failed"
	TargetSkipped   Outcome = "skipped"
	TargetUnknown   Outcome = "unknown"
	// Dry runs report what would happen.
	TargetWouldSucceed Outcome = "would_succeed"
	TargetWouldSkip    Outcome = "would_skip"
)

// Target is one target's journal entry.
type Target struct {
	OperationID string            `json:"-"`
	ID          string            `json:"id"`
	Outcome     Outcome           `json:"outcome"`
	HTTPStatus  int               `json:"http_status,omitempty"`
	Problem     *envelope.Problem `json:"problem,omitempty"`
	Note        string            `json:"note,omitempty"`
	Version     string            `json:"version,omitempty"`
	Before      map[string]any    `json:"before"`
	After       map[string]any    `json:"after,omitempty"`
	Restore     map[string]any    `json:"restore,omitempty"`
	// Frame is the member's (Record.Frame), copied when the operation
	// was created.
	Frame     map[string]string `json:"frame,omitempty"`
	RequestID string            `json:"request_id,omitempty"`
	Attempts  int               `json:"attempts"`
	// Unobserved counts the attempts that may have reached the upstream
	// without an observed outcome: while it is above zero, no refusal of a
	// later attempt proves that nothing changed.
	Unobserved int        `json:"unobserved_attempts,omitempty"`
	AttemptAt  *time.Time `json:"attempted_at,omitempty"`
	DoneAt     *time.Time `json:"done_at,omitempty"`
}

// Errors of the store.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)
