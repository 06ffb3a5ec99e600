package selection_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// staleOperations is a store whose first read of a selection's operations
// happened before a concurrent commit created one: it answers none.
type staleOperations struct {
	selection.Store
	served bool
}

func (s *staleOperations) OperationsOf(ctx context.Context, selectionID string) ([]*selection.Operation, error) {
	if !s.served {
		s.served = true
		return nil, nil
	}
	return s.Store.OperationsOf(ctx, selectionID)
}

// TestConcurrentCommits_TheLoserGetsTheWinnersOperation: two commits of one
// selection and action under one approval race; the loser read the
// selection's operations before the winner created its own, then found the
// approval spent. It answers with the winner's operation, not an approval
// mismatch: one operation per selection and action, whoever asked.
func TestConcurrentCommits_TheLoserGetsTheWinnersOperation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testConcurrentCommitsTheLoserGetsTheWinnersOperation)
}

func testConcurrentCommitsTheLoserGetsTheWinnersOperation(t *testing.T) {
	api := fixtures.NewWriteLab(4)
	l := newLab(t, t.TempDir(), api, time.Second)
	sel := l.preview("archive_keyed", nil, nil)
	ctx := context.Background()
	ap, p := l.e.Decide(ctx, selection.DecisionRequest{SelectionID: sel.ID, Digest: sel.Digest, Decision: selection.DecisionApproved, Who: "operator"})
	if p != nil {
		t.Fatalf("approve: %v", p)
	}
	req := selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action, Mode: selection.ModeExecute,
		ApprovalID: ap.ID, Wait: time.Minute, RequestID: "winner"}
	won, p := l.e.Commit(ctx, req)
	if p != nil {
		t.Fatalf("winner: %v", p)
	}
	loser := &selection.Engine{Store: &staleOperations{Store: l.store}, Runtime: l.rt, Clock: upstream.WallClock, Background: ctx}
	t.Cleanup(loser.Wait)
	req.RequestID = "loser"
	lost, p := loser.Commit(ctx, req)
	if p != nil {
		t.Fatalf("loser: %v; want the winner's operation", p)
	}
	if lost.Operation.ID != won.Operation.ID || !lost.Replayed {
		t.Fatalf("loser got %s (replayed %v); want %s", lost.Operation.ID, lost.Replayed, won.Operation.ID)
	}
	l.e.Wait()
	l.agree(won.Operation.ID)
}
