package selection

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-mcp/airlock/redact"
)

// Redacting returns a Store that removes r's secrets from everything it
// writes: records (review fields, before-values, notes), selections,
// operations, journal entries (their problems), approvals and audit events
// never hold a credential, whatever an upstream echoed. A value without a
// trace of a secret is written as it is; one with a trace is written as a
// redacted copy (the caller's value is never changed). Reads pass through.
// Record and target ids are keys and are written as they are. A nil r
// returns s.
func Redacting(s Store, r *redact.Redactor) Store {
	if r == nil {
		return s
	}
	if rs, ok := s.(*redactingStore); ok && rs.r == r {
		return s
	}
	return &redactingStore{inner: s, r: r}
}

// redactingStore forwards every method of the store it wraps explicitly,
// never by embedding: a write method added to Store does not compile here
// until it says how it redacts (a test enumerates the interface to hold
// this).
type redactingStore struct {
	inner Store
	r     *redact.Redactor
}

// Unwrap returns the wrapped store.
func (s *redactingStore) Unwrap() Store { return s.inner }

// suspect reports whether any string in v might hold a secret.
func (s *redactingStore) suspect(v any) bool {
	switch x := v.(type) {
	case string:
		return s.r.MayContain(x)
	case map[string]any:
		for k, e := range x {
			if s.r.MayContain(k) || s.suspect(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if s.suspect(e) {
				return true
			}
		}
	case []string:
		for _, e := range x {
			if s.r.MayContain(e) {
				return true
			}
		}
	}
	return false
}

// redactedCopy returns v after a trip through JSON with every secret
// removed from the encoded bytes (numbers stay json.Number).
func redactedCopy[T any](r *redact.Redactor, v T) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, fmt.Errorf("redact: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(r.Bytes(b)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return out, fmt.Errorf("redact: %w", err)
	}
	return out, nil
}

// redactedDoc returns v, or a redacted copy when its JSON may hold a
// secret: for the rarely written documents (selections, operations,
// approvals), where a copy costs nothing that matters.
func redactedDoc[T any](r *redact.Redactor, v *T) (*T, error) {
	if r.Empty() {
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	if !r.MayContain(string(b)) {
		return v, nil
	}
	out, err := redactedCopy(r, *v)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *redactingStore) recordSuspect(rec *Record) bool {
	return s.r.MayContain(rec.Note) || s.r.MayContain(rec.Version) || s.r.MayContain(rec.Source) ||
		s.suspect(rec.Review) || s.suspect(rec.Before) || s.suspect(rec.Groups) || s.suspect(rec.Restore)
}

func (s *redactingStore) PutRecords(ctx context.Context, selectionID string, recs []Record) error {
	if s.r.Empty() {
		return s.inner.PutRecords(ctx, selectionID, recs)
	}
	var out []Record
	for i := range recs {
		if !s.recordSuspect(&recs[i]) {
			continue
		}
		if out == nil {
			out = append([]Record(nil), recs...)
		}
		c, err := redactedCopy(s.r, recs[i])
		if err != nil {
			return err
		}
		c.ID = recs[i].ID
		out[i] = c
	}
	if out == nil {
		out = recs
	}
	return s.inner.PutRecords(ctx, selectionID, out)
}

func (s *redactingStore) CreateSelection(ctx context.Context, sel *Selection) error {
	c, err := redactedDoc(s.r, sel)
	if err != nil {
		return err
	}
	return s.inner.CreateSelection(ctx, c)
}

func (s *redactingStore) FinishSelection(ctx context.Context, sel *Selection) error {
	c, err := redactedDoc(s.r, sel)
	if err != nil {
		return err
	}
	return s.inner.FinishSelection(ctx, c)
}

func (s *redactingStore) CreateOperation(ctx context.Context, op *Operation) (*Operation, bool, error) {
	c, err := redactedDoc(s.r, op)
	if err != nil {
		return nil, false, err
	}
	c.Lease = op.Lease // not part of the document
	existing, created, err := s.inner.CreateOperation(ctx, c)
	if created && c != op {
		return op, true, err
	}
	return existing, created, err
}

func (s *redactingStore) UpdateOperation(ctx context.Context, op *Operation) error {
	c, err := redactedDoc(s.r, op)
	if err != nil {
		return err
	}
	c.Lease = op.Lease // not part of the document: it fences the update
	return s.inner.UpdateOperation(ctx, c)
}

func (s *redactingStore) targetSuspect(t *Target) bool {
	if s.r.MayContain(t.Note) || s.r.MayContain(t.Version) || s.suspect(t.Before) || s.suspect(t.After) || s.suspect(t.Restore) {
		return true
	}
	// The whole problem, not a list of its members: a member added later
	// (upstream_message quotes the API) cannot slip past.
	return t.Problem != nil && s.r.MayContain(string(t.Problem.Marshal()))
}

func (s *redactingStore) Journal(ctx context.Context, lease Lease, entries []Target) error {
	if s.r.Empty() {
		return s.inner.Journal(ctx, lease, entries)
	}
	var out []Target
	for i := range entries {
		if !s.targetSuspect(&entries[i]) {
			continue
		}
		if out == nil {
			out = append([]Target(nil), entries...)
		}
		c, err := redactedCopy(s.r, entries[i])
		if err != nil {
			return err
		}
		c.OperationID, c.ID = entries[i].OperationID, entries[i].ID
		out[i] = c
	}
	if out == nil {
		out = entries
	}
	return s.inner.Journal(ctx, lease, out)
}

// PutScan stores a frozen scan (upstream items, projected) redacted.
func (s *redactingStore) PutScan(ctx context.Context, fs FrozenScan, b ScanBounds) error {
	// Bytes looks for a secret in place: a scan's document can be large,
	// and a string of it would copy it whole.
	fs.Doc = s.r.Bytes(fs.Doc)
	return s.inner.PutScan(ctx, fs, b)
}

func (s *redactingStore) PutApproval(ctx context.Context, a *Approval) error {
	c, err := redactedDoc(s.r, a)
	if err != nil {
		return err
	}
	return s.inner.PutApproval(ctx, c)
}

func (s *redactingStore) Audit(ctx context.Context, events []AuditEvent) error {
	if s.r.Empty() {
		return s.inner.Audit(ctx, events)
	}
	var out []AuditEvent
	for i, ev := range events {
		if !s.r.MayContain(ev.Detail) && !s.r.MayContain(ev.Actor) && !s.r.MayContain(ev.PathTemplate) && !s.r.MayContain(ev.TargetID) {
			continue
		}
		if out == nil {
			out = append([]AuditEvent(nil), events...)
		}
		c, err := redactedCopy(s.r, ev)
		if err != nil {
			return err
		}
		out[i] = c
	}
	if out == nil {
		out = events
	}
	return s.inner.Audit(ctx, out)
}

// AddApprovedCategories records group values, which come from upstream
// records: a value with a trace of a secret is recorded redacted, as the
// selection it was read from holds it.
func (s *redactingStore) AddApprovedCategories(ctx context.Context, action, dim string, values []string) error {
	if s.r.Empty() || !s.suspect(values) {
		return s.inner.AddApprovedCategories(ctx, action, dim, values)
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = s.r.String(v)
	}
	return s.inner.AddApprovedCategories(ctx, action, dim, out)
}

// The methods below read, or write only what airlock generates (ids,
// keys, nonces, leases, its own meta values): they pass through.

func (s *redactingStore) Selection(ctx context.Context, id string) (*Selection, error) {
	return s.inner.Selection(ctx, id)
}

func (s *redactingStore) Records(ctx context.Context, selectionID string, q RecordQuery) ([]Record, error) {
	return s.inner.Records(ctx, selectionID, q)
}

func (s *redactingStore) EachRecord(ctx context.Context, selectionID string, fn func(Record) error) error {
	return s.inner.EachRecord(ctx, selectionID, fn)
}

func (s *redactingStore) Operation(ctx context.Context, id string) (*Operation, error) {
	return s.inner.Operation(ctx, id)
}

func (s *redactingStore) OperationsOf(ctx context.Context, selectionID string) ([]*Operation, error) {
	return s.inner.OperationsOf(ctx, selectionID)
}

func (s *redactingStore) InitTargets(ctx context.Context, operationID, selectionID string) (int, error) {
	return s.inner.InitTargets(ctx, operationID, selectionID)
}

func (s *redactingStore) Targets(ctx context.Context, operationID string, q TargetQuery) ([]Target, error) {
	return s.inner.Targets(ctx, operationID, q)
}

func (s *redactingStore) CountTargets(ctx context.Context, operationID string) (map[Outcome]int, error) {
	return s.inner.CountTargets(ctx, operationID)
}

func (s *redactingStore) AcquireLease(ctx context.Context, operationID, holder string, now time.Time, ttl time.Duration) (Lease, error) {
	return s.inner.AcquireLease(ctx, operationID, holder, now, ttl)
}

func (s *redactingStore) RenewLease(ctx context.Context, l Lease, now time.Time, ttl time.Duration) (Lease, error) {
	return s.inner.RenewLease(ctx, l, now, ttl)
}

func (s *redactingStore) ExpiredOperations(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return s.inner.ExpiredOperations(ctx, now, limit)
}

func (s *redactingStore) FrozenScan(ctx context.Context, id string, now time.Time, ttl time.Duration) (*FrozenScan, error) {
	return s.inner.FrozenScan(ctx, id, now, ttl)
}

func (s *redactingStore) RecentSelections(ctx context.Context, limit int) ([]*Selection, error) {
	return s.inner.RecentSelections(ctx, limit)
}

func (s *redactingStore) Meta(ctx context.Context, key string) ([]byte, error) {
	return s.inner.Meta(ctx, key)
}

func (s *redactingStore) SetMeta(ctx context.Context, key string, value []byte) error {
	return s.inner.SetMeta(ctx, key, value)
}

func (s *redactingStore) SetMetaIfAbsent(ctx context.Context, key string, value []byte) ([]byte, error) {
	return s.inner.SetMetaIfAbsent(ctx, key, value)
}

func (s *redactingStore) MetaKeys(ctx context.Context, from, to string, limit int) ([]string, error) {
	return s.inner.MetaKeys(ctx, from, to, limit)
}

func (s *redactingStore) DeleteMeta(ctx context.Context, key string) error {
	return s.inner.DeleteMeta(ctx, key)
}

func (s *redactingStore) Approvals(ctx context.Context, selectionID string) ([]*Approval, error) {
	return s.inner.Approvals(ctx, selectionID)
}

func (s *redactingStore) UseApproval(ctx context.Context, approvalID, operationID string, at time.Time) error {
	return s.inner.UseApproval(ctx, approvalID, operationID, at)
}

func (s *redactingStore) ApprovedCategories(ctx context.Context, action, dim string) (map[string]bool, error) {
	return s.inner.ApprovedCategories(ctx, action, dim)
}

func (s *redactingStore) UseNonce(ctx context.Context, nonce, usedBy string, keepUntil, now time.Time) (string, error) {
	return s.inner.UseNonce(ctx, nonce, usedBy, keepUntil, now)
}

func (s *redactingStore) AuditTrail(ctx context.Context, operationID string) ([]AuditEvent, error) {
	return s.inner.AuditTrail(ctx, operationID)
}

func (s *redactingStore) Close() error { return s.inner.Close() }

// WithRedactor returns an auditor whose JSON Lines file receives each
// event with r's secrets removed (the store's copy is redacted by
// Redacting).
func (a *Auditor) WithRedactor(r *redact.Redactor) *Auditor {
	if a == nil || a.file == nil || r == nil {
		return a
	}
	return &Auditor{file: r.Writer(a.file)}
}

// The wrapper is a Store.
var _ Store = (*redactingStore)(nil)
