package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
)

// The tests here run several real airlock processes on one store, SQLite
// and PostgreSQL (when AIRLOCK_TEST_POSTGRES names a server).

// testLease is the lease the child servers hold operations with: short,
// so that a takeover comes quickly.
const testLease = time.Second

// storeKind makes a fresh store for a test.
type storeKind struct {
	name  string
	fresh func(t *testing.T, dir string) string
}

var storeKinds = []storeKind{
	{"sqlite", func(t *testing.T, dir string) string { return filepath.Join(dir, "airlock.db") }},
	{"postgres", func(t *testing.T, dir string) string { return pgtest.Database(t) }},
}

// eachStore runs fn on every store kind.
func eachStore(t *testing.T, fn func(t *testing.T, kind storeKind)) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) { fn(t, k) })
	}
}

// replicaSetup is a fixture API, its configuration and a store.
type replicaSetup struct {
	api    *fixtures.Server
	config string
	store  string
}

func newReplicaSetup(t *testing.T, kind storeKind, faults map[string]fixtures.WriteFaults) *replicaSetup {
	t.Helper()
	api := &fixtures.Server{}
	for ds, f := range faults {
		api.SetWriteFaults(ds, f)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	config := filepath.Join(dir, "airlock.yaml")
	if err := os.WriteFile(config, fastReconcile(fixtures.DemoConfig(srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &replicaSetup{api: api, config: config, store: kind.fresh(t, dir)}
}

// fastReconcile has the demo's writes whose outcome was not observed
// re-read in rounds 10–40 ms apart instead of 0.25–4 s: the same rounds,
// in test time (a write in flight at a kill lands within the upstream's
// latency, long before the lease hands the operation over).
func fastReconcile(config []byte) []byte {
	doc := string(config)
	for _, d := range []string{
		"Pause payment collection on a past-due subscription.",
		"Archive an inactive project.",
		"Assign an owning team to a service account without one.",
	} {
		line := "    description: " + d + "\n"
		if !strings.Contains(doc, line) {
			panic("the demo configuration no longer describes an action as " + strconv.Quote(d))
		}
		doc = strings.Replace(doc, line, line+"    reconcile: {backoff: 10ms, max_backoff: 40ms}\n", 1)
	}
	return []byte(doc)
}

// server starts an airlock server on the setup's store.
func (s *replicaSetup) server(t *testing.T) *child {
	t.Helper()
	return startChildEnv(t, s.config, s.store, []string{envLeaseTTL + "=" + testLease.String()})
}

// inspect opens the store as the test's own reader, beside the servers.
func (s *replicaSetup) inspect(t *testing.T) selection.Store {
	t.Helper()
	st, err := openStore(context.Background(), s.store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// targetsOf reads every target of an operation from the store.
func targetsOf(t *testing.T, st selection.Store, opID string) map[string]selection.Target {
	t.Helper()
	out := map[string]selection.Target{}
	after := ""
	for {
		page, err := st.Targets(context.Background(), opID, selection.TargetQuery{After: after, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page {
			out[x.ID] = x
		}
		if len(page) < 500 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

// waitFinished polls an operation through c until it is no longer running.
func waitFinished(t *testing.T, c *client.Client, opID any) (map[string]selection.Outcome, string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, status := targetOutcomes(t, c, opID)
		if status != selection.OpRunning {
			return out, status
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation %v still running after 90 s", opID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var pausePastDueEU = map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"},
	"action": map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}}

// commitArgs commits without waiting for the operation (wait_ms 0 means
// the default wait).
func commitArgs(p map[string]any, action any) map[string]any {
	return map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": action, "mode": "execute", "wait_ms": 1}
}

// TestReplicas_ThreeProcessesCommitOneSelectionOnce: three servers start
// on one store; the same selection committed through all three at once is
// one operation, and the upstream's own log shows each target written
// once.
func TestReplicas_ThreeProcessesCommitOneSelectionOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes; skipped with -short")
	}
	eachStore(t, func(t *testing.T, kind storeKind) {
		s := newReplicaSetup(t, kind, map[string]fixtures.WriteFaults{fixtures.DatasetSubscriptions: {Latency: 5 * time.Millisecond}})
		var clients []*client.Client
		for range 3 {
			c := connect(t, s.server(t).url)
			defer c.Close()
			clients = append(clients, c)
		}
		p := callData(t, clients[0], "preview_selection", pausePastDueEU)
		members := int(p["counts"].(map[string]any)["members"].(float64))
		ops := make([]any, 3)
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Go(func() {
				ops[i] = callData(t, c, "commit_bulk_action", commitArgs(p, pausePastDueEU["action"]))["operation_id"]
			})
		}
		wg.Wait()
		if ops[0] != ops[1] || ops[1] != ops[2] {
			t.Fatalf("three commits of one selection and action gave operations %v", ops)
		}
		outcomes, status := waitFinished(t, clients[2], ops[0])
		if status != selection.OpCompleted || len(outcomes) != members {
			t.Fatalf("operation %s with %d targets, want completed with %d", status, len(outcomes), members)
		}
		for id, n := range writesPerTarget(s.api) {
			if n != 1 {
				t.Errorf("%s was written %d times", id, n)
			}
		}
		if got := len(writesPerTarget(s.api)); got != members {
			t.Fatalf("%d targets written, want %d", got, members)
		}
	})
}

// crashAction is an action the takeover trials commit.
type crashAction struct {
	dataset string
	preview map[string]any
	keyed   bool // a retry cannot apply twice (key or condition)
	// operator: the action needs an operator's approval (archive);
	// pause_collection asks the client, whose user approves.
	operator bool
}

var crashActions = []crashAction{
	{fixtures.DatasetSubscriptions, pausePastDueEU, true, false},
	{fixtures.DatasetProjects, map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive", "owner": "team-growth"},
		"action": map[string]any{"type": "archive"}}, true, true},
	// The demo credential sees a restricted view, so a scope selection of
	// ownerless accounts is never committable: name them explicitly.
	{fixtures.DatasetServiceAccounts, map[string]any{"resource": "service_accounts", "ids": ownerless(60),
		"action": map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}}, false, false},
}

// TestReplicas_KilledHolderIsTakenOverAfterItsLease kills, with SIGKILL, the
// server running a commit at a random point (seeded trials per store: 20
// with AIRLOCK_TEST_HEAVY=1, otherwise 4, one round of the trial runner;
// over three actions in turn: an idempotency key, an If-Match condition, a
// re-read). Another server, already running on the same store, takes the
// operation over only once the lease expired and finishes it: no target is
// written twice, each has one outcome, a target pending at the kill was
// never sent before it, and unknown remains only for a write in flight at
// the kill that cannot be retried safely.
func TestReplicas_KilledHolderIsTakenOverAfterItsLease(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash trials spawn processes; skipped with -short")
	}
	eachStore(t, func(t *testing.T, kind storeKind) {
		rng := rand.New(rand.NewPCG(20261202, 2))
		var mu sync.Mutex
		taken, doubles := 0, 0
		trials := 4
		if os.Getenv("AIRLOCK_TEST_HEAVY") == "1" {
			trials = 20
		}
		t.Cleanup(func() {
			t.Logf("%s: %d of %d trials killed a running operation that another process took over; %d targets written twice", kind.name, taken, trials, doubles)
		})
		runner := newTrials(t)
		defer runner.wait()
		for trial := range trials {
			ac := crashActions[trial%len(crashActions)]
			killAfter := time.Duration(rng.IntN(300)) * time.Millisecond
			runner.run(fmt.Sprintf("trial-%02d-%s-kill-%s", trial, ac.preview["resource"], killAfter), func(t *testing.T) {
				s := newReplicaSetup(t, kind, map[string]fixtures.WriteFaults{ac.dataset: {Latency: 15 * time.Millisecond}})
				holder, survivor := s.server(t), s.server(t)
				c := connect(t, holder.url)
				p := callData(t, c, "preview_selection", ac.preview)
				members := int(p["counts"].(map[string]any)["members"].(float64))
				if members < 10 {
					t.Fatalf("a trial needs targets: %d", members)
				}
				if ac.operator {
					operatorApproves(t, s.config, s.store, p)
				}
				op := callData(t, c, "commit_bulk_action", commitArgs(p, ac.preview["action"]))
				opID := op["operation_id"].(string)
				time.Sleep(killAfter)
				holder.kill()
				killedAt := time.Now()
				c.Close()
				atKill := writesPerTarget(s.api)
				st := s.inspect(t)
				atKillOp, err := st.Operation(context.Background(), opID)
				if err != nil {
					t.Fatal(err)
				}
				before := targetsOf(t, st, opID)

				c2 := connect(t, survivor.url)
				defer c2.Close()
				after, status := waitFinished(t, c2, opID)
				if status == selection.OpInterrupted || status == selection.OpStopped {
					t.Fatalf("the operation ended %s", status)
				}
				final, err := st.Operation(context.Background(), opID)
				if err != nil {
					t.Fatal(err)
				}
				// The holder's last commit can reach PostgreSQL before the
				// kill and be applied after the read above: an end recorded
				// before the kill, under the holder's own lease, is the
				// holder's, and no takeover was needed.
				endedByHolder := final.FinishedAt != nil && final.Lease.Epoch == atKillOp.Lease.Epoch && !final.FinishedAt.After(killedAt)
				if atKillOp.Status == selection.OpRunning && !endedByHolder {
					if final.Lease.Epoch <= atKillOp.Lease.Epoch {
						t.Fatalf("the operation finished without a takeover: epoch %d then %d", atKillOp.Lease.Epoch, final.Lease.Epoch)
					}
					// Nothing was written between the kill (and the
					// requests already on their way) and the lease's end.
					for _, w := range s.api.Writes() {
						if w.At.After(killedAt.Add(100*time.Millisecond)) && w.At.Before(atKillOp.Lease.Expires) {
							t.Fatalf("%s %s written at %s, before the dead holder's lease expired at %s", w.Method, w.Path, w.At, atKillOp.Lease.Expires)
						}
					}
					mu.Lock()
					taken++
					mu.Unlock()
				}
				inFlight := map[string]bool{}
				for id, x := range before {
					switch x.Outcome {
					case selection.TargetInFlight:
						inFlight[id] = true
					case selection.TargetPending:
						if atKill[id] != 0 {
							t.Fatalf("%s is pending but was sent %d time(s): the intent was not journaled before the write", id, atKill[id])
						}
					}
				}
				if len(after) != members {
					t.Fatalf("%d targets, want %d", len(after), members)
				}
				for id, o := range after {
					applied := s.api.Applied(ac.dataset, id)
					if applied > 1 {
						mu.Lock()
						doubles++
						mu.Unlock()
						t.Fatalf("%s written %d times", id, applied)
					}
					switch o {
					case selection.TargetSucceeded:
						if applied != 1 {
							t.Fatalf("%s succeeded but applied %d times", id, applied)
						}
					case selection.TargetUnknown:
						now := targetsOf(t, st, opID)[id]
						if !inFlight[id] && !ac.keyed && now.Attempts > before[id].Attempts &&
							(now.Unobserved > before[id].Unobserved || now.Problem != nil && now.Problem.StateChanged == envelope.StateUnknown) {
							// A new holder's own write went unobserved (a
							// timeout on a loaded machine, or a holder whose
							// lease ran out before it recorded the answer):
							// unknown is the truth, and it was never sent
							// twice.
							t.Logf("%s unknown: the new holder's attempt was not observed (%s)", id, now.Note)
							continue
						}
						if !inFlight[id] || ac.keyed {
							t.Fatalf("%s unknown after the takeover (in flight at kill: %v, safe retry: %v); at the kill %+v; its journal now: %+v",
								id, inFlight[id], ac.keyed, before[id], targetsOf(t, st, opID)[id])
						}
					default:
						final, _ := st.Operation(context.Background(), opID)
						t.Fatalf("%s ended %s; the operation %s (%q); its journal: %+v", id, o, final.Status, final.StopReason, targetsOf(t, st, opID)[id])
					}
				}
			})
		}
	})
}

// stopOutsideTransaction stops p (SIGSTOP) at a moment it holds no lock on
// the store: a process stopped inside a transaction keeps every other
// process from writing (SQLite) or from touching the rows it locked
// (PostgreSQL, until the server ends the idle transaction), so no takeover
// could happen while it is stopped.
func stopOutsideTransaction(t *testing.T, p *os.Process, store, opID string) {
	t.Helper()
	probe := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if isPostgres(store) {
			c, err := pgx.Connect(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			_, err = tx.Exec(ctx, `SELECT 1 FROM operations WHERE id = $1 FOR UPDATE NOWAIT`, opID)
			return err == nil
		}
		db, err := sql.Open("sqlite", "file:"+store+"?_pragma=busy_timeout(0)&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return false
		}
		tx.Rollback()
		return true
	}
	for range 200 {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if probe() {
			return
		}
		_ = p.Signal(syscall.SIGCONT)
		time.Sleep(time.Duration(1+rand.IntN(5)) * time.Millisecond)
	}
	t.Fatal("could not stop the server outside a transaction in 200 tries")
}

// TestReplicas_StoppedHolderWritesNothingAfterTakeover: the server running
// a commit is stopped (SIGSTOP) past its lease; another takes the
// operation over and finishes it; when the first is continued (SIGCONT)
// it sends no new write and changes nothing in the store: its lease was
// lost, and every write it would make is fenced.
func TestReplicas_StoppedHolderWritesNothingAfterTakeover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes; skipped with -short")
	}
	eachStore(t, func(t *testing.T, kind storeKind) {
		s := newReplicaSetup(t, kind, map[string]fixtures.WriteFaults{fixtures.DatasetSubscriptions: {Latency: 40 * time.Millisecond}})
		holder, survivor := s.server(t), s.server(t)
		c := connect(t, holder.url)
		defer c.Close()
		p := callData(t, c, "preview_selection", pausePastDueEU)
		op := callData(t, c, "commit_bulk_action", commitArgs(p, pausePastDueEU["action"]))
		opID := op["operation_id"].(string)
		time.Sleep(100 * time.Millisecond)
		stopOutsideTransaction(t, holder.cmd.Process, s.store, opID)
		stoppedAt := time.Now()
		defer func() { _ = holder.cmd.Process.Signal(syscall.SIGCONT) }()
		st := s.inspect(t)
		if atStop, err := st.Operation(context.Background(), opID); err != nil || atStop.Status != selection.OpRunning {
			t.Fatalf("the holder must be stopped while the operation runs: %v %v", atStop, err)
		}

		c2 := connect(t, survivor.url)
		defer c2.Close()
		_, status := waitFinished(t, c2, opID)
		if status != selection.OpCompleted {
			t.Fatalf("the operation taken over ended %s", status)
		}
		finished := targetsOf(t, st, opID)
		finishedOp, _ := st.Operation(context.Background(), opID)
		keysBefore := map[string]bool{}
		for _, w := range s.api.Writes() {
			keysBefore[w.IdempotencyKey] = true
		}
		writesBefore := len(s.api.Writes())
		if time.Since(stoppedAt) < testLease {
			t.Fatalf("taken over %s after the stop, before the lease of %s expired", time.Since(stoppedAt), testLease)
		}

		if err := holder.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		// Give the woken process several heartbeats to write, were it going to.
		time.Sleep(3 * testLease)
		for _, w := range s.api.Writes()[writesBefore:] {
			// A write announced before the stop may still leave when the
			// process wakes (it was past its last check): it repeats an
			// idempotency key already sent, so the upstream applies it
			// once. A new key would be a new write.
			if !keysBefore[w.IdempotencyKey] {
				t.Errorf("the stopped holder sent a new write after waking: %s %s (key %q)", w.Method, w.Path, w.IdempotencyKey)
			}
		}
		for id, n := range s.api.AppliedAll(fixtures.DatasetSubscriptions) {
			if n > 1 {
				t.Errorf("%s applied %d times", id, n)
			}
		}
		if log := string(holder.log.Bytes()); !strings.Contains(log, "lease") {
			t.Errorf("the woken holder did not notice it lost its lease; its log:\n%s", log)
		}
		now := targetsOf(t, st, opID)
		if !reflect.DeepEqual(now, finished) {
			t.Errorf("the journal changed after the stopped holder woke")
		}
		if nowOp, _ := st.Operation(context.Background(), opID); nowOp.Status != finishedOp.Status || nowOp.Lease.Epoch != finishedOp.Lease.Epoch {
			t.Errorf("the operation changed after the stopped holder woke: %s epoch %d, was %s epoch %d", nowOp.Status, nowOp.Lease.Epoch, finishedOp.Status, finishedOp.Lease.Epoch)
		}
	})
}

// withoutElapsed drops what differs between two identical answers made at
// different times: coverage.elapsed_ms.
func withoutElapsed(raw string) map[string]any {
	var m map[string]any
	_ = json.Unmarshal([]byte(raw), &m)
	if cov, ok := m["coverage"].(map[string]any); ok {
		delete(cov, "elapsed_ms")
	}
	return m
}

// TestReplicas_CursorContinuesOnAnotherProcess: a search_all continuation
// and get_selection and get_operation page cursors issued by one server
// continue on another sharing the store, with exactly the answer the first
// would have given.
func TestReplicas_CursorContinuesOnAnotherProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes; skipped with -short")
	}
	eachStore(t, func(t *testing.T, kind storeKind) {
		s := newReplicaSetup(t, kind, nil)
		ca := connect(t, s.server(t).url)
		defer ca.Close()
		cb := connect(t, s.server(t).url)
		defer cb.Close()

		// A scan stopped by its page budget (one source: which of several
		// sources gets a budget of one page is a race), and items beyond
		// max_items.
		search := map[string]any{"resource": "projects", "max_items": 3, "max_pages": 1}
		first := withoutElapsed(callTool(t, ca, "search_all", search))
		cur := first["continuation"].(map[string]any)["cursor"].(string)
		for step := range 3 {
			search["cursor"] = cur
			onB := callTool(t, cb, "search_all", search)
			onA := callTool(t, ca, "search_all", search)
			if !reflect.DeepEqual(withoutElapsed(onB), withoutElapsed(onA)) {
				t.Fatalf("step %d: continued on B\n%s\ncontinued on A\n%s", step, onB, onA)
			}
			if step == 0 {
				pages := func(m map[string]any) float64 { return m["coverage"].(map[string]any)["pages"].(float64) }
				if pages(withoutElapsed(onB)) <= pages(first) {
					t.Fatalf("the continuation read no more pages: the scan did not resume\n%s", onB)
				}
			}
			next, _ := withoutElapsed(onB)["continuation"].(map[string]any)["cursor"].(string)
			if next == "" {
				break
			}
			cur = next
		}

		p := callData(t, ca, "preview_selection", pausePastDueEU)
		page := map[string]any{"selection_id": p["selection_id"], "page_size": 3}
		pa := withoutElapsed(callTool(t, ca, "get_selection", page))
		next, _ := pa["continuation"].(map[string]any)["cursor"].(string)
		if next == "" {
			t.Fatalf("the manifest fits one page: %v", pa)
		}
		page["cursor"] = next
		if onB, onA := callTool(t, cb, "get_selection", page), callTool(t, ca, "get_selection", page); onB != onA {
			t.Fatalf("get_selection continued on B\n%s\non A\n%s", onB, onA)
		}

		op := callData(t, ca, "commit_bulk_action", map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"],
			"action": pausePastDueEU["action"], "mode": "dry_run", "wait_ms": 30000})
		opPage := map[string]any{"operation_id": op["operation_id"], "page_size": 2}
		oa := callData(t, ca, "get_operation", opPage)
		if oa["results_cursor"] == nil {
			t.Fatalf("the results fit one page: %v", oa)
		}
		opPage["cursor"] = oa["results_cursor"]
		if onB, onA := callTool(t, cb, "get_operation", opPage), callTool(t, ca, "get_operation", opPage); onB != onA {
			t.Fatalf("get_operation continued on B\n%s\non A\n%s", onB, onA)
		}
	})
}

// TestReplicas_TwoStdioServersWithoutStoreBothAnswer: two MCP clients on
// one machine start airlock as the README registers it (stdio, no
// --store): both servers start on the default store and answer.
func TestReplicas_TwoStdioServersWithoutStoreBothAnswer(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"AIRLOCK_TEST_AS_MAIN=1", "XDG_STATE_HOME=" + state, envStore + "="}
	var clients []*client.Client
	for range 2 {
		c, err := client.NewStdioMCPClient(os.Args[0], env, "serve", "--demo")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		init := mcp.InitializeRequest{}
		init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatalf("the second server must start beside the first: %v", err)
		}
		clients = append(clients, c)
	}
	for i, c := range clients {
		d := callData(t, c, "preview_selection", pausePastDueEU)
		if d["selection_id"] == nil {
			t.Fatalf("server %d: no selection: %v", i, d)
		}
		// The other server sees it: one store.
		other := clients[1-i]
		if got := callData(t, other, "get_selection", map[string]any{"selection_id": d["selection_id"], "page_size": 1}); got["selection_id"] != d["selection_id"] {
			t.Fatalf("server %d's selection is not visible to the other: %v", i, got)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "airlock", "airlock.db")); err != nil {
		t.Fatalf("the default store: %v", err)
	}
}
