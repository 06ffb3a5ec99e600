package selection_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/memnet"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/upstream"
)

// labT is what both *testing.T and *rapid.T offer.
type labT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// lab is a WriteLab, airlock's runtime for it, a store and a commit engine.
type lab struct {
	t     labT
	api   *fixtures.WriteLab
	rt    *upstream.Runtime
	store *sqlitestore.SQLite
	e     *selection.Engine
}

const labReason = "account review 2026"

func newLab(t labT, dir string, api *fixtures.WriteLab, timeout time.Duration) *lab {
	t.Helper()
	var nw memnet.Network
	base := nw.Serve(t, api)
	// The writes that land later land before the test ends (in a synctest
	// bubble, nothing may outlive it).
	t.Cleanup(api.Quiesce)
	cfg, err := config.Parse(fixtures.WriteLabConfig(base, timeout))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{DialContext: nw.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := &selection.Engine{Store: store, Runtime: rt, Clock: upstream.WallClock, Background: context.Background()}
	t.Cleanup(e.Wait)
	return &lab{t: t, api: api, rt: rt, store: store, e: e}
}

// preview freezes the active accounts (or the named ids) for action.
func (l *lab) preview(action string, ids []string, filter map[string]any) *selection.Selection {
	l.t.Helper()
	a := l.rt.Actions[action]
	p := &selection.Previewer{Store: l.store, Clock: upstream.WallClock}
	if filter == nil && ids == nil {
		filter = map[string]any{"status": "active"}
	}
	res, err := p.Preview(context.Background(), selection.PreviewRequest{Resource: a.Resource, Action: a, Params: map[string]any{"reason": labReason},
		Filter: filter, IDs: ids, Budget: upstream.Budget{MaxPages: 1000, Deadline: time.Minute}, RequestID: "lab", Environment: "lab"})
	if err != nil {
		l.t.Fatalf("preview: %v", err)
	}
	return res.Selection
}

func (l *lab) commit(sel *selection.Selection, resume bool) *selection.Operation {
	l.t.Helper()
	res, p := l.e.Commit(context.Background(), selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, Resume: resume, Wait: time.Minute, RequestID: "lab"})
	if p != nil {
		l.t.Fatalf("commit: %v", p)
	}
	l.e.Wait()
	op, err := l.e.Operation(context.Background(), res.Operation.ID)
	if err != nil {
		l.t.Fatal(err)
	}
	return op
}

func (l *lab) targets(opID string) map[string]selection.Target {
	l.t.Helper()
	out := map[string]selection.Target{}
	after := ""
	for {
		ts, err := l.store.Targets(context.Background(), opID, selection.TargetQuery{After: after, Limit: 500})
		if err != nil {
			l.t.Fatal(err)
		}
		if len(ts) == 0 {
			return out
		}
		for _, t := range ts {
			out[t.ID] = t
		}
		after = ts[len(ts)-1].ID
	}
}

// contradictions compares the journal with the lab's own log of applied
// writes, once every held write has landed: a target the journal calls
// succeeded was applied exactly once; skipped, failed or pending ones were
// not applied; unknown may be either; none was applied twice.
func (l *lab) contradictions(opID string) (bad []string, doubles int) {
	l.api.Quiesce()
	applied := l.api.Applied()
	for id, t := range l.targets(opID) {
		n := applied[id]
		if n > 1 {
			doubles++
		}
		ok := true
		switch t.Outcome {
		case selection.TargetSucceeded:
			ok = n == 1
		case selection.TargetSkipped, selection.TargetFailed, selection.TargetPending:
			ok = n == 0
		case selection.TargetUnknown:
			ok = n <= 1
		case selection.TargetInFlight:
			ok = false
		}
		if !ok || n > 1 {
			bad = append(bad, fmt.Sprintf("%s: journal %s (attempts %d, note %q), lab applied %d", id, t.Outcome, t.Attempts, t.Note, n))
		}
	}
	sort.Strings(bad)
	return bad, doubles
}

// oneFault is a lab of three accounts, one of them with a fault, whose
// writes time out after timeout.
func oneFault(t *testing.T, id string, f fixtures.LabFault, timeout time.Duration) (*fixtures.WriteLab, *lab) {
	t.Helper()
	api := fixtures.NewWriteLab(3)
	api.SetFault(id, f)
	return api, newLab(t, t.TempDir(), api, timeout)
}

func (l *lab) agree(opID string) {
	l.t.Helper()
	if bad, doubles := l.contradictions(opID); len(bad) > 0 || doubles > 0 {
		l.t.Fatalf("%d contradiction(s), %d double apply(ies):\n%s", len(bad), doubles, strings.Join(bad, "\n"))
	}
}

// TestLostAnswerThenInFlight409_IsNotSkipped: a keyed write whose answer is
// lost is re-read, found untouched (still in flight), and sent again with
// the same key; the upstream refuses the repeat (409: the first is in
// flight). That refusal proves nothing: the target stays unknown until a
// re-read shows the first write applied. Every attempt is journaled.
func TestLostAnswerThenInFlight409_IsNotSkipped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testLostAnswerThenInFlight409IsNotSkipped)
}

func testLostAnswerThenInFlight409IsNotSkipped(t *testing.T) {
	_, l := oneFault(t, "acc-0001", fixtures.LabFault{Kind: fixtures.LabInFlight409, Delay: 900 * time.Millisecond}, 200*time.Millisecond)
	op := l.commit(l.preview("archive_keyed", nil, nil), false)
	tg := l.targets(op.ID)["acc-0001"]
	if tg.Outcome != selection.TargetSucceeded || tg.Attempts < 2 {
		t.Fatalf("acc-0001: %s after %d attempt(s) (%q); want succeeded after a re-send", tg.Outcome, tg.Attempts, tg.Note)
	}
	l.agree(op.ID)
}

// TestSlowerThanTheTimeout_IsSettledByReReadingNotLeftUnknown: a write
// that lands after the action's timeout is found applied by the
// reconciliation's later re-reads, even when a re-send would not be safe.
func TestSlowerThanTheTimeout_IsSettledByReReadingNotLeftUnknown(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"archive_reread", "archive_if_match", "archive_version", "archive_keyed"} {
		t.Run(action, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := fixtures.NewWriteLab(4)
				api.SetFault("acc-0002", fixtures.LabFault{Kind: fixtures.LabSlow, Delay: 700 * time.Millisecond})
				l := newLab(t, t.TempDir(), api, 150*time.Millisecond)
				op := l.commit(l.preview(action, nil, nil), false)
				if op.Status != selection.OpCompleted || op.Counts[selection.TargetSucceeded] != 4 {
					t.Fatalf("status %s, counts %v; want completed with 4 succeeded", op.Status, op.Counts)
				}
				l.agree(op.ID)
			})
		})
	}
}

// TestStaleVersionRefusal_IsSkippedOnlyWhenNothingWasSentBefore: a 412 or
// 409 to a first attempt is a refusal (skipped, nothing changed).
func TestStaleVersionRefusal_IsSkippedOnlyWhenNothingWasSentBefore(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"archive_if_match", "archive_version"} {
		t.Run(action, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := fixtures.NewWriteLab(3)
				api.SetFault("acc-0000", fixtures.LabFault{Kind: fixtures.LabStale})
				l := newLab(t, t.TempDir(), api, time.Second)
				op := l.commit(l.preview(action, nil, nil), false)
				if tg := l.targets(op.ID)["acc-0000"]; tg.Outcome != selection.TargetSkipped || tg.Problem == nil || tg.Problem.StateChanged != "none" {
					t.Fatalf("acc-0000: %s (%+v); want skipped, state_changed none", tg.Outcome, tg.Problem)
				}
				l.agree(op.ID)
			})
		})
	}
}

// TestAppliedThen500_IsReconciledAsSucceeded: a 5xx after the write was
// applied is unknown, then succeeded once a re-read shows the effect.
func TestAppliedThen500_IsReconciledAsSucceeded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testAppliedThen500IsReconciledAsSucceeded)
}

func testAppliedThen500IsReconciledAsSucceeded(t *testing.T) {
	_, l := oneFault(t, "acc-0001", fixtures.LabFault{Kind: fixtures.LabServerError}, time.Second)
	op := l.commit(l.preview("archive_if_match", nil, nil), false)
	if tg := l.targets(op.ID)["acc-0001"]; tg.Outcome != selection.TargetSucceeded || tg.Attempts != 1 {
		t.Fatalf("acc-0001: %s after %d attempt(s); want succeeded without a re-send", tg.Outcome, tg.Attempts)
	}
	l.agree(op.ID)
}

// TestRedirectedWrite_IsNotFollowedAndUnknownUntilReRead: a write answered
// with a redirect to the same host is not followed (the body and the
// credential are not re-sent), is unknown until re-read, and stops the
// operation.
func TestRedirectedWrite_IsNotFollowedAndUnknownUntilReRead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testRedirectedWriteIsNotFollowedAndUnknownUntilReRead)
}

func testRedirectedWriteIsNotFollowedAndUnknownUntilReRead(t *testing.T) {
	api := fixtures.NewWriteLab(5)
	api.SetFault("acc-0000", fixtures.LabFault{Kind: fixtures.LabRedirect})
	l := newLab(t, t.TempDir(), api, time.Second)
	op := l.commit(l.preview("archive_reread", nil, nil), false)
	if api.RedirectsFollowed() != 0 {
		t.Fatalf("the redirect was followed %d time(s)", api.RedirectsFollowed())
	}
	tg := l.targets(op.ID)["acc-0000"]
	if op.Status != selection.OpStopped || tg.Outcome != selection.TargetUnknown || tg.HTTPStatus != 307 {
		t.Fatalf("status %s (%s), acc-0000 %s %d; want stopped with the redirected write unknown", op.Status, op.StopReason, tg.Outcome, tg.HTTPStatus)
	}
	l.agree(op.ID)
}

// TestIdsThatNeedEscaping_AreEscapedOnceAndDotSegmentsRefused: ids with a
// space, a slash, a percent sign or a non-ASCII letter reach their own
// record; "." and ".." are never sent (ambiguous at preview).
func TestIdsThatNeedEscaping_AreEscapedOnceAndDotSegmentsRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testIdsThatNeedEscapingAreEscapedOnceAndDotSegmentsRefused)
}

func testIdsThatNeedEscapingAreEscapedOnceAndDotSegmentsRefused(t *testing.T) {
	odd := []string{"a b", "x/y", "50%", "zoë", "q?x=1#f"}
	api := fixtures.NewWriteLab(2, append(append([]string(nil), odd...), ".", "..")...)
	l := newLab(t, t.TempDir(), api, time.Second)
	sel := l.preview("archive_if_match", append(append([]string(nil), odd...), ".", ".."), nil)
	if sel.Committable || sel.Summary.Ambiguous != 2 {
		t.Fatalf("committable %v with %d ambiguous; want the two dot ids ambiguous and the selection blocked", sel.Committable, sel.Summary.Ambiguous)
	}
	sel = l.preview("archive_if_match", odd, nil)
	op := l.commit(sel, false)
	if op.Counts[selection.TargetSucceeded] != len(odd) {
		t.Fatalf("counts %v; want all %d odd ids succeeded", op.Counts, len(odd))
	}
	applied := api.Applied()
	for _, id := range odd {
		if applied[id] != 1 {
			t.Errorf("%q applied %d times", id, applied[id])
		}
	}
	l.agree(op.ID)
}

// TestIfMatchWithoutVersion_IsAmbiguousNeverSentUnconditionally: a target
// without the version its condition needs blocks the selection.
func TestIfMatchWithoutVersion_IsAmbiguousNeverSentUnconditionally(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testIfMatchWithoutVersionIsAmbiguousNeverSentUnconditionally)
}

func testIfMatchWithoutVersionIsAmbiguousNeverSentUnconditionally(t *testing.T) {
	api := fixtures.NewWriteLab(4)
	api.Change("acc-0002", map[string]any{"version": nil})
	l := newLab(t, t.TempDir(), api, time.Second)
	sel := l.preview("archive_if_match", nil, nil)
	if sel.Committable || sel.Summary.Ambiguous != 1 {
		t.Fatalf("committable %v, ambiguous %d; want one ambiguous record and no commit", sel.Committable, sel.Summary.Ambiguous)
	}
	recs, err := l.store.Records(context.Background(), sel.ID, selection.RecordQuery{Disposition: selection.Ambiguous, Limit: 10})
	if err != nil || len(recs) != 1 || !strings.Contains(recs[0].Note, "no version") {
		t.Fatalf("ambiguous records %+v (%v); want acc-0002 without a version", recs, err)
	}
}

// TestRereadRechecksTheSelector: an account that got an owner after a
// preview of ownerless accounts is skipped, never archived.
func TestRereadRechecksTheSelector(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testRereadRechecksTheSelector)
}

func testRereadRechecksTheSelector(t *testing.T) {
	api := fixtures.NewWriteLab(4)
	l := newLab(t, t.TempDir(), api, time.Second)
	sel := l.preview("archive_reread", nil, map[string]any{"status": "active", "owner": nil})
	api.Change("acc-0001", map[string]any{"owner": "team-identity"})
	op := l.commit(sel, false)
	tg := l.targets(op.ID)["acc-0001"]
	if tg.Outcome != selection.TargetSkipped || !strings.Contains(tg.Note, "filter") {
		t.Fatalf("acc-0001: %s (%q); want skipped: no longer matches the filter", tg.Outcome, tg.Note)
	}
	if api.Applied()["acc-0001"] != 0 {
		t.Fatal("acc-0001 was archived")
	}
	l.agree(op.ID)
}

// TestResume_RunsPendingAndReconcilesUnknownOnAStoppedOperation: an
// operation stopped by a redirect resumes: its unknown target is re-read
// and its pending targets are sent.
func TestResume_RunsPendingAndReconcilesUnknownOnAStoppedOperation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testResumeRunsPendingAndReconcilesUnknownOnAStoppedOperation)
}

func testResumeRunsPendingAndReconcilesUnknownOnAStoppedOperation(t *testing.T) {
	api := fixtures.NewWriteLab(12)
	api.SetFault("acc-0000", fixtures.LabFault{Kind: fixtures.LabRedirect})
	l := newLab(t, t.TempDir(), api, time.Second)
	sel := l.preview("archive_keyed", nil, nil)
	op := l.commit(sel, false)
	if op.Status != selection.OpStopped || op.Counts[selection.TargetPending] == 0 {
		t.Fatalf("first run: %s %v; want stopped with pending targets", op.Status, op.Counts)
	}
	op = l.commit(sel, true)
	if op.Status != selection.OpCompleted || op.Counts[selection.TargetSucceeded] != 12 {
		t.Fatalf("after resume: %s %v (%s); want completed with 12 succeeded", op.Status, op.Counts, op.StopReason)
	}
	l.agree(op.ID)
}

// TestAccepted202_IsNotSucceededUntilObserved: 202 means queued, not done.
func TestAccepted202_IsNotSucceededUntilObserved(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testAccepted202IsNotSucceededUntilObserved)
}

func testAccepted202IsNotSucceededUntilObserved(t *testing.T) {
	_, l := oneFault(t, "acc-0001", fixtures.LabFault{Kind: fixtures.LabAccepted, Delay: 600 * time.Millisecond}, time.Second)
	op := l.commit(l.preview("archive_reread", nil, nil), false)
	tg := l.targets(op.ID)["acc-0001"]
	if tg.Outcome != selection.TargetSucceeded || !strings.Contains(tg.Note, "reconciled") {
		t.Fatalf("acc-0001: %s (%q); want succeeded once a re-read saw it", tg.Outcome, tg.Note)
	}
	l.agree(op.ID)
}

// TestDeleteWithLostAnswer_IsSucceededWhenTheTargetIsGone: for a delete,
// a re-read that finds nothing shows the effect.
func TestDeleteWithLostAnswer_IsSucceededWhenTheTargetIsGone(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testDeleteWithLostAnswerIsSucceededWhenTheTargetIsGone)
}

func testDeleteWithLostAnswerIsSucceededWhenTheTargetIsGone(t *testing.T) {
	_, l := oneFault(t, "acc-0002", fixtures.LabFault{Kind: fixtures.LabLostAnswer}, 200*time.Millisecond)
	op := l.commit(l.preview("delete_if_match", nil, nil), false)
	if tg := l.targets(op.ID)["acc-0002"]; tg.Outcome != selection.TargetSucceeded {
		t.Fatalf("acc-0002: %s (%q); want succeeded: the re-read finds it gone", tg.Outcome, tg.Note)
	}
	l.agree(op.ID)
}

// TestIgnoredWrite_ClaimsNothingItDoesNotShow: a 200 whose answer shows
// the account unchanged is not a success: the target is re-read, sent again
// under its condition, and succeeds only when the change is there.
func TestIgnoredWrite_ClaimsNothingItDoesNotShow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testIgnoredWriteClaimsNothingItDoesNotShow)
}

func testIgnoredWriteClaimsNothingItDoesNotShow(t *testing.T) {
	api, l := oneFault(t, "acc-0001", fixtures.LabFault{Kind: fixtures.LabIgnored}, time.Second)
	op := l.commit(l.preview("archive_if_match", nil, nil), false)
	tg := l.targets(op.ID)["acc-0001"]
	if tg.Outcome != selection.TargetSucceeded || tg.Attempts != 2 || api.Applied()["acc-0001"] != 1 {
		t.Fatalf("acc-0001: %s after %d attempt(s), applied %d; want succeeded on the second attempt", tg.Outcome, tg.Attempts, api.Applied()["acc-0001"])
	}
	l.agree(op.ID)
}

// TestStoppedBeforeAResend_LeavesTheTargetUnknownNotPending: a 202 whose
// write has not landed after every re-read is sent again under its key;
// the re-send is answered 429 with a wait longer than an operation pauses,
// and the run stops. The first write lands later. The target must not read
// pending (never sent): it was sent, and it stays unknown until a re-read
// sees it.
func TestStoppedBeforeAResend_LeavesTheTargetUnknownNotPending(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testStoppedBeforeAResendLeavesTheTargetUnknownNotPending)
}

func testStoppedBeforeAResendLeavesTheTargetUnknownNotPending(t *testing.T) {
	_, l := oneFault(t, "acc-0001", fixtures.LabFault{Kind: fixtures.LabAcceptedThen429, Delay: 3 * time.Second}, time.Second)
	op := l.commit(l.preview("archive_keyed", nil, nil), false)
	tg := l.targets(op.ID)["acc-0001"]
	if op.Status != selection.OpStopped || tg.Outcome != selection.TargetUnknown || tg.Attempts != 2 ||
		tg.Problem == nil || tg.Problem.StateChanged != envelope.StateUnknown {
		t.Fatalf("first run: %s (%s); acc-0001 %s after %d attempt(s) (%q); want stopped, acc-0001 unknown after 2", op.Status, op.StopReason, tg.Outcome, tg.Attempts, tg.Note)
	}
	if op.Counts[selection.TargetPending] != 0 {
		t.Fatalf("counts %v: a target that was sent is counted pending", op.Counts)
	}
	l.agree(op.ID)
}

// labFaults are the faults of the suite.
var labFaults = []string{fixtures.LabLostAnswer, fixtures.LabSlow, fixtures.LabInFlight409, fixtures.LabStale,
	fixtures.LabRedirect, fixtures.LabServerError, fixtures.LabAccepted, fixtures.LabIgnored, fixtures.LabAcceptedThen429, "escaping"}

var labActions = []string{"archive_keyed", "archive_if_match", "archive_version", "archive_reread", "delete_if_match"}

// heavy says whether the long suites run in full (AIRLOCK_TEST_HEAVY=1,
// which CI sets); otherwise they run a few trials, so that go test ./...
// stays quick.
func heavy() bool { return os.Getenv("AIRLOCK_TEST_HEAVY") == "1" }

// TestWriteFaultSuite runs 20 seeded trials per fault (4 without
// AIRLOCK_TEST_HEAVY): random targets, random delays, each action in turn;
// the journal must agree with the lab's log target by target, with no
// double apply.
func TestWriteFaultSuite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the fault suite takes a while; skipped with -short")
	}
	trials := 4
	if heavy() {
		trials = 20
	}
	// The subtests run in parallel: the tally is theirs to share.
	var mu sync.Mutex
	total, contradictions, doubles := 0, 0, 0
	for _, fault := range labFaults {
		for trial := range trials {
			rng := rand.New(rand.NewPCG(20261202, uint64(trial)))
			action := labActions[trial%len(labActions)]
			t.Run(fmt.Sprintf("%s/%02d-%s", fault, trial, action), func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) {
					var extra []string
					if fault == "escaping" {
						extra = []string{"a b", "x/y", "50%", "zoë"}
					}
					api := fixtures.NewWriteLab(8+rng.IntN(8), extra...)
					kind := fault
					for i := 0; i < 1+rng.IntN(3); i++ {
						id := fmt.Sprintf("acc-%04d", rng.IntN(8))
						if kind == "escaping" {
							id, kind = extra[rng.IntN(len(extra))], fixtures.LabLostAnswer
						}
						api.SetFault(id, fixtures.LabFault{Kind: kind, Delay: time.Duration(100+rng.IntN(900)) * time.Millisecond})
					}
					l := newLab(t, t.TempDir(), api, 150*time.Millisecond)
					op := l.commit(l.preview(action, nil, nil), false)
					// A 429 asking for an hour stops the operation, and the
					// upstream's wait holds for a resume as well.
					if op.Status != selection.OpCompleted && fault != fixtures.LabAcceptedThen429 {
						op = l.commit(l.preview(action, nil, nil), true)
					}
					bad, dbl := l.contradictions(op.ID)
					mu.Lock()
					total++
					contradictions += len(bad)
					doubles += dbl
					mu.Unlock()
					if len(bad) > 0 || dbl > 0 {
						t.Fatalf("%d contradiction(s), %d double apply(ies):\n%s", len(bad), dbl, strings.Join(bad, "\n"))
					}
				})
			})
		}
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		t.Logf("%d trials, %d contradictions, %d double applies", total, contradictions, doubles)
	})
}

// TestPropertyRandomFaultSchedules: random faults on random targets of a
// random action: the journal and the lab's log always agree.
func TestPropertyRandomFaultSchedules(t *testing.T) {
	t.Parallel()
	if testing.Short() || !heavy() {
		t.Skip("spawns hundreds of servers and waits out reconciliations: set AIRLOCK_TEST_HEAVY=1")
	}
	base := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		api := fixtures.NewWriteLab(rapid.IntRange(1, 10).Draw(rt, "accounts"))
		for i := range rapid.IntRange(0, 4).Draw(rt, "faults") {
			api.SetFault(fmt.Sprintf("acc-%04d", rapid.IntRange(0, 9).Draw(rt, fmt.Sprintf("target_%d", i))), fixtures.LabFault{
				Kind:  rapid.SampledFrom(labFaults[:len(labFaults)-1]).Draw(rt, fmt.Sprintf("fault_%d", i)),
				Delay: time.Duration(rapid.IntRange(0, 600).Draw(rt, fmt.Sprintf("delay_%d", i))) * time.Millisecond,
			})
		}
		dir, err := os.MkdirTemp(base, "check")
		if err != nil {
			rt.Fatal(err)
		}
		l := newLab(rt, dir, api, 100*time.Millisecond)
		sel := l.preview(rapid.SampledFrom(labActions).Draw(rt, "action"), nil, nil)
		op := l.commit(sel, false)
		if rapid.Bool().Draw(rt, "resume") {
			op = l.commit(sel, true)
		}
		if bad, dbl := l.contradictions(op.ID); len(bad) > 0 || dbl > 0 {
			rt.Fatalf("%d contradiction(s), %d double apply(ies):\n%s", len(bad), dbl, strings.Join(bad, "\n"))
		}
	})
}
