package selection_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/memnet"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestGraphQLMutation_OutcomesFollowWhatTheAnswerProves: a GraphQL
// mutation's 200 answer is read for what it proves. Errors without data
// (rejected before execution) and a non-empty userErrors list are refusals:
// failed, nothing changed. Errors beside data are errors during execution:
// the target is unknown until a re-read shows the effect (succeeded) or
// not (it stays unknown: no key, no version, so it is never sent again).
// A clean payload is a success. Each outcome is checked against what the
// server applied.
func TestGraphQLMutation_OutcomesFollowWhatTheAnswerProves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testGraphQLMutationOutcomesFollowWhatTheAnswerProves)
}

func testGraphQLMutationOutcomesFollowWhatTheAnswerProves(t *testing.T) {
	api := fixtures.NewGraphQLLab(6)
	api.Fault(2, fixtures.GQLRefused)
	api.Fault(3, fixtures.GQLUserError)
	api.Fault(4, fixtures.GQLAppliedThenError)
	api.Fault(5, fixtures.GQLErrorNotApplied)
	var nw memnet.Network
	base := nw.Serve(t, api)
	cfg, err := config.Parse(fixtures.GraphQLLabConfig(base))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{DialContext: nw.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	a := rt.Actions["archive"]
	res, err := (&selection.Previewer{Store: store, Clock: upstream.WallClock}).Preview(context.Background(), selection.PreviewRequest{
		Resource: a.Resource, Action: a, Filter: map[string]any{"status": "active"},
		Budget: upstream.Budget{MaxPages: 100, Deadline: time.Minute}, RequestID: "gql", Environment: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Selection.Committable || res.Selection.Summary.Members != 6 {
		t.Fatalf("selection committable %v with %d members; want 6", res.Selection.Committable, res.Selection.Summary.Members)
	}
	e := &selection.Engine{Store: store, Runtime: rt, Clock: upstream.WallClock, Background: context.Background()}
	t.Cleanup(e.Wait)
	cr, p := e.Commit(context.Background(), selection.CommitRequest{SelectionID: res.Selection.ID, ExpectedDigest: res.Selection.Digest,
		Action: res.Selection.Action, Mode: selection.ModeExecute, Wait: time.Minute, RequestID: "gql"})
	if p != nil {
		t.Fatalf("commit: %v", p)
	}
	e.Wait()
	ts, err := store.Targets(context.Background(), cr.Operation.ID, selection.TargetQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]selection.Outcome{1: selection.TargetSucceeded, 2: selection.TargetFailed, 3: selection.TargetFailed,
		4: selection.TargetSucceeded, 5: selection.TargetUnknown, 6: selection.TargetSucceeded}
	for _, tg := range ts {
		id, _ := strconv.Atoi(tg.ID)
		if tg.Outcome != want[id] {
			t.Errorf("account %d: %s (%s); want %s", id, tg.Outcome, tg.Note, want[id])
		}
		applied := api.Applied(id)
		switch tg.Outcome {
		case selection.TargetSucceeded:
			if applied != 1 {
				t.Errorf("account %d succeeded, applied %d times", id, applied)
			}
		case selection.TargetFailed:
			if applied != 0 || tg.Problem == nil || tg.Problem.StateChanged != envelope.StateNone || tg.Problem.UpstreamMessage == "" {
				t.Errorf("account %d failed with %+v, applied %d times; want nothing applied, the API's words quoted", id, tg.Problem, applied)
			}
		case selection.TargetUnknown:
			if applied != 0 || tg.Problem == nil || tg.Problem.StateChanged != envelope.StateUnknown {
				t.Errorf("account %d unknown with %+v, applied %d times", id, tg.Problem, applied)
			}
		}
	}
	if len(ts) != 6 {
		t.Errorf("%d targets journaled, want 6", len(ts))
	}
}
