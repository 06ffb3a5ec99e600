package selection

import (
	"context"
	"time"
)

// Approval is a person's decision about one (selection digest, action
// digest) pair. An approval is used at most once and never outlives
// ExpiresAt.
type Approval struct {
	ID               string     `json:"approval_id"`
	RequestID        string     `json:"request_id"`
	SelectionID      string     `json:"selection_id"`
	Digest           string     `json:"digest"`
	ActionDigest     string     `json:"action_digest"`
	TargetCount      int        `json:"target_count"`
	Decision         string     `json:"decision"`
	Who              string     `json:"who"`
	Channel          string     `json:"channel"`
	Acknowledgements []string   `json:"acknowledgements"`
	CreatedAt        time.Time  `json:"created_at"`
	ExpiresAt        time.Time  `json:"expires_at"`
	UsedAt           *time.Time `json:"used_at,omitempty"`
	UsedBy           string     `json:"used_by,omitempty"`
	// Principal is who decided.
	Principal Principal `json:"principal"`
}

// Approval decisions.
const (
	DecisionApproved  = "approved"
	DecisionRejected  = "rejected"
	DecisionDeclined  = "declined"
	DecisionCancelled = "cancelled"
)

// ApprovalStore keeps approvals.
type ApprovalStore interface {
	PutApproval(ctx context.Context, a *Approval) error
	Approvals(ctx context.Context, selectionID string) ([]*Approval, error)
	// UseApproval marks an approval used by an operation; ErrConflict when
	// it was used already.
	UseApproval(ctx context.Context, approvalID, operationID string, at time.Time) error
}

// AuditEvent is one line of the audit trail: a decision (who asked, who
// approved or rejected) or an external call (method, path template, target,
// status, duration). It never holds a credential or a sensitive field.
type AuditEvent struct {
	At           time.Time `json:"at"`
	Kind         string    `json:"kind"`
	OperationID  string    `json:"operation_id,omitempty"`
	SelectionID  string    `json:"selection_id,omitempty"`
	Digest       string    `json:"digest,omitempty"`
	Actor        string    `json:"actor,omitempty"`
	Event        string    `json:"event"`
	Method       string    `json:"method,omitempty"`
	PathTemplate string    `json:"path_template,omitempty"`
	TargetID     string    `json:"target_id,omitempty"`
	Status       int       `json:"status,omitempty"`
	DurationMS   int64     `json:"duration_ms,omitempty"`
	RequestID    string    `json:"request_id,omitempty"`
	Detail       string    `json:"detail,omitempty"`
	// Principal is who asked for what the event records: who previewed,
	// decided, committed; for an external call, who committed the
	// operation that made it.
	Principal Principal `json:"principal"`
}

// Audit event kinds.
const (
	AuditDecision = "decision"
	AuditCall     = "call"
)

// AuditStore keeps the audit trail.
type AuditStore interface {
	Audit(ctx context.Context, events []AuditEvent) error
	// AuditTrail returns the events of an operation and of its selection,
	// oldest first.
	AuditTrail(ctx context.Context, operationID string) ([]AuditEvent, error)
}
