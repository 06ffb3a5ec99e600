package storetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/selection/storetest"
)

// brokenEnv names, in the child process, the store method that fails.
const brokenEnv = "STORETEST_BROKEN_METHOD"

const injected = "injected: disk full"

// broken is a SQLite store one of whose setup writes always fails.
type broken struct {
	selection.Store
	method string
}

func (b *broken) fail(method string) error {
	if b.method == method {
		return errors.New(injected)
	}
	return nil
}

func (b *broken) CreateSelection(ctx context.Context, s *selection.Selection) error {
	if err := b.fail("CreateSelection"); err != nil {
		return err
	}
	return b.Store.CreateSelection(ctx, s)
}

func (b *broken) PutRecords(ctx context.Context, id string, recs []selection.Record) error {
	if err := b.fail("PutRecords"); err != nil {
		return err
	}
	return b.Store.PutRecords(ctx, id, recs)
}

func (b *broken) CreateOperation(ctx context.Context, op *selection.Operation) (*selection.Operation, bool, error) {
	if err := b.fail("CreateOperation"); err != nil {
		return nil, false, err
	}
	return b.Store.CreateOperation(ctx, op)
}

// TestSetupFailures_FailTheSuiteAndNameTheirCause: a store that refuses
// what a contract test sets up fails that test, and the failure names the
// refusal, not a later check that happened to trip over it.
func TestSetupFailures_FailTheSuiteAndNameTheirCause(t *testing.T) {
	if m := os.Getenv(brokenEnv); m != "" {
		storetest.Run(t, storetest.Opener{Open: func(t *testing.T) selection.Store {
			s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "airlock.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return &broken{Store: s, method: m}
		}})
		return
	}
	for _, tc := range []struct{ subtest, method string }{
		{"JournalIsAtomicAndOrdered", "PutRecords"},
		{"MetaApprovalsAudit", "CreateSelection"},
		{"MetaApprovalsAudit", "CreateOperation"},
	} {
		t.Run(tc.subtest+"/"+tc.method, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestSetupFailures_FailTheSuiteAndNameTheirCause$/^"+tc.subtest+"$", "-test.count", "1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+tc.method)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store whose %s fails:\n%s", tc.method, out)
			}
			if !strings.Contains(string(out), "setup: ") || !strings.Contains(string(out), injected) {
				t.Fatalf("the failure does not name the refused setup:\n%s", out)
			}
		})
	}
}
