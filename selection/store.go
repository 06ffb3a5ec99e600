package selection

import (
	"context"
	"time"
)

// Store keeps selections, their records, operations and the per-target
// journal. Implementations must be safe for concurrent use, return records
// and targets in ascending id order (byte order), and make Journal atomic:
// after a crash, every entry of a Journal call is there or none is. The
// contract suite in selection/storetest runs against every implementation.
type Store interface {
	// CreateSelection stores a new selection in state building.
	CreateSelection(ctx context.Context, s *Selection) error
	// PutRecords adds records to a building selection.
	PutRecords(ctx context.Context, selectionID string, recs []Record) error
	// FinishSelection stores the final state, digest, committability,
	// blockers and summary.
	FinishSelection(ctx context.Context, s *Selection) error
	// Selection returns a selection or ErrNotFound.
	Selection(ctx context.Context, id string) (*Selection, error)
	// Records pages through a selection's records.
	Records(ctx context.Context, selectionID string, q RecordQuery) ([]Record, error)
	// EachRecord calls fn for every record of a selection in id order,
	// streaming: it never loads them all.
	EachRecord(ctx context.Context, selectionID string, fn func(Record) error) error

	// CreateOperation inserts op. For mode execute there is at most one
	// operation per (selection, action digest): when one exists it is
	// returned with created false and op is not stored.
	CreateOperation(ctx context.Context, op *Operation) (existing *Operation, created bool, err error)
	// Operation returns an operation or ErrNotFound.
	Operation(ctx context.Context, id string) (*Operation, error)
	// OperationsOf lists a selection's operations, oldest first.
	OperationsOf(ctx context.Context, selectionID string) ([]*Operation, error)
	// UpdateOperation stores status, stop reason, counts, finish time.
	UpdateOperation(ctx context.Context, op *Operation) error
	// InitTargets creates a pending target for every member of the
	// selection (with its version and before-values) and returns how many.
	InitTargets(ctx context.Context, operationID, selectionID string) (int, error)
	// Journal applies target entries atomically, in order.
	Journal(ctx context.Context, operationID string, entries []Target) error
	// Targets pages through an operation's targets.
	Targets(ctx context.Context, operationID string, q TargetQuery) ([]Target, error)
	// CountTargets counts an operation's targets by outcome.
	CountTargets(ctx context.Context, operationID string) (map[string]int, error)
	// Recover marks operations still running but not updated since
	// staleBefore as interrupted, and their in-flight targets unknown. It
	// returns the ids of the operations it interrupted.
	Recover(ctx context.Context, staleBefore time.Time) ([]string, error)

	// RecentSelections lists the newest ready selections, newest first.
	RecentSelections(ctx context.Context, limit int) ([]*Selection, error)

	// Meta reads and writes small named values (keys airlock generates).
	Meta(ctx context.Context, key string) ([]byte, error)
	SetMeta(ctx context.Context, key string, value []byte) error
	SetMetaIfAbsent(ctx context.Context, key string, value []byte) ([]byte, error)

	ApprovalStore
	AuditStore

	Close() error
}

// RecordQuery selects a page of records.
type RecordQuery struct {
	After       string
	Limit       int
	Disposition string
	// Group keeps records whose group value (by review dimension) equals
	// the given canonical JSON value.
	Group map[string]string
}

// TargetQuery selects a page of targets.
type TargetQuery struct {
	After   string
	Limit   int
	Outcome string
}
