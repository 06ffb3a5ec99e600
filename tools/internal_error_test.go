package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

// errDiskGone is a store failure with detail that must reach the log and
// never the caller.
var errDiskGone = errors.New("disk I/O error: sqlite page 4711 unreadable")

// failingStore fails one of its methods with errDiskGone.
type failingStore struct {
	selection.Store
	fail string
}

func (s failingStore) Selection(ctx context.Context, id string) (*selection.Selection, error) {
	if s.fail == "Selection" {
		return nil, errDiskGone
	}
	return s.Store.Selection(ctx, id)
}

func (s failingStore) Records(ctx context.Context, id string, q selection.RecordQuery) ([]selection.Record, error) {
	if s.fail == "Records" {
		return nil, errDiskGone
	}
	return s.Store.Records(ctx, id, q)
}

func (s failingStore) PutRecords(ctx context.Context, id string, recs []selection.Record) error {
	if s.fail == "PutRecords" {
		return errDiskGone
	}
	return s.Store.PutRecords(ctx, id, recs)
}

// TestInternalError_LogsItsCauseUnderTheRequestIDAndAnswersNothingOfIt: a
// store failure answers INTERNAL_ERROR with a request id and no word of
// the cause; the log holds the cause under that request id and the tool's
// name, so that an operator given the request id finds it.
func TestInternalError_LogsItsCauseUnderTheRequestIDAndAnswersNothingOfIt(t *testing.T) {
	for _, c := range []struct {
		fail, tool string
		args       map[string]any
	}{
		{"Selection", "get_selection", map[string]any{"selection_id": "sel_0001"}},
		{"Records", "preview_selection", seedPreview(nil)},
		{"PutRecords", "preview_selection", seedPreview(nil)},
	} {
		t.Run(c.fail, func(t *testing.T) {
			h := newHarness(t, withStore(func(s selection.Store) selection.Store { return failingStore{Store: s, fail: c.fail} }))
			r := h.call(c.tool, c.args)
			p := r.env.Problem
			if p == nil || p.Code != envelope.ProblemInternal || p.RequestID == "" {
				t.Fatalf("want INTERNAL_ERROR with a request id, got %s", r.raw)
			}
			whole, _ := json.Marshal(r.res)
			for _, word := range []string{"disk", "sqlite", "4711"} {
				if bytes.Contains(whole, []byte(word)) {
					t.Fatalf("the answer tells %q of the cause: %s", word, whole)
				}
			}
			var found bool
			for _, line := range bytes.Split(h.logs.Bytes(), []byte("\n")) {
				var rec map[string]any
				if json.Unmarshal(line, &rec) != nil || rec["msg"] != "internal error" {
					continue
				}
				err, _ := rec["err"].(string)
				if rec["request_id"] == p.RequestID && rec["tool"] == c.tool && strings.Contains(err, errDiskGone.Error()) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no log line holds the cause under request id %s and tool %s; the logs:\n%s", p.RequestID, c.tool, h.logs.Bytes())
			}
		})
	}
}
