package selection

import (
	"context"
	"time"
)

// Store keeps selections, their records, operations and the per-target
// journal. Implementations must be safe for concurrent use, by goroutines
// and by other processes sharing the same database, return records and
// targets in ascending id order (byte order), and make Journal atomic:
// after a crash, every entry of a Journal call is there or none is. The
// contract suite in selection/storetest runs against every implementation
// (selection/sqlitestore, selection/pgstore).
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

	// CreateOperation inserts op with its lease (op.Lease). For mode
	// execute there is at most one operation per (selection, action
	// digest), whichever process asks: when one exists it is returned with
	// created false and op is not stored.
	CreateOperation(ctx context.Context, op *Operation) (existing *Operation, created bool, err error)
	// Operation returns an operation or ErrNotFound.
	Operation(ctx context.Context, id string) (*Operation, error)
	// OperationsOf lists a selection's operations, oldest first.
	OperationsOf(ctx context.Context, selectionID string) ([]*Operation, error)
	// UpdateOperation stores status, stop reason, counts, finish time. It
	// is fenced by op.Lease: ErrLeaseLost when another holder has taken the
	// operation since (its lease epoch moved on), and nothing is written.
	UpdateOperation(ctx context.Context, op *Operation) error
	// InitTargets creates a pending target for every member of the
	// selection (with its version and before-values) that the operation
	// does not have yet, and returns how many targets the operation has.
	// Calling it again creates nothing.
	InitTargets(ctx context.Context, operationID, selectionID string) (int, error)
	// Journal applies target entries atomically, in order, fenced by the
	// lease: when the operation's lease epoch is no longer l.Epoch it
	// returns ErrLeaseLost and applies none of them.
	Journal(ctx context.Context, l Lease, entries []Target) error
	// Targets pages through an operation's targets.
	Targets(ctx context.Context, operationID string, q TargetQuery) ([]Target, error)
	// CountTargets counts an operation's targets by outcome.
	CountTargets(ctx context.Context, operationID string) (map[Outcome]int, error)

	LeaseStore
	ScanStore

	// RecentSelections lists the newest ready selections, newest first.
	RecentSelections(ctx context.Context, limit int) ([]*Selection, error)

	// Meta reads and writes small named values (keys airlock generates).
	Meta(ctx context.Context, key string) ([]byte, error)
	SetMeta(ctx context.Context, key string, value []byte) error
	SetMetaIfAbsent(ctx context.Context, key string, value []byte) ([]byte, error)
	// MetaKeys lists at most limit keys k with from <= k < to, in
	// ascending byte order.
	MetaKeys(ctx context.Context, from, to string, limit int) ([]string, error)
	// DeleteMeta deletes key and every key below it (key + "/" ...), and
	// nothing else ("task/a" is not below "task/ab"); deleting what is
	// not there is no error.
	DeleteMeta(ctx context.Context, key string) error

	ApprovalStore
	CategoryStore
	NonceStore
	AuditStore

	Close() error
}

// CategoryStore remembers the group values that approved commits of an
// action have held, per unknown_category dimension, so that a value never
// approved before asks for review. Values are canonical JSON.
type CategoryStore interface {
	// ApprovedCategories is the set of values of group dim that approved
	// commits of action held: empty, never nil, when none is recorded.
	ApprovedCategories(ctx context.Context, action, dim string) (map[string]bool, error)
	// AddApprovedCategories adds values to that set. A value recorded
	// already stays as it is, and processes adding at once keep each
	// other's values.
	AddApprovedCategories(ctx context.Context, action, dim string, values []string) error
}

// NonceStore keeps the nonces of signed single-use states (an approval
// request's), so that a state is answered once whichever process receives
// the answer.
type NonceStore interface {
	// UseNonce records that usedBy used nonce, keeping the record until
	// keepUntil, unless the nonce is recorded already: it returns who used
	// it first (usedBy when this call did), whichever of several callers
	// asks at once. Records kept until before now are dropped on the way.
	UseNonce(ctx context.Context, nonce, usedBy string, keepUntil, now time.Time) (first string, err error)
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
	Outcome Outcome
}

// LeaseStore keeps the leases of running operations: one process at a time
// runs an operation, and a process that lost its lease writes nothing more.
type LeaseStore interface {
	// AcquireLease takes the operation's lease for holder until now+ttl
	// when no lease on it is live at now (it expired or was never taken),
	// by compare-and-set: of several processes asking at once, one gets
	// it. Taking a lease advances the fencing epoch, so that the previous
	// holder's writes fail, and turns the targets it left in flight into
	// unknown. ErrLeaseHeld when a live lease is held; ErrNotFound for an
	// unknown operation.
	AcquireLease(ctx context.Context, operationID, holder string, now time.Time, ttl time.Duration) (Lease, error)
	// RenewLease extends a lease to now+ttl while its epoch is current;
	// ErrLeaseLost once another holder took the operation.
	RenewLease(ctx context.Context, l Lease, now time.Time, ttl time.Duration) (Lease, error)
	// ExpiredOperations lists the running operations whose lease expired
	// at now, oldest first, at most limit.
	ExpiredOperations(ctx context.Context, now time.Time, limit int) ([]string, error)
}

// ScanStore keeps frozen search_all scans, so that a continuation cursor
// issued by one process continues on any other that shares the store.
type ScanStore interface {
	// PutScan stores a frozen scan (replacing an older revision, never a
	// newer one: of two processes continuing one cursor, the first save
	// stays), then drops scans unused
	// for longer than b.TTL and, least recently used first, those past
	// b.MaxScans or b.MaxBytes (never the one just stored).
	PutScan(ctx context.Context, s FrozenScan, b ScanBounds) error
	// FrozenScan returns a scan and marks it used at now; ErrNotFound when
	// it is unknown or unused since before now-ttl.
	FrozenScan(ctx context.Context, id string, now time.Time, ttl time.Duration) (*FrozenScan, error)
}

// FrozenScan is a stored scan: an opaque document and its revision (each
// store of the same scan carries a higher one).
type FrozenScan struct {
	ID       string
	Revision int
	Doc      []byte
	UsedAt   time.Time
}

// ScanBounds bound the frozen scans a store keeps.
type ScanBounds struct {
	TTL      time.Duration
	MaxScans int
	MaxBytes int
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
