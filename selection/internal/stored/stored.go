// Package stored encodes and scans the rows every store keeps the same
// way: the JSON columns of records, the document of a target, the columns
// of an operation and of a document with its principal. Both stores use it
// so that what one wrote reads back identically from either.
package stored

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/selection"
)

// InFlightNote is the note of a target that was in flight when its lease
// was taken over: its write may or may not have reached the upstream.
const InFlightNote = "the airlock process sending this write stopped or lost the operation's lease while it was in flight; its outcome was not observed"

// RecordColumns are a record's JSON columns: review, before, groups and
// restore values, never null.
func RecordColumns(r *selection.Record) (review, before, groups, restore string) {
	return jsonvalue.Marshal(nonNil(r.Review)), jsonvalue.Marshal(nonNil(r.Before)), jsonvalue.Marshal(nonNil(r.Groups)), jsonvalue.Marshal(nonNil(r.Restore))
}

// DecodeRecord reads a record's JSON columns into r.
func DecodeRecord(r *selection.Record, review, before, groups, restore string) error {
	if err := errors.Join(jsonvalue.UnmarshalMap(review, &r.Review), jsonvalue.UnmarshalMap(before, &r.Before),
		jsonvalue.UnmarshalMap(groups, &r.Groups), jsonvalue.UnmarshalMap(restore, &r.Restore)); err != nil {
		return err
	}
	if len(r.Restore) == 0 {
		r.Restore = nil
	}
	return nil
}

// FrameColumn is a record's or target's frame column, never null.
func FrameColumn(f map[string]string) string {
	if f == nil {
		return "{}"
	}
	return jsonvalue.Marshal(f)
}

// decodeFrame reads a frame column; an empty object is no frame.
func decodeFrame(s string) (map[string]string, error) {
	var f map[string]string
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return nil, fmt.Errorf("decode frame: %w", err)
	}
	if len(f) == 0 {
		return nil, nil
	}
	return f, nil
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// targetDoc is what a target row keeps besides its key, outcome, version,
// before-values and restore values.
type targetDoc struct {
	HTTPStatus int            `json:"http_status,omitempty"`
	Problem    any            `json:"problem,omitempty"`
	Note       string         `json:"note,omitempty"`
	After      map[string]any `json:"after,omitempty"`
	RequestID  string         `json:"request_id,omitempty"`
	Attempts   int            `json:"attempts,omitempty"`
	Unobserved int            `json:"unobserved_attempts,omitempty"`
	AttemptAt  *time.Time     `json:"attempt_at,omitempty"`
	DoneAt     *time.Time     `json:"done_at,omitempty"`
}

// TargetDoc is the document of a journal entry.
func TargetDoc(t *selection.Target) string {
	doc := targetDoc{HTTPStatus: t.HTTPStatus, Note: t.Note, After: t.After, RequestID: t.RequestID,
		Attempts: t.Attempts, Unobserved: t.Unobserved, AttemptAt: t.AttemptAt, DoneAt: t.DoneAt}
	if t.Problem != nil {
		doc.Problem = t.Problem
	}
	return jsonvalue.Marshal(doc)
}

// DecodeTarget reads a target row's before, restore and document columns
// into t.
func DecodeTarget(t *selection.Target, before, restore, doc string) error {
	var d struct {
		targetDoc
		Problem json.RawMessage `json:"problem,omitempty"`
	}
	if err := errors.Join(jsonvalue.UnmarshalMap(before, &t.Before), jsonvalue.Unmarshal(doc, &d), jsonvalue.UnmarshalMap(restore, &t.Restore)); err != nil {
		return err
	}
	if len(t.Restore) == 0 {
		t.Restore = nil
	}
	t.HTTPStatus, t.Note, t.After, t.RequestID, t.Attempts, t.Unobserved, t.AttemptAt, t.DoneAt =
		d.HTTPStatus, d.Note, d.After, d.RequestID, d.Attempts, d.Unobserved, d.AttemptAt, d.DoneAt
	if len(d.Problem) > 0 {
		if err := json.Unmarshal(d.Problem, &t.Problem); err != nil {
			return fmt.Errorf("decode target problem: %w", err)
		}
	}
	return nil
}

// Doc decodes a stored document (a selection, an operation, an approval,
// an audit event) into v.
func Doc(doc string, v any) error { return jsonvalue.Unmarshal(doc, v) }

// Encode is a document's stored form.
func Encode(v any) string { return jsonvalue.Marshal(v) }

// QuoteKey quotes a group dimension for a JSON path.
func QuoteKey(k string) string {
	b, _ := json.Marshal(k)
	return string(b)
}

// SortedKeys are m's keys in byte order.
func SortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Migration is one numbered schema change, read from a file named
// NNNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads the migrations of dir in fsys, in version order. The
// versions must run 1, 2, 3… without a gap.
func Migrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %q: want NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %d_%s: versions must run from 1 without a gap", m.Version, m.Name)
		}
	}
	return out, nil
}

// NewerSchemaError refuses a store whose schema a newer airlock wrote.
type NewerSchemaError struct {
	Store   string
	Version int
	Known   int
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("the store %s has schema version %d, newer than this airlock knows (%d): upgrade airlock, or give it another store", e.Store, e.Version, e.Known)
}

// DefaultScanBounds are the frozen scans a store keeps when the caller
// gives no bounds.
var DefaultScanBounds = selection.ScanBounds{TTL: 15 * time.Minute, MaxScans: 64, MaxBytes: 256 << 20}

// PrincipalColumns are the subject and client_id columns that record p:
// never an empty subject (see selection.Principal.Recorded).
func PrincipalColumns(p selection.Principal) (subject, clientID string) {
	r := p.Recorded()
	return r.Subject, r.ClientID
}

// Principal is the principal a row's subject and client_id columns hold.
func Principal(subject, clientID string) selection.Principal {
	return selection.Principal{Subject: subject, ClientID: clientID}.Recorded()
}
