package mcpserver

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// testIssuer is the network peer of the fast authorization tests: an
// issuer that publishes its discovery document and a JWKS, with knobs to
// rotate keys, and that mints tokens (also ones no issuer should). The
// suite against a real identity provider (oidc-provider) is in interop.
type testIssuer struct {
	*httptest.Server
	mu        sync.Mutex
	published []jose.JSONWebKey
	jwksReads atomic.Int32
}

// issuerKey is a signing key and its id.
type issuerKey struct {
	kid string
	key *rsa.PrivateKey
}

func newIssuerKey(t testing.TB, kid string) issuerKey {
	t.Helper()
	spareKeys.Lock()
	var k *rsa.PrivateKey
	if n := len(spareKeys.free); n > 0 {
		k, spareKeys.free = spareKeys.free[n-1], spareKeys.free[:n-1]
	}
	spareKeys.Unlock()
	if k == nil {
		var err error
		if k, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		spareKeys.Lock()
		defer spareKeys.Unlock()
		spareKeys.free = append(spareKeys.free, k)
	})
	return issuerKey{kid: kid, key: k}
}

// spareKeys are the RSA keys of tests that ended, for the tests that
// follow: a 2048-bit key costs a tenth of a second to make, and a key is
// never held by two tests at once, so no test's keys are another's.
var spareKeys struct {
	sync.Mutex
	free []*rsa.PrivateKey
}

func newTestIssuer(t testing.TB, keys ...issuerKey) *testIssuer {
	t.Helper()
	iss := &testIssuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss.URL, "jwks_uri": iss.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		iss.jwksReads.Add(1)
		iss.mu.Lock()
		set := jose.JSONWebKeySet{Keys: iss.published}
		iss.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	})
	iss.Server = httptest.NewServer(mux)
	t.Cleanup(iss.Close)
	iss.publish(keys...)
	return iss
}

// publish replaces the JWKS with the public halves of keys.
func (iss *testIssuer) publish(keys ...issuerKey) {
	var pub []jose.JSONWebKey
	for _, k := range keys {
		pub = append(pub, jose.JSONWebKey{Key: &k.key.PublicKey, KeyID: k.kid, Algorithm: "RS256", Use: "sig"})
	}
	iss.mu.Lock()
	iss.published = pub
	iss.mu.Unlock()
}

// claims are a valid token's claims for resource, as subject with scopes,
// issued now and valid for ttl.
func (iss *testIssuer) claims(resource, subject, scope string, now time.Time, ttl time.Duration) map[string]any {
	return map[string]any{"iss": iss.URL, "sub": subject, "aud": resource, "client_id": "client-" + subject, "scope": scope,
		"iat": now.Unix(), "exp": now.Add(ttl).Unix(), "jti": subject + now.String()}
}

// sign signs claims with k (RS256, its kid in the header).
func sign(t testing.TB, k issuerKey, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.key, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	return signPayload(t, signer, claims)
}

// signHS256 signs claims with HMAC keyed by secret: the algorithm
// confusion attack uses the issuer's public key as the secret.
func signHS256(t testing.TB, secret []byte, kid string, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: secret, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return signPayload(t, signer, claims)
}

func signPayload(t testing.TB, signer jose.Signer, claims map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(claims)
	jws, err := signer.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// unsigned is claims as an `alg: none` JWT: no signature at all.
func unsigned(claims map[string]any) string {
	h, _ := json.Marshal(map[string]any{"alg": "none", "typ": "at+jwt"})
	b, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(b) + "."
}
