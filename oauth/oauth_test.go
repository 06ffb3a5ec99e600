package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
)

// issuer is an authorization server's JWKS endpoint whose answer the test
// sets: the keys it publishes, or a failure. It counts its reads.
type issuer struct {
	mu     sync.Mutex
	keys   []jose.JSONWebKey
	status int    // answered instead of the keys when not 0
	body   []byte // answered instead of the keys when not nil
	reads  atomic.Int64
}

func (i *issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i.reads.Add(1)
	i.mu.Lock()
	defer i.mu.Unlock()
	switch {
	case i.status != 0:
		w.WriteHeader(i.status)
	case i.body != nil:
		_, _ = w.Write(i.body)
	default:
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: i.keys})
	}
}

// set changes what the issuer answers: keys (public halves), or a status.
func (i *issuer) set(status int, keys ...signingKey) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.status, i.body, i.keys = status, nil, nil
	for _, k := range keys {
		i.keys = append(i.keys, jose.JSONWebKey{Key: &k.key.PublicKey, KeyID: k.kid, Algorithm: string(jose.ES256), Use: "sig"})
	}
}

type signingKey struct {
	kid string
	key *ecdsa.PrivateKey
}

func newKey(t *testing.T, kid string) signingKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, key: k}
}

// lab is a resource server of an issuer whose JWKS the test controls, on
// a clock the test moves.
type lab struct {
	rs    *ResourceServer
	iss   *issuer
	url   string
	clock *clocktest.Fake
}

const resource = "https://airlock.example.com/mcp"

func newLab(t *testing.T, opts Options) *lab {
	t.Helper()
	iss := &issuer{}
	srv := httptest.NewServer(iss)
	t.Cleanup(srv.Close)
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	opts.Issuer, opts.Resource, opts.JWKSURL, opts.Clock = srv.URL, resource, srv.URL+"/jwks", clk
	rs, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return &lab{rs: rs, iss: iss, url: srv.URL, clock: clk}
}

// token is an access token for this server signed by k, valid for an hour
// from the lab's now.
func (l *lab) token(t *testing.T, k signingKey) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k.key, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	now := l.clock.Now()
	claims, _ := json.Marshal(map[string]any{"iss": l.url, "aud": resource, "sub": "alice", "client_id": "agent",
		"scope": "airlock:read", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	jws, err := signer.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKeySet_AFailedJWKSReadIsNotRetriedBeforeTheInterval: while the
// issuer's JWKS cannot be read, tokens are refused and the JWKS is asked
// for again only once the interval has passed (a flood of tokens does not
// become a flood of reads at a failing issuer); once it answers, the
// token is accepted without a restart.
func TestKeySet_AFailedJWKSReadIsNotRetriedBeforeTheInterval(t *testing.T) {
	t.Parallel()
	l := newLab(t, Options{})
	k := newKey(t, "k1")
	l.iss.set(http.StatusServiceUnavailable)
	tok := l.token(t, k)
	for range 20 {
		var te *TokenError
		if _, err := l.rs.Verify(t.Context(), tok); !errors.As(err, &te) {
			t.Fatalf("a token while the JWKS cannot be read: %v", err)
		}
	}
	if n := l.iss.reads.Load(); n != 1 {
		t.Fatalf("20 tokens while the JWKS fails read it %d times, want 1", n)
	}
	l.iss.set(0, k)
	if _, err := l.rs.Verify(t.Context(), tok); err == nil {
		t.Fatal("the token was accepted before the interval let the JWKS be read again")
	}
	l.clock.Advance(DefaultUnknownKeyInterval)
	p, err := l.rs.Verify(t.Context(), tok)
	if err != nil {
		t.Fatalf("once the issuer answers and the interval has passed: %v", err)
	}
	if p.Subject != "alice" || p.ClientID != "agent" || !p.OAuth {
		t.Errorf("principal %+v", p)
	}
	if n := l.iss.reads.Load(); n != 2 {
		t.Errorf("the JWKS was read %d times, want 2", n)
	}
}

// TestKeySet_KeysThatAgeOutAreNotKeptWhenTheIssuerFails: once the keys in
// hand are older than KeysMaxAge they must be read again; if the issuer
// cannot answer then, tokens are refused rather than verified by keys
// that may have been withdrawn.
func TestKeySet_KeysThatAgeOutAreNotKeptWhenTheIssuerFails(t *testing.T) {
	t.Parallel()
	l := newLab(t, Options{KeysMaxAge: 5 * time.Minute})
	k := newKey(t, "k1")
	l.iss.set(0, k)
	if _, err := l.rs.Verify(t.Context(), l.token(t, k)); err != nil {
		t.Fatalf("a token of the published key: %v", err)
	}
	l.iss.set(http.StatusInternalServerError)
	l.clock.Advance(5 * time.Minute)
	if _, err := l.rs.Verify(t.Context(), l.token(t, k)); err == nil {
		t.Fatal("after KeysMaxAge, with the JWKS failing, a token was verified by the stale keys")
	}
	l.iss.set(0, k)
	l.clock.Advance(DefaultUnknownKeyInterval)
	if _, err := l.rs.Verify(t.Context(), l.token(t, k)); err != nil {
		t.Fatalf("once the issuer answers again: %v", err)
	}
}

// TestKeySet_AnOversizedJWKSIsRefused: a JWKS answer beyond the bound is
// not read whole, and no key in it is trusted.
func TestKeySet_AnOversizedJWKSIsRefused(t *testing.T) {
	t.Parallel()
	l := newLab(t, Options{})
	k := newKey(t, "k1")
	l.iss.set(0, k)
	keys, _ := json.Marshal(jose.JSONWebKeySet{Keys: l.iss.keys})
	// The real keys, then padding past the bound inside the JSON.
	huge := strings.Replace(string(keys), `{"keys":[`, `{"pad":"`+strings.Repeat("x", maxIdPBody)+`","keys":[`, 1)
	l.iss.mu.Lock()
	l.iss.body = []byte(huge)
	l.iss.mu.Unlock()
	_, err := l.rs.Verify(t.Context(), l.token(t, k))
	if err == nil {
		t.Fatal("a token was verified with keys from a JWKS over the bound")
	}
	if !strings.Contains(err.Error(), "over") {
		t.Errorf("the refusal does not say the answer was too large: %v", err)
	}
}

// TestNew_RefusesWhatCannotBeAResourceServer: the issuer and the resource
// must be absolute URLs (the resource without a fragment), and so must a
// JWKS URL; every problem is said at once.
func TestNew_RefusesWhatCannotBeAResourceServer(t *testing.T) {
	t.Parallel()
	_, err := New(t.Context(), Options{Issuer: "issuer", Resource: "https://a.example/mcp#x", JWKSURL: "/jwks"})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"issuer must be an absolute URL", "resource must be an absolute URL without a fragment", "JWKS URL must be an absolute URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// TestNew_NeverAcceptsNoneOrHMAC: "none" and the HMAC algorithms are
// dropped from Algorithms whatever is listed (an HMAC key would be the
// JWKS's public material); with nothing else listed, the defaults apply.
func TestNew_NeverAcceptsNoneOrHMAC(t *testing.T) {
	t.Parallel()
	l := newLab(t, Options{Algorithms: []string{"none", "HS256", "hs512"}})
	if len(l.rs.opts.Algorithms) != len(DefaultAlgorithms) {
		t.Fatalf("algorithms %v, want the defaults", l.rs.opts.Algorithms)
	}
	for _, a := range l.rs.opts.Algorithms {
		if a == "none" || strings.HasPrefix(strings.ToUpper(a), "HS") {
			t.Errorf("%s is accepted", a)
		}
	}
}
