package review

import (
	"context"
	"testing"
)

// TestFormToken_SameSecretSameTokenAsEarlierVersions: with AIRLOCK_SECRET
// set, a form served by a replica of an earlier version is accepted by
// this one: the key and the token are those it derived.
func TestFormToken_SameSecretSameTokenAsEarlierVersions(t *testing.T) {
	rv := &page{d: Deps{Secret: []byte("airlock golden secret, never used in production")}}
	got, err := rv.csrf(context.Background(), "session-0123456789abcdef0123456789", "sel_0001")
	if want := "B76QCpVw2WRVHoGrY-0945MDVgvGnTNYL3jEXqysnd0"; err != nil || got != want {
		t.Fatalf("form token %q (%v), want %q", got, err, want)
	}
}
