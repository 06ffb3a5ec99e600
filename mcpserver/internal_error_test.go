package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
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

// refusedStore answers every read of a selection as a store whose database
// refuses connections does (pgx wraps the dial's error).
type refusedStore struct{ selection.Store }

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

func (s refusedStore) Selection(ctx context.Context, id string) (*selection.Selection, error) {
	return nil, fmt.Errorf("failed to connect to `host=127.0.0.1 user=airlock database=airlock`: %w", errRefused)
}

// TestStoreUnavailable_IsRetryableNotABug: a store whose database refuses
// connections answers STORE_UNAVAILABLE, retryable, with a wait, and says
// nothing was written; never INTERNAL_ERROR's "stop and report".
func TestStoreUnavailable_IsRetryableNotABug(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withStore(func(s selection.Store) selection.Store { return refusedStore{Store: s} }))
	r := h.call("get_selection", map[string]any{"selection_id": "sel_0001"})
	p := r.env.Problem
	if p == nil || p.Code != envelope.ProblemStoreUnavailable || !p.Retryable || p.RetryAfterSeconds == nil || *p.RetryAfterSeconds <= 0 || p.RequestID == "" {
		t.Fatalf("want STORE_UNAVAILABLE, retryable after a wait, got %s", r.raw)
	}
	if bytes.Contains(r.raw, []byte("127.0.0.1")) {
		t.Fatalf("the answer names the store's address: %s", r.raw)
	}
}
