package stored

import (
	"time"

	"github.com/airlock-mcp/airlock/selection"
)

// Row is one result row as both stores' drivers scan it: database/sql's
// *Row and *Rows, pgx's Row and Rows.
type Row interface{ Scan(dest ...any) error }

// Rows are a query's rows. Closing them is the caller's: database/sql's
// Close returns an error and pgx's does not.
type Rows interface {
	Row
	Next() bool
	Err() error
}

// The columns each Scan function reads, in its order.
const (
	OperationColumnNames = `doc, updated_at, lease_holder, lease_epoch, lease_expires, subject, client_id`
	DocColumnNames       = `doc, subject, client_id`
	TargetColumnNames    = `id, outcome, version, before, restore, doc, frame`
	RecordColumnNames    = `id, disposition, rule, note, version, source, review, before, groups, restore, frame`
)

// ScanOperation reads a row of OperationColumnNames: the document, with
// the update time, the lease and the principal kept beside it.
func ScanOperation(r Row) (*selection.Operation, error) {
	var doc, holder, subject, clientID string
	var updated, epoch, expires int64
	if err := r.Scan(&doc, &updated, &holder, &epoch, &expires, &subject, &clientID); err != nil {
		return nil, err
	}
	var op selection.Operation
	if err := Doc(doc, &op); err != nil {
		return nil, err
	}
	op.Principal = Principal(subject, clientID)
	if updated > 0 {
		op.UpdatedAt = time.Unix(0, updated).UTC()
	}
	op.Lease = selection.Lease{OperationID: op.ID, Holder: holder, Epoch: epoch}
	if expires > 0 {
		op.Lease.Expires = time.Unix(0, expires).UTC()
	}
	return &op, nil
}

// ScanOperations reads every row of OperationColumnNames.
func ScanOperations(rows Rows) ([]*selection.Operation, error) {
	var out []*selection.Operation
	for rows.Next() {
		op, err := ScanOperation(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, op)
	}
	return out, rows.Err()
}

// ScanDocWho reads a row of DocColumnNames: the document, with the
// principal its columns record (set puts it in place).
func ScanDocWho[T any](r Row, set func(*T, selection.Principal)) (*T, error) {
	var doc, subject, clientID string
	if err := r.Scan(&doc, &subject, &clientID); err != nil {
		return nil, err
	}
	v := new(T)
	if err := Doc(doc, v); err != nil {
		return nil, err
	}
	set(v, Principal(subject, clientID))
	return v, nil
}

// ScanDocsWho reads every row of DocColumnNames.
func ScanDocsWho[T any](rows Rows, set func(*T, selection.Principal)) ([]*T, error) {
	var out []*T
	for rows.Next() {
		v, err := ScanDocWho(rows, set)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// SelectionWho, ApprovalWho and AuditWho put a principal in its place, for
// ScanDocWho.
func SelectionWho(s *selection.Selection, p selection.Principal) { s.Principal = p }

// ApprovalWho: see SelectionWho.
func ApprovalWho(a *selection.Approval, p selection.Principal) { a.Principal = p }

// AuditWho: see SelectionWho.
func AuditWho(e *selection.AuditEvent, p selection.Principal) { e.Principal = p }

// ScanTargets reads every row of TargetColumnNames, the targets of
// operationID.
func ScanTargets(rows Rows, operationID string) ([]selection.Target, error) {
	var out []selection.Target
	for rows.Next() {
		var t selection.Target
		var before, restore, doc, frame string
		if err := rows.Scan(&t.ID, &t.Outcome, &t.Version, &before, &restore, &doc, &frame); err != nil {
			return nil, err
		}
		t.OperationID = operationID
		if err := DecodeTarget(&t, before, restore, doc); err != nil {
			return nil, err
		}
		f, err := decodeFrame(frame)
		if err != nil {
			return nil, err
		}
		t.Frame = f
		out = append(out, t)
	}
	return out, rows.Err()
}

// ScanRecords reads every row of RecordColumnNames.
func ScanRecords(rows Rows) ([]selection.Record, error) {
	var out []selection.Record
	for rows.Next() {
		var r selection.Record
		var rule int64
		var review, before, groups, restore, frame string
		if err := rows.Scan(&r.ID, &r.Disposition, &rule, &r.Note, &r.Version, &r.Source, &review, &before, &groups, &restore, &frame); err != nil {
			return nil, err
		}
		r.Rule = int(rule)
		if err := DecodeRecord(&r, review, before, groups, restore); err != nil {
			return nil, err
		}
		var err error
		if r.Frame, err = decodeFrame(frame); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ScanCounts reads `outcome, COUNT(*)` rows.
func ScanCounts(rows Rows) (map[selection.Outcome]int, error) {
	out := map[selection.Outcome]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[selection.Outcome(k)] = n
	}
	return out, rows.Err()
}

// ScansToDrop reads `id, bytes` rows of the other frozen scans, most
// recently used first, and returns those past b once a scan of kept bytes
// (the one just saved) is counted first.
func ScansToDrop(rows Rows, kept int, b selection.ScanBounds) ([]string, error) {
	var drop []string
	count, total, full := 1, kept, false
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		if full = full || count+1 > b.MaxScans || total+n > b.MaxBytes; full {
			drop = append(drop, id)
			continue
		}
		count, total = count+1, total+n
	}
	return drop, rows.Err()
}

// UnixNano is t in the stores' integer columns: 0 for the zero time.
func UnixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
