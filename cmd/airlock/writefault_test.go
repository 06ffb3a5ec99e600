package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

// TestWriteFaults_KilledMidCommit: the write fault suite with a kill -9 of
// the airlock process at a random point of each commit, then a restart and
// a resume. Writes held by the upstream land while airlock is down or
// after it restarted. Once every held write has landed, the journal agrees
// with the upstream's own log of applied writes, target by target: 0
// contradictions, 0 double applies. 20 trials per fault with
// AIRLOCK_TEST_HEAVY=1, one otherwise (the faults take the actions in
// turn, so that each action meets a kill), on SQLite and on PostgreSQL
// (when AIRLOCK_TEST_POSTGRES names a server).
func TestWriteFaults_KilledMidCommit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash trials spawn processes; skipped with -short")
	}
	trials := 1
	if os.Getenv("AIRLOCK_TEST_HEAVY") == "1" {
		trials = 20
	}
	faults := []string{fixtures.LabLostAnswer, fixtures.LabSlow, fixtures.LabInFlight409, fixtures.LabStale,
		fixtures.LabRedirect, fixtures.LabServerError, fixtures.LabAccepted, fixtures.LabIgnored, fixtures.LabAcceptedThen429, "escaping"}
	actions := []string{"archive_keyed", "archive_if_match", "archive_version", "archive_reread", "delete_if_match"}
	eachStore(t, func(t *testing.T, kind storeKind) { writeFaultsKilledMidCommit(t, kind, faults, actions, trials) })
}

func writeFaultsKilledMidCommit(t *testing.T, kind storeKind, faults, actions []string, trials int) {
	var mu sync.Mutex
	total, contradictions, doubles := 0, 0, 0
	runner := newTrials(t)
	for fi, fault := range faults {
		for trial := range trials {
			rng := rand.New(rand.NewPCG(20261203, uint64(trial)))
			action := actions[(fi+trial)%len(actions)]
			killAfter := time.Duration(rng.IntN(400)) * time.Millisecond
			runner.run(fmt.Sprintf("%s/%02d-%s-kill-%s", fault, trial, action, killAfter), func(t *testing.T) {
				var extra []string
				if fault == "escaping" {
					extra = []string{"a b", "x/y", "50%", "zoë"}
				}
				api := fixtures.NewWriteLab(30, extra...)
				for i := 0; i < 2+rng.IntN(4); i++ {
					id, kind := fmt.Sprintf("acc-%04d", rng.IntN(30)), fault
					if fault == "escaping" {
						id, kind = extra[rng.IntN(len(extra))], fixtures.LabSlow
					}
					// Delays up to 2 s: some writes land while airlock is
					// down, some after it restarted.
					api.SetFault(id, fixtures.LabFault{Kind: kind, Delay: time.Duration(100+rng.IntN(1900)) * time.Millisecond})
				}
				srv := httptest.NewServer(api)
				defer srv.Close()
				dir := t.TempDir()
				config := filepath.Join(dir, "airlock.yaml")
				if err := os.WriteFile(config, fixtures.WriteLabConfig(srv.URL, 150*time.Millisecond), 0o600); err != nil {
					t.Fatal(err)
				}
				store := kind.fresh(t, dir)

				// A short lease: the restarted process takes the killed
				// one's operation over a second after its last renewal.
				lease := []string{"AIRLOCK_LEASE_TTL=1s"}
				first := startChildEnv(t, config, store, lease)
				c := connect(t, first.url)
				params := map[string]any{"reason": "account review 2026"}
				if action == "delete_if_match" {
					params = map[string]any{}
				}
				preview := map[string]any{"resource": "accounts", "filter": map[string]any{"status": "active"},
					"action": map[string]any{"type": action, "params": params}}
				p := callData(t, c, "preview_selection", preview)
				commit := map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": preview["action"], "mode": "execute", "wait_ms": 0}
				op := callData(t, c, "commit_bulk_action", commit)
				time.Sleep(killAfter)
				first.kill()
				c.Close()

				second := startChildEnv(t, config, store, lease)
				c2 := connect(t, second.url)
				defer c2.Close()
				// The second process takes the operation over once the
				// lease expired and finishes it; a stopped one is resumed.
				outcomes, status := awaitOperation(t, c2, op["operation_id"])
				if status != "completed" {
					commit["resume"] = true
					commit["wait_ms"] = 60000
					var env struct {
						Problem map[string]any `json:"problem"`
					}
					_ = json.Unmarshal([]byte(callTool(t, c2, "commit_bulk_action", commit)), &env)
					// An upstream that asked for an hour's wait is not
					// called again: the resume is answered from memory,
					// and the journal is checked as it stands.
					if env.Problem != nil && (fault != fixtures.LabAcceptedThen429 || env.Problem["code"] != "UPSTREAM_RATE_LIMITED") {
						t.Fatalf("resume: problem %v", env.Problem)
					}
					outcomes, status = awaitOperation(t, c2, op["operation_id"])
				}
				if status == "running" || status == "interrupted" {
					t.Fatalf("the operation did not finish: %s", status)
				}
				api.Quiesce()
				applied := api.Applied()
				var bad []string
				dbl := 0
				for id, o := range outcomes {
					n := applied[id]
					if n > 1 {
						dbl++
					}
					ok := map[selection.Outcome]bool{selection.TargetSucceeded: n == 1, selection.TargetSkipped: n == 0, selection.TargetFailed: n == 0, selection.TargetPending: n == 0, selection.TargetUnknown: n <= 1}[o]
					if !ok || n > 1 {
						bad = append(bad, fmt.Sprintf("%s: journal %s, upstream applied %d", id, o, n))
					}
				}
				if api.RedirectsFollowed() > 0 {
					bad = append(bad, fmt.Sprintf("%d redirect(s) followed", api.RedirectsFollowed()))
				}
				sort.Strings(bad)
				mu.Lock()
				total++
				contradictions += len(bad)
				doubles += dbl
				mu.Unlock()
				if len(bad) > 0 {
					d := callData(t, c2, "get_operation", map[string]any{"operation_id": op["operation_id"], "page_size": 500})
					var notes []string
					for _, r := range d["results"].([]any) {
						if m := r.(map[string]any); applied[m["id"].(string)] > 0 && m["outcome"] != "succeeded" {
							notes = append(notes, fmt.Sprintf("%v", m))
						}
					}
					t.Fatalf("%d contradiction(s), %d double apply(ies):\n%s\noperation %v (%v); targets:\n%s", len(bad), dbl,
						strings.Join(bad, "\n"), d["status"], d["stop_reason"], strings.Join(notes, "\n"))
				}
			})
		}
	}
	runner.wait()
	t.Logf("%s: %d killed trials, %d contradictions, %d double applies", kind.name, total, contradictions, doubles)
}

// awaitOperation polls get_operation until the operation is no longer
// running (60 s at most) and returns its targets' outcomes and status.
func awaitOperation(t *testing.T, c *client.Client, opID any) (map[string]selection.Outcome, string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		outcomes, status := targetOutcomes(t, c, opID)
		if status != "running" || time.Now().After(deadline) {
			return outcomes, status
		}
		time.Sleep(100 * time.Millisecond)
	}
}
