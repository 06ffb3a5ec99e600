package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

// slowCommit starts a server on a fresh SQLite store whose upstream takes a
// second per write, and commits the 164 past-due EU subscriptions through
// it (about 40 s of writes at the action's concurrency of 4). It returns
// once the first write reached the upstream, with the client closed.
func slowCommit(t *testing.T, env []string, extra ...string) (*replicaSetup, *child, string, int) {
	t.Helper()
	s := newReplicaSetup(t, storeKinds[0], map[string]fixtures.WriteFaults{fixtures.DatasetSubscriptions: {Latency: time.Second}})
	srv := startChildEnv(t, s.config, s.store, append([]string{envLeaseTTL + "=" + testLease.String()}, env...), extra...)
	c := connect(t, srv.url)
	p := callData(t, c, "preview_selection", pausePastDueEU)
	members := int(p["counts"].(map[string]any)["members"].(float64))
	op := callData(t, c, "commit_bulk_action", commitArgs(p, pausePastDueEU["action"]))
	c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for len(s.api.Writes()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no write reached the upstream in 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s, srv, op["operation_id"].(string), members
}

// exited waits for the server to exit, within limit, and returns its exit
// status.
func exited(t *testing.T, srv *child, limit time.Duration, what string) int {
	t.Helper()
	start := time.Now()
	select {
	case <-srv.exited:
		t.Logf("exited %s after %s", time.Since(start).Round(10*time.Millisecond), what)
		return srv.state.ExitCode()
	case <-time.After(limit):
		t.Fatalf("the server did not exit within %s of %s; its log:\n%s", limit, what, srv.log.Bytes())
		return -1
	}
}

// truthfulJournal checks every target of the operation against the
// upstream's own log: succeeded was applied once, failed and skipped
// never; pending was never sent; unknown was sent and applied at most
// once; in flight (a write whose outcome a crash cut off) only where
// inFlight allows it.
func truthfulJournal(t *testing.T, s *replicaSetup, opID string, members int, inFlight bool) map[selection.Outcome]int {
	t.Helper()
	targets := targetsOf(t, s.inspect(t), opID)
	if len(targets) != members {
		t.Fatalf("%d targets journaled, want %d", len(targets), members)
	}
	sent := writesPerTarget(s.api)
	tally := map[selection.Outcome]int{}
	for id, x := range targets {
		tally[x.Outcome]++
		n := s.api.Applied(fixtures.DatasetSubscriptions, id)
		ok := map[selection.Outcome]bool{selection.TargetSucceeded: n == 1, selection.TargetPending: sent[id] == 0, selection.TargetFailed: n == 0,
			selection.TargetSkipped: n == 0, selection.TargetUnknown: sent[id] > 0 && n <= 1, selection.TargetInFlight: inFlight && n <= 1}[x.Outcome]
		if !ok {
			t.Errorf("%s: journal %s (%s); the upstream received %d write(s) and applied %d", id, x.Outcome, x.Note, sent[id], n)
		}
	}
	return tally
}

// settle lets the writes the upstream held when the server stopped land
// (the upstream records a write once it answered, a second after it
// arrived), however slow the machine: it waits until the upstream has had
// no request in flight for 300 ms, then makes it answer at once from then
// on.
func settle(t *testing.T, s *replicaSetup) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for quiet := 0; quiet < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream still answers %d request(s) a minute after the server stopped", s.api.InFlight())
		}
		if s.api.InFlight() == 0 {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{})
}

// restart starts a server on the store, which takes the operation over
// once its lease expired, and waits for the operation to end.
func restart(t *testing.T, s *replicaSetup, opID string) string {
	t.Helper()
	c := connect(t, s.server(t).url)
	defer c.Close()
	_, status := waitFinished(t, c, opID)
	return status
}

// TestShutdown_SIGTERMCancelsRunningOperationsAfterTheGracePeriod: a
// server stopped while a commit runs against a slow upstream waits the
// grace period (1 s here), cancels the run and exits, instead of waiting
// for every write; after a restart the journal holds every target with an
// outcome the upstream confirms.
func TestShutdown_SIGTERMCancelsRunningOperationsAfterTheGracePeriod(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes; skipped with -short")
	}
	s, srv, opID, members := slowCommit(t, nil, "--shutdown-grace", "1s")
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The grace period, 5 s for requests in flight, and a wide margin.
	if code := exited(t, srv, 30*time.Second, "SIGTERM"); code != exitOK {
		t.Fatalf("exit status %d after SIGTERM; its log:\n%s", code, srv.log.Bytes())
	}
	settle(t, s)
	t.Logf("at the stop: %v", truthfulJournal(t, s, opID, members, false))
	status := restart(t, s, opID)
	t.Logf("after the restart, operation %s: %v", status, truthfulJournal(t, s, opID, members, false))
}

// TestShutdown_SecondSignalExitsAtOnce: a server waiting out a long grace
// period for a running commit exits at a second SIGINT, with status 1 and
// a word why; the operation is left to its lease, and a restart settles
// it truthfully.
func TestShutdown_SecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes; skipped with -short")
	}
	s, srv, opID, members := slowCommit(t, []string{envShutdownGrace + "=10m"})
	if err := srv.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(string(srv.log.Bytes()), "waiting for the running operations") {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start waiting for its operations; its log:\n%s", srv.log.Bytes())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exited(t, srv, 20*time.Second, "a second SIGINT"); code != exitFailure {
		t.Fatalf("exit status %d after a second SIGINT, want %d", code, exitFailure)
	}
	if !strings.Contains(string(srv.log.Bytes()), "second signal") {
		t.Errorf("the server did not say why it exited; its log:\n%s", srv.log.Bytes())
	}
	settle(t, s)
	status := restart(t, s, opID)
	t.Logf("after the restart, operation %s: %v", status, truthfulJournal(t, s, opID, members, false))
}
