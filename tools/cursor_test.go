package tools

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
)

// goldenSecret is the AIRLOCK_SECRET of the golden tokens below, which an
// airlock before the signing package issued: during a rolling deploy a
// cursor or an approval request issued by one version is answered by the
// other.
var goldenSecret = []byte("airlock golden secret, never used in production")

const (
	goldenCursor = "eyJrIjoiZjZhY2JhOGEiLCJzIjoic2VsXzAwMDEiLCJvIjo1MCwiYSI6InNhXzAwMDQyIiwiZiI6IjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2NyIsInIiOjN9.bhBC8fGTtdBBM9hBO5F3UQ"
	goldenState  = "eyJzIjoic2VsXzAwMDEiLCJkIjoic2hhMjU2OmFhIiwiYSI6InNoYTI1NjpiYiIsIm4iOiI1ZjBjOGM5ZS04ZDFlLTRiN2EtOWE1NS0wYTdmMWYxZDJlM2MiLCJlIjoxODkzNDU2MDAwLCJwIjoiYWxpY2UifQ.y917bP8xmiGFnTdciOOm8Y1Jy9osK4sTBQepqgK3p9o"
)

// TestTokensIssuedByAnEarlierVersion_StillOpen: with the same secret, a
// cursor and an approval request's state issued before the signing
// package existed open as they did, and the same payloads are signed into
// the same bytes.
func TestTokensIssuedByAnEarlierVersion_StillOpen(t *testing.T) {
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	d := &Deps{Secret: goldenSecret, Store: store, Clock: clocktest.New(time.Unix(1893455000, 0))}

	key, err := d.key(ctx, "cursor_key")
	if err != nil {
		t.Fatal(err)
	}
	cursors := cursorKeyFrom(key)
	want := cursorPayload{Key: "f6acba8a", Scan: "sel_0001", Offset: 50, After: "sa_00042", Fingerprint: "0123456789abcdef01234567", Rev: 3}
	if got, st := cursors.decode(goldenCursor); st != cursorOK || got != want {
		t.Errorf("golden cursor decoded as %+v (state %d)", got, st)
	}
	if got := cursors.encode(want); got != goldenCursor {
		t.Errorf("cursor encoded as %s, want %s", got, goldenCursor)
	}
	if _, st := NewCursorKey().decode(goldenCursor); st != cursorOtherKey {
		t.Errorf("another key reads the golden cursor as state %d, want cursorOtherKey", st)
	}

	sel := &selection.Selection{ID: "sel_0001", Digest: "sha256:aa", ActionDigest: "sha256:bb"}
	state := elicitState{Selection: sel.ID, Digest: sel.Digest, ActionDigest: sel.ActionDigest, Nonce: "5f0c8c9e-8d1e-4b7a-9a55-0a7f1f1d2e3c", Expires: 1893456000, Subject: "alice"}
	if got, err := d.signState(ctx, state); err != nil || got != goldenState {
		t.Errorf("state signed as %s (%v), want %s", got, err, goldenState)
	}
	st, p := d.openState(ctx, goldenState, sel, selection.Principal{Subject: "alice"}, "req-1", "")
	if p != nil || st == nil || *st != state {
		t.Fatalf("golden state opened as %+v, problem %+v", st, p)
	}
	if _, p := d.openState(ctx, goldenState, sel, selection.Principal{Subject: "alice"}, "req-2", ""); p == nil || p.Code != envelope.ProblemElicitationReplayed {
		t.Errorf("the golden state answered twice: problem %+v", p)
	}
}

// TestApprovalStates_AFormsIsNotAViewsNorTheReverse: a state issued to an
// elicitation form is refused by decide_selection's check and a view's by
// the form's, before either is spent.
func TestApprovalStates_AFormsIsNotAViewsNorTheReverse(t *testing.T) {
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	d := &Deps{Secret: goldenSecret, Store: store, Clock: clocktest.New(time.Unix(1893455000, 0))}
	sel := &selection.Selection{ID: "sel_0001", Digest: "sha256:aa", ActionDigest: "sha256:bb"}
	alice := selection.Principal{Subject: "alice"}
	for _, c := range []struct{ issued, opened string }{{"", stateForView}, {stateForView, ""}} {
		raw, err := d.signState(ctx, elicitState{Selection: sel.ID, Digest: sel.Digest, ActionDigest: sel.ActionDigest, Nonce: "n-" + c.issued,
			Expires: 1893456000, Subject: "alice", For: c.issued})
		if err != nil {
			t.Fatal(err)
		}
		if _, p := d.openState(ctx, raw, sel, alice, "req-x", c.opened); p == nil || p.Code != envelope.ProblemElicitationForged {
			t.Errorf("a state issued for %q opened for %q: problem %+v", c.issued, c.opened, p)
		}
		if _, p := d.openState(ctx, raw, sel, alice, "req-y", c.issued); p != nil {
			t.Errorf("a state issued for %q, refused before, was spent: %+v", c.issued, p)
		}
	}
}
