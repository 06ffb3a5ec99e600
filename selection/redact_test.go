package selection_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/redact/leaktest"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/selection/storetest"
)

// openSQLite opens a SQLite store the test closes.
func openSQLite(t *testing.T, path string) *sqlitestore.SQLite {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const canary = "cnry-3f9a1c7e-demo-credential"

// TestRedactingStoreContract: the redacting store is a Store like any
// other (the contract suite, which stores no secret, passes through it).
func TestRedactingStoreContract(t *testing.T) {
	t.Parallel()
	red := redact.New(canary)
	storetest.Run(t, storetest.Opener{
		Open: func(t *testing.T) selection.Store {
			return selection.Redacting(openSQLite(t, filepath.Join(t.TempDir(), "airlock.db")), red)
		},
		Reopen: func(t *testing.T, s selection.Store) selection.Store {
			inner := s.(interface{ Unwrap() selection.Store }).Unwrap()
			path := inner.(*sqlitestore.SQLite).Path()
			s.Close()
			return selection.Redacting(openSQLite(t, path), red)
		},
	})
}

// TestRedactingStore_NoDocumentHoldsTheCredential: records, selections,
// operations, journal entries, approvals and audit events that carry an
// echoed credential are written without it (the file and its WAL are
// checked), and so are approved group values, while the caller's values
// are left as they were.
func TestRedactingStore_NoDocumentHoldsTheCredential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "airlock.db")
	st := selection.Redacting(openSQLite(t, path), redact.New("Bearer "+canary, canary))
	b64 := base64.StdEncoding.EncodeToString([]byte("svc:" + canary))
	now := time.Now()
	sel := &selection.Selection{ID: "sel_1", Resource: "r", Kind: selection.KindScope, State: selection.StateBuilding, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
		Summary: selection.Summary{Warnings: []envelope.Warning{{Code: "X", Message: "echo " + canary}}}}
	if err := st.CreateSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	recs := []selection.Record{
		{ID: "a", Disposition: selection.Member, Review: map[string]any{"name": "Bearer " + canary, "nested": map[string]any{"k": []any{b64}}}, Before: map[string]any{"owner": nil}},
		{ID: "b", Disposition: selection.Member, Review: map[string]any{"name": "plain"}},
	}
	if err := st.PutRecords(ctx, "sel_1", recs); err != nil {
		t.Fatal(err)
	}
	if recs[0].Review["name"] != "Bearer "+canary {
		t.Fatal("the caller's record was changed")
	}
	sel.State = selection.StateReady
	if err := st.FinishSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	op := &selection.Operation{ID: "op_1", SelectionID: "sel_1", Mode: selection.ModeExecute, Status: selection.OpRunning, StopReason: "stopped at " + canary, CreatedAt: now, UpdatedAt: now,
		Lease: selection.Lease{OperationID: "op_1", Holder: "test", Epoch: 1, Expires: now.Add(time.Hour)}}
	if got, created, err := st.CreateOperation(ctx, op); err != nil || !created || got != op {
		t.Fatalf("create operation: %v %v", created, err)
	}
	if _, err := st.InitTargets(ctx, "op_1", "sel_1"); err != nil {
		t.Fatal(err)
	}
	p := envelope.NewProblem(envelope.ProblemUpstreamRejected, "detail "+canary)
	p.Errors = []envelope.FieldError{{Field: "upstream." + canary, Code: envelope.FieldUpstreamRejected, Message: "m"}}
	if err := st.Journal(ctx, op.Lease, []selection.Target{{OperationID: "op_1", ID: "a", Outcome: selection.TargetFailed, Problem: p, Note: canary}}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutApproval(ctx, &selection.Approval{ID: "ap_1", SelectionID: "sel_1", Who: "os user " + canary, CreatedAt: now, ExpiresAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.Audit(ctx, []selection.AuditEvent{{At: now, Kind: selection.AuditCall, OperationID: "op_1", Event: "request", Detail: canary}}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddApprovedCategories(ctx, "pause", "owner", []string{`"plain"`, `"` + canary + `"`}); err != nil {
		t.Fatal(err)
	}
	if seen, err := st.ApprovedCategories(ctx, "pause", "owner"); err != nil || len(seen) != 2 || !seen[`"plain"`] {
		t.Fatalf("the approved values, one redacted: %v %v", seen, err)
	}
	targets, err := st.Targets(ctx, "op_1", selection.TargetQuery{Limit: 10})
	if err != nil || len(targets) != 2 || targets[0].Problem == nil || targets[0].Problem.Code != envelope.ProblemUpstreamRejected {
		t.Fatalf("the redacted journal still reads back: %+v %v", targets, err)
	}
	st.Close()
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if hits := leaktest.Hits(b, canary); len(hits) > 0 {
			t.Fatalf("%s holds the credential (%v)", filepath.Base(f), hits)
		}
	}
}

// BenchmarkRedactingPutRecords measures what the redaction costs a
// preview's store writes: 10,000 records (500 per call, as the previewer
// batches them) into SQLite directly and through the redacting store.
func BenchmarkRedactingPutRecords(b *testing.B) {
	recs := benchRecords(10_000)
	red := redact.New("Bearer "+canary, canary, "cnry-b81d04aa-admin-credential")
	for _, tc := range []struct {
		name string
		wrap func(selection.Store) selection.Store
	}{
		{"sqlite", func(s selection.Store) selection.Store { return s }},
		{"redacting", func(s selection.Store) selection.Store { return selection.Redacting(s, red) }},
		// The redaction alone, in front of a store that writes nothing.
		{"redaction_only", func(s selection.Store) selection.Store { return selection.Redacting(discardRecords{s}, red) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				b.StopTimer()
				st := tc.wrap(benchStore(b))
				n++
				sel := benchSelection(fmt.Sprintf("sel_%d", n))
				if err := st.CreateSelection(context.Background(), sel); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for i := 0; i < len(recs); i += 500 {
					if err := st.PutRecords(context.Background(), sel.ID, recs[i:i+500]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// discardRecords drops records instead of writing them.
type discardRecords struct{ selection.Store }

func (discardRecords) PutRecords(context.Context, string, []selection.Record) error { return nil }
