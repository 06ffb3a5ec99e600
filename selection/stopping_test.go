package selection_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/memnet"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestStopDuringAReread_LeavesTheTargetPendingNotFailed: a process that
// stops while it re-reads a target before writing it sent nothing: the
// target goes back to pending, for the process that takes the operation
// over, and is never said failed (a final outcome no resume would send).
func TestStopDuringAReread_LeavesTheTargetPendingNotFailed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testStopDuringARereadLeavesTheTargetPendingNotFailed)
}

func testStopDuringARereadLeavesTheTargetPendingNotFailed(t *testing.T) {
	api := fixtures.NewWriteLab(6)
	reading := make(chan struct{})
	var once sync.Once
	var nw memnet.Network
	base := nw.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 2 {
			// A re-read by id: held until the caller gives up.
			once.Do(func() { close(reading) })
			<-r.Context().Done()
			return
		}
		api.ServeHTTP(w, r)
	}))
	cfg, err := config.Parse(fixtures.WriteLabConfig(base, 30*time.Second))
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
	background, stop := context.WithCancel(context.Background())
	e := &selection.Engine{Store: store, Runtime: rt, Clock: upstream.WallClock, Background: background}
	l := &lab{t: t, api: api, rt: rt, store: store, e: e}
	sel := l.preview("archive_reread", nil, nil)
	res, p := e.Commit(context.Background(), selection.CommitRequest{SelectionID: sel.ID, ExpectedDigest: sel.Digest, Action: sel.Action,
		Mode: selection.ModeExecute, RequestID: "stop"})
	if p != nil {
		t.Fatalf("commit: %v", p)
	}
	select {
	case <-reading:
	case <-time.After(30 * time.Second):
		t.Fatal("no re-read reached the upstream")
	}
	stop()
	e.Wait()
	if n := len(api.Applied()); n != 0 {
		t.Fatalf("%d writes applied; the run stopped before any", n)
	}
	for id, x := range l.targets(res.Operation.ID) {
		if x.Outcome != selection.TargetPending {
			t.Errorf("%s: %s (%s); nothing was sent, so it is pending", id, x.Outcome, x.Note)
		}
	}
}
