package signing

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

// goldenSecret signed the golden tokens below, which airlock issued before
// this package existed: replicas of both versions run side by side during
// a rolling deploy and must open each other's tokens.
var goldenSecret = []byte("airlock golden secret, never used in production")

// cursorWire and stateWire are the wire forms of a page cursor and of an
// approval request's state, as written into the golden tokens.
type cursorWire struct {
	Key         string `json:"k"`
	Scan        string `json:"s"`
	Offset      int    `json:"o,omitempty"`
	After       string `json:"a,omitempty"`
	Fingerprint string `json:"f"`
	Rev         int    `json:"r,omitempty"`
}

type stateWire struct {
	Selection    string `json:"s"`
	Digest       string `json:"d"`
	ActionDigest string `json:"a"`
	Nonce        string `json:"n"`
	Expires      int64  `json:"e"`
	Subject      string `json:"p,omitempty"`
}

func (s stateWire) ExpiresAt() time.Time { return time.Unix(s.Expires, 0) }

const (
	goldenCursor = "eyJrIjoiZjZhY2JhOGEiLCJzIjoic2VsXzAwMDEiLCJvIjo1MCwiYSI6InNhXzAwMDQyIiwiZiI6IjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2NyIsInIiOjN9.bhBC8fGTtdBBM9hBO5F3UQ"
	goldenState  = "eyJzIjoic2VsXzAwMDEiLCJkIjoic2hhMjU2OmFhIiwiYSI6InNoYTI1NjpiYiIsIm4iOiI1ZjBjOGM5ZS04ZDFlLTRiN2EtOWE1NS0wYTdmMWYxZDJlM2MiLCJlIjoxODkzNDU2MDAwLCJwIjoiYWxpY2UifQ.y917bP8xmiGFnTdciOOm8Y1Jy9osK4sTBQepqgK3p9o"
)

var (
	goldenCursorPayload = cursorWire{Key: "f6acba8a", Scan: "sel_0001", Offset: 50, After: "sa_00042", Fingerprint: "0123456789abcdef01234567", Rev: 3}
	goldenStatePayload  = stateWire{Selection: "sel_0001", Digest: "sha256:aa", ActionDigest: "sha256:bb", Nonce: "5f0c8c9e-8d1e-4b7a-9a55-0a7f1f1d2e3c", Expires: 1893456000, Subject: "alice"}
)

// TestDerive_KeysAreThoseEarlierVersionsDerived: the same secret derives
// the same keys as before, whichever process or version derives them.
func TestDerive_KeysAreThoseEarlierVersionsDerived(t *testing.T) {
	for name, want := range map[string]string{
		"cursor_key":      "c7bb0ae49c6389556ea37a25959d89e59831de64d2307b9a60d901d990eca655",
		"elicitation_key": "9928d0e9daea3e6a30f7a9e958f68e49d6659ae5de7bb548185a0707a00ab588",
		"review_csrf_key": "bae6c38aa3fcb8fe5e72c609507a73135245a2134ac73cd61f332a82120a9d29",
	} {
		if got := hex.EncodeToString(Derive(goldenSecret, name)); got != want {
			t.Errorf("Derive(%q) = %s, want %s", name, got, want)
		}
	}
	if got := KeyID(Derive(goldenSecret, "cursor_key")); got != "f6acba8a" {
		t.Errorf("KeyID = %s, want f6acba8a", got)
	}
}

// TestSeal_WritesTokensByteForByteAsBefore: a token sealed now is the one
// an earlier version issued for the same payload, and that token opens.
func TestSeal_WritesTokensByteForByteAsBefore(t *testing.T) {
	cursors := NewSealer(Derive(goldenSecret, "cursor_key"), ShortTag)
	if got := cursors.Seal(goldenCursorPayload); got != goldenCursor {
		t.Errorf("cursor sealed as\n%s\nwant\n%s", got, goldenCursor)
	}
	var c cursorWire
	if err := cursors.Open(goldenCursor, time.Time{}, &c); err != nil || c != goldenCursorPayload {
		t.Errorf("golden cursor opened as %+v, %v", c, err)
	}
	states := NewSealer(Derive(goldenSecret, "elicitation_key"), FullTag)
	if got := states.Seal(goldenStatePayload); got != goldenState {
		t.Errorf("state sealed as\n%s\nwant\n%s", got, goldenState)
	}
	var s stateWire
	if err := states.Open(goldenState, time.Unix(1893456000, 0), &s); err != nil || s != goldenStatePayload {
		t.Errorf("golden state opened as %+v, %v", s, err)
	}
}

// TestOpen_RefusesWhatItDidNotSignOrWhatExpired: a token of another key,
// a changed payload or tag, a truncated token and garbage are refused;
// an expiring payload opens through its last second and not after.
func TestOpen_RefusesWhatItDidNotSignOrWhatExpired(t *testing.T) {
	key := Derive(goldenSecret, "elicitation_key")
	states := NewSealer(key, FullTag)
	body, tag, _ := strings.Cut(goldenState, ".")
	otherBody, _, _ := strings.Cut(NewSealer(key, FullTag).Seal(stateWire{Selection: "sel_0002", Expires: 1893456000}), ".")
	end := time.Unix(1893456000, 0)
	for _, c := range []struct {
		name  string
		token string
		now   time.Time
		want  error
	}{
		{"its own token before its end", goldenState, end.Add(-time.Hour), nil},
		{"its own token within its last second", goldenState, end.Add(999 * time.Millisecond), nil},
		{"its own token past its end", goldenState, end.Add(time.Second), ErrExpired},
		{"another key's token", NewSealer(Derive(goldenSecret, "cursor_key"), FullTag).Seal(goldenStatePayload), end, ErrForged},
		{"another payload under this tag", otherBody + "." + tag, end, ErrForged},
		{"a short tag where a full one is due", body + "." + tag[:22], end, ErrForged},
		{"no tag", body, end, ErrMalformed},
		{"not base64", "!!." + tag, end, ErrMalformed},
		{"not JSON", "bm90IGpzb24." + tag, end, ErrMalformed},
		{"empty", "", end, ErrMalformed},
	} {
		var s stateWire
		if err := states.Open(c.token, c.now, &s); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: Open = %v, want %v", c.name, err, c.want)
		}
	}
}

// TestOpen_ForgedTokenStillShowsItsHint: a cursor of an earlier key fails,
// and the key id it names can be read to tell it from a forgery.
func TestOpen_ForgedTokenStillShowsItsHint(t *testing.T) {
	var c cursorWire
	err := NewSealer(Random(), ShortTag).Open(goldenCursor, time.Time{}, &c)
	if !errors.Is(err, ErrForged) || c.Key != "f6acba8a" {
		t.Fatalf("Open = %v with key %q; want ErrForged naming f6acba8a", err, c.Key)
	}
}

type mapKeeper map[string][]byte

func (m mapKeeper) SetMetaIfAbsent(_ context.Context, k string, v []byte) ([]byte, error) {
	if old, ok := m[k]; ok {
		return old, nil
	}
	m[k] = v
	return v, nil
}

// TestKey_WithoutSecretTheFirstKeptKeyServesEveryone: without a secret,
// two processes sharing a store sign with the first key kept there; with
// one, the key is derived and nothing is kept.
func TestKey_WithoutSecretTheFirstKeptKeyServesEveryone(t *testing.T) {
	store := mapKeeper{}
	a, err1 := Key(context.Background(), nil, "cursor_key", store)
	b, err2 := Key(context.Background(), nil, "cursor_key", store)
	if err1 != nil || err2 != nil || len(a) != 32 || string(a) != string(b) {
		t.Fatalf("kept keys differ: %x %x (%v %v)", a, b, err1, err2)
	}
	d, err := Key(context.Background(), goldenSecret, "elicitation_key", store)
	if err != nil || string(d) != string(Derive(goldenSecret, "elicitation_key")) || store["elicitation_key"] != nil {
		t.Fatalf("with a secret: %x, %v, kept %x", d, err, store["elicitation_key"])
	}
}

// goldenSealed is a continuation sealed, under goldenSecret's
// scan_state_key, by the version that introduced Box: every later version
// opens it.
const goldenSealed = "nzuivYdZD0FpYIir2NiYcYz6NlBdJNYZakMC5p1LFPjdg0oCjbZVvd_J7z3AiHTnQsfCOlhETi28wVkGHRJfLd2Kjv_xxG7YDI08gAnItBXEQudyWoSkdn9kZqtDIms"

// TestBox_OpensWhatAnyProcessWithTheKeySealedAndNothingElse: a value
// sealed by one process opens in another that derived the same key (and
// one sealed by an earlier version opens); another key, another label or
// an altered value does not open, and the sealed value shows nothing of
// the plaintext.
func TestBox_OpensWhatAnyProcessWithTheKeySealedAndNothingElse(t *testing.T) {
	key := Derive(goldenSecret, "scan_state_key")
	box, err := NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	const label = "airlock scan continuation"
	if got, err := box.Open(goldenSealed, label); err != nil || string(got) != `{"next_url":"https://api.example.com/v1/items?cursor=YXBpX2tleT0x"}` {
		t.Fatalf("the golden value: %q, %v", got, err)
	}
	plain := []byte("https://api.example.com/v1/items?cursor=YXBpX2tleT1jbnJ5")
	sealed := box.Seal(plain, label)
	if strings.Contains(sealed, "YXBp") || strings.Contains(sealed, "api.example") || sealed == box.Seal(plain, label) {
		t.Fatalf("the sealed value shows the plaintext or repeats: %s", sealed)
	}
	other, _ := NewBox(Derive(goldenSecret, "scan_state_key"))
	if got, err := other.Open(sealed, label); err != nil || string(got) != string(plain) {
		t.Fatalf("another process with the same key: %q, %v", got, err)
	}
	wrong, _ := NewBox(Derive([]byte("another secret"), "scan_state_key"))
	raw, _ := base64.RawURLEncoding.DecodeString(sealed)
	raw[len(raw)/2] ^= 1
	altered := base64.RawURLEncoding.EncodeToString(raw)
	for name, tc := range map[string]struct {
		box          Box
		value, label string
		want         error
	}{
		"another key":   {wrong, sealed, label, ErrForged},
		"another label": {box, sealed, "something else", ErrForged},
		"altered":       {box, altered, label, ErrForged},
		"not base64":    {box, "not a sealed value!", label, ErrMalformed},
		"too short":     {box, "c2hvcnQ", label, ErrMalformed},
	} {
		if got, err := tc.box.Open(tc.value, tc.label); !errors.Is(err, tc.want) || got != nil {
			t.Errorf("%s: %q, %v, want %v", name, got, err, tc.want)
		}
	}
	if _, err := NewBox(key[:16]); err == nil {
		t.Fatal("a 16-byte key was taken")
	}
}
