package selection

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/airlock-mcp/airlock/envelope"
)

// Redacting returns a Store that removes r's secrets from everything it
// writes: records (review fields, before-values, notes), selections,
// operations, journal entries (their problems), approvals and audit events
// never hold a credential, whatever an upstream echoed. A value without a
// trace of a secret is written as it is; one with a trace is written as a
// redacted copy (the caller's value is never changed). Reads pass through.
// Record and target ids are keys and are written as they are. A nil r
// returns s.
func Redacting(s Store, r *envelope.Redactor) Store {
	if r == nil {
		return s
	}
	if rs, ok := s.(*redactingStore); ok && rs.r == r {
		return s
	}
	return &redactingStore{Store: s, r: r}
}

// redactingStore embeds the store it wraps: a method it does not override
// passes through.
type redactingStore struct {
	Store
	r *envelope.Redactor
}

// Unwrap returns the wrapped store.
func (s *redactingStore) Unwrap() Store { return s.Store }

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
func redactedCopy[T any](r *envelope.Redactor, v T) (T, error) {
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
func redactedDoc[T any](r *envelope.Redactor, v *T) (*T, error) {
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
		return s.Store.PutRecords(ctx, selectionID, recs)
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
	return s.Store.PutRecords(ctx, selectionID, out)
}

func (s *redactingStore) CreateSelection(ctx context.Context, sel *Selection) error {
	c, err := redactedDoc(s.r, sel)
	if err != nil {
		return err
	}
	return s.Store.CreateSelection(ctx, c)
}

func (s *redactingStore) FinishSelection(ctx context.Context, sel *Selection) error {
	c, err := redactedDoc(s.r, sel)
	if err != nil {
		return err
	}
	return s.Store.FinishSelection(ctx, c)
}

func (s *redactingStore) CreateOperation(ctx context.Context, op *Operation) (*Operation, bool, error) {
	c, err := redactedDoc(s.r, op)
	if err != nil {
		return nil, false, err
	}
	c.Lease = op.Lease // not part of the document
	existing, created, err := s.Store.CreateOperation(ctx, c)
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
	return s.Store.UpdateOperation(ctx, c)
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
		return s.Store.Journal(ctx, lease, entries)
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
	return s.Store.Journal(ctx, lease, out)
}

// PutScan stores a frozen scan (upstream items, projected) redacted.
func (s *redactingStore) PutScan(ctx context.Context, fs FrozenScan, b ScanBounds) error {
	// Bytes looks for a secret in place: a scan's document can be large,
	// and a string of it would copy it whole.
	fs.Doc = s.r.Bytes(fs.Doc)
	return s.Store.PutScan(ctx, fs, b)
}

func (s *redactingStore) PutApproval(ctx context.Context, a *Approval) error {
	c, err := redactedDoc(s.r, a)
	if err != nil {
		return err
	}
	return s.Store.PutApproval(ctx, c)
}

func (s *redactingStore) Audit(ctx context.Context, events []AuditEvent) error {
	if s.r.Empty() {
		return s.Store.Audit(ctx, events)
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
	return s.Store.Audit(ctx, out)
}

// WithRedactor returns an auditor whose JSON Lines file receives each
// event with r's secrets removed (the store's copy is redacted by
// Redacting).
func (a *Auditor) WithRedactor(r *envelope.Redactor) *Auditor {
	if a == nil || a.file == nil || r == nil {
		return a
	}
	return &Auditor{file: r.Writer(a.file)}
}

// The wrapper is a Store.
var _ Store = (*redactingStore)(nil)
