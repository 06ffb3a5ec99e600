package pgstore_test

// The commit engine's journal on PostgreSQL, seen from outside: the
// upstream checks, from a session of its own, what the database holds for
// each write it receives, and a trigger records how every intent was
// committed.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/pgstore"
	"github.com/airlock-mcp/airlock/selection/pgstore/pgtest"
	"github.com/airlock-mcp/airlock/upstream"
)

// pauseYAML is the demo's pause_collection on the fixture's subscriptions:
// a conditional write, four in flight.
const pauseYAML = `actions:
  pause_collection:
    resource: subscriptions
    request:
      method: POST
      path: "/v1/subscriptions/{{id}}/pause"
      body: {reason: "{{params.reason}}", expected_version: "{{version}}"}
    params:
      type: object
      required: [reason]
      properties:
        reason: {type: string, minLength: 8}
    precondition:
      - {field: status, op: eq, value: past_due}
      - {field: collection_paused, op: eq, value: false}
    conditional: version
    effect:
      - {field: collection_paused, to: true}
    idempotency_header: Idempotency-Key
    concurrency: 4
    timeout: 5s
`

// journalLab is a selection of past-due subscriptions previewed into a
// PostgreSQL store, a fixture API whose writes are seen by a checker
// first, and a connection of the test's own to the database.
type journalLab struct {
	api   *fixtures.Server
	store *pgstore.Postgres
	db    *pgx.Conn
	rt    *upstream.Runtime
	sel   *selection.Selection

	mu sync.Mutex
	// seen is, for every write the upstream received, the target's
	// outcome in the database at that moment.
	seen map[string][]string
}

func newJournalLab(t *testing.T, n int) *journalLab {
	t.Helper()
	ctx := context.Background()
	u := pgtest.Database(t)
	store, err := pgstore.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	db, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	// Every intent written records the transaction that wrote it and the
	// commit mode it ran with.
	if _, err := db.Exec(ctx, `CREATE TABLE intent_log (id TEXT, sync TEXT, tx BIGINT);
		CREATE FUNCTION log_intent() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF NEW.outcome = 'in_flight' THEN
				INSERT INTO intent_log VALUES (NEW.id, current_setting('synchronous_commit'), txid_current());
			END IF; RETURN NEW; END $$;
		CREATE TRIGGER log_intent AFTER UPDATE ON targets FOR EACH ROW EXECUTE FUNCTION log_intent()`); err != nil {
		t.Fatal(err)
	}
	lab := &journalLab{store: store, db: db, seen: map[string][]string{}}
	lab.api = &fixtures.Server{OnUnknownRoute: func(m, p string) { t.Errorf("fixture: unexpected %s %s", m, p) }}
	lab.api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, func(i int, r fixtures.Record) {
		r["status"], r["amount_due"] = "past_due", 500
	}))
	lab.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{Latency: 2 * time.Millisecond})
	check, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check.Close(context.Background()) })
	var checkMu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutSuffix(r.URL.Path, "/pause"); ok && r.Method == http.MethodPost {
			id = id[strings.LastIndexByte(id, '/')+1:]
			var outcome string
			checkMu.Lock()
			err := check.QueryRow(r.Context(), `SELECT outcome FROM targets WHERE id = $1`, id).Scan(&outcome)
			checkMu.Unlock()
			if err != nil {
				outcome = "unreadable: " + err.Error()
			}
			lab.mu.Lock()
			lab.seen[id] = append(lab.seen[id], outcome)
			lab.mu.Unlock()
		}
		lab.api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := fixtures.Config(srv.URL, fixtures.Resource{Name: "subscriptions", Dataset: fixtures.DatasetSubscriptions,
		Dialect: fixtures.DialectCursor, PageSize: 100, Extra: `version_field: version
get: {path: "/v1/subscriptions/{{id}}"}`})
	c, err := config.Parse(append(cfg, pauseYAML...))
	if err != nil {
		t.Fatal(err)
	}
	lab.rt, err = upstream.Initialize(ctx, c, upstream.Options{Getenv: func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultAdminToken
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := &selection.Previewer{Store: store, Clock: upstream.WallClock}
	res, err := p.Preview(ctx, selection.PreviewRequest{Resource: lab.rt.Resources["subscriptions"], Action: lab.rt.Actions["pause_collection"],
		Params: map[string]any{"reason": "credit hold review"}, Budget: upstream.Budget{MaxPages: 100, Deadline: time.Minute}, RequestID: "t", Environment: lab.rt.Environment})
	if err != nil || !res.Selection.Committable || res.Selection.Summary.Members != n {
		t.Fatalf("preview: %v %+v", err, res.Selection)
	}
	lab.sel = res.Selection
	return lab
}

// commit starts the selection's commit on an engine of holder's.
func (lab *journalLab) commit(t *testing.T, holder string) (*selection.Engine, string) {
	t.Helper()
	ctx := context.Background()
	e := &selection.Engine{Store: lab.store, Runtime: lab.rt, Clock: upstream.WallClock, Background: ctx, Holder: holder, LeaseTTL: time.Minute}
	r, prob := e.Commit(ctx, selection.CommitRequest{SelectionID: lab.sel.ID, ExpectedDigest: lab.sel.Digest, Action: lab.sel.Action,
		Mode: selection.ModeExecute, Wait: time.Millisecond, RequestID: "t"})
	if prob != nil {
		t.Fatalf("commit: %+v", prob)
	}
	return e, r.Operation.ID
}

// writes is a copy of seen.
func (lab *journalLab) writes() map[string][]string {
	lab.mu.Lock()
	defer lab.mu.Unlock()
	out := map[string][]string{}
	for id, s := range lab.seen {
		out[id] = append([]string(nil), s...)
	}
	return out
}

func (lab *journalLab) outcomes(t *testing.T, opID string) map[string]selection.Outcome {
	t.Helper()
	out := map[string]selection.Outcome{}
	after := ""
	for {
		page, err := lab.store.Targets(context.Background(), opID, selection.TargetQuery{After: after, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page {
			out[x.ID] = x.Outcome
		}
		if len(page) < 500 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

// TestPostgresJournal_EveryWriteIsSentAfterItsIntentIsDurable: every write
// the upstream receives finds its target in flight in the database, from
// another session (so the intent was committed before the write was sent),
// and every intent was committed synchronously (so, committed, it was
// durable: PostgreSQL shows a synchronous commit to other sessions only
// once its WAL is flushed).
func TestPostgresJournal_EveryWriteIsSentAfterItsIntentIsDurable(t *testing.T) {
	const n = 300
	lab := newJournalLab(t, n)
	e, opID := lab.commit(t, "a")
	e.Wait()
	op, err := lab.store.Operation(context.Background(), opID)
	if err != nil || op.Status != selection.OpCompleted || op.Counts[selection.TargetSucceeded] != n {
		t.Fatalf("operation %s %v %v, want completed, all %d succeeded", op.Status, op.Counts, err, n)
	}
	w := lab.writes()
	if len(w) != n {
		t.Fatalf("%d targets written, want %d", len(w), n)
	}
	for id, seen := range w {
		if len(seen) != 1 || seen[0] != string(selection.TargetInFlight) {
			t.Fatalf("%s: the upstream found it %v when its write arrived, want in_flight once", id, seen)
		}
	}
	var intents, async, txs int
	if err := lab.db.QueryRow(context.Background(), `SELECT COUNT(*), COUNT(*) FILTER (WHERE sync <> 'on'), COUNT(DISTINCT tx) FROM intent_log`).Scan(&intents, &async, &txs); err != nil {
		t.Fatal(err)
	}
	if intents != n || async != 0 {
		t.Fatalf("%d intents, %d of them committed asynchronously; want %d, none", intents, async, n)
	}
	t.Logf("%d intents in %d transactions", intents, txs)
}

// TestPostgresJournal_ARunTakenOverSendsNothingItsLeaseNoLongerCovers: once
// another holder took the operation over, the old run's intents are
// refused, whichever group they were in: it sends no write but the ones
// already on their way (at most one per worker), changes no target, and no
// write ever arrives for a target the database does not hold in flight (or
// unknown, after the takeover, for those on their way).
func TestPostgresJournal_ARunTakenOverSendsNothingItsLeaseNoLongerCovers(t *testing.T) {
	const n = 400
	lab := newJournalLab(t, n)
	lab.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{Latency: 10 * time.Millisecond})
	ctx := context.Background()
	e, opID := lab.commit(t, "a")
	for {
		counts, _ := lab.store.CountTargets(ctx, opID)
		if counts[selection.TargetSucceeded] >= 20 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	taken, err := lab.store.AcquireLease(ctx, opID, "b", time.Now().Add(2*time.Minute), time.Minute)
	if err != nil || taken.Epoch != 2 {
		t.Fatalf("takeover: %+v %v", taken, err)
	}
	atTakeover := lab.outcomes(t, opID)
	writesAtTakeover := len(lab.writes())
	e.Wait()
	got := lab.outcomes(t, opID)
	for id, o := range got {
		if o != atTakeover[id] {
			t.Errorf("%s became %s after the takeover (was %s): a fenced journal write went through", id, o, atTakeover[id])
		}
	}
	w := lab.writes()
	if extra := len(w) - writesAtTakeover; extra > 4 {
		t.Fatalf("%d targets were written after the takeover; at most the 4 already on their way may be", extra)
	}
	for id, seen := range w {
		for _, o := range seen {
			if o != string(selection.TargetInFlight) && o != string(selection.TargetUnknown) {
				t.Fatalf("%s: a write arrived while its target was %s", id, o)
			}
		}
	}
	op, err := lab.store.Operation(ctx, opID)
	if err != nil || op.Status != selection.OpRunning || op.Lease.Holder != "b" {
		t.Fatalf("the operation after the first run ended: %s held by %q (%v); its end belongs to the new holder", op.Status, op.Lease.Holder, err)
	}
}

// TestPostgresJournal_AFailedGroupSendsNoneOfItsWrites: when the database
// refuses a transaction that holds intents, none of its intents' writes is
// sent and the run stops: the refused target is never written, every
// target written was in flight when its write arrived, and every target
// still pending was never written.
func TestPostgresJournal_AFailedGroupSendsNoneOfItsWrites(t *testing.T) {
	const n = 200
	lab := newJournalLab(t, n)
	ctx := context.Background()
	poisoned := fixtures.SubscriptionID(121)
	if _, err := lab.db.Exec(ctx, `CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF NEW.id = '`+poisoned+`' AND NEW.outcome = 'in_flight' THEN RAISE EXCEPTION 'refused by the test'; END IF;
			RETURN NEW; END $$;
		CREATE TRIGGER poison BEFORE UPDATE ON targets FOR EACH ROW EXECUTE FUNCTION poison()`); err != nil {
		t.Fatal(err)
	}
	e, opID := lab.commit(t, "a")
	e.Wait()
	op, err := lab.store.Operation(ctx, opID)
	if err != nil || op.Status == selection.OpCompleted {
		t.Fatalf("operation %s (%v): a run whose journal failed must stop", op.Status, err)
	}
	w := lab.writes()
	if len(w[poisoned]) != 0 {
		t.Fatalf("%s was written although its intent was refused", poisoned)
	}
	got := lab.outcomes(t, opID)
	pending := 0
	for id, o := range got {
		switch {
		case o == selection.TargetPending:
			pending++
			if len(w[id]) != 0 {
				t.Fatalf("%s is pending but was written: its intent's group failed, and its write was sent anyway", id)
			}
		case len(w[id]) > 0:
			if w[id][0] != string(selection.TargetInFlight) {
				t.Fatalf("%s: its write arrived while it was %s", id, w[id][0])
			}
		}
	}
	if pending == 0 || got[poisoned] != selection.TargetPending {
		t.Fatalf("%d targets pending, the refused one %s: want it and the rest of the run pending", pending, got[poisoned])
	}
}
