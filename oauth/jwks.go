package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"

	"github.com/airlock-mcp/airlock/upstream"
)

// DefaultUnknownKeyInterval is how often, at most, a token naming a key id
// not in the keys in hand makes the JWKS be read again: tokens under
// made-up key ids cost the issuer one read per interval, not one each.
const DefaultUnknownKeyInterval = time.Minute

// keySet is the issuer's signing keys (its JWKS) for go-oidc's verifier. It
// reads the JWKS when it has none (at the first token, and after expire),
// and again for a key id it does not hold only when the last read is
// UnknownKeyInterval old: in between such a token is refused without a
// read. Concurrent reads are one (singleflight); a read that fails is not
// tried again before the interval either.
type keySet struct {
	url   string
	hc    *http.Client // bounds every body it reads
	clock upstream.Clock
	every time.Duration
	algs  []jose.SignatureAlgorithm

	flight singleflight.Group

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	readAt  time.Time // the last read's start (zero: never read)
	expired bool      // the keys aged out: the next verification reads the JWKS
	lastErr error     // the last read's failure, while its keys are missing
}

func newKeySet(url string, hc *http.Client, clock upstream.Clock, every time.Duration, algs []string) *keySet {
	k := &keySet{url: url, hc: hc, clock: clock, every: every}
	for _, a := range algs {
		k.algs = append(k.algs, jose.SignatureAlgorithm(a))
	}
	return k
}

// expire drops the keys in hand: a key the issuer removed stops verifying.
func (k *keySet) expire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.expired = true
}

var (
	errUnknownKey = errors.New("no key the issuer published verifies the token (an unknown key id is looked up at most once per interval)")
	errWrongKey   = errors.New("the key the token names does not verify its signature")
)

// VerifySignature implements oidc.KeySet: the token's payload when a key
// of the issuer's verifies its signature.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, k.algs)
	if err != nil {
		return nil, fmt.Errorf("oidc: malformed jwt: %w", err)
	}
	kid := ""
	if len(jws.Signatures) > 0 {
		kid = jws.Signatures[0].Header.KeyID
	}
	k.mu.Lock()
	keys, need := k.keys, k.readAt.IsZero() || k.expired
	k.mu.Unlock()
	if need {
		if keys, err = k.read(ctx); err != nil && len(keys) == 0 {
			return nil, err
		}
	}
	payload, known := verifyWith(jws, keys, kid)
	switch {
	case payload != nil:
		return payload, nil
	case known:
		return nil, errWrongKey
	}
	// A key id not in hand: the issuer may have added it. read answers
	// from the keys in hand unless the interval has passed.
	keys, err = k.read(ctx)
	if payload, _ := verifyWith(jws, keys, kid); payload != nil {
		return payload, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, errUnknownKey
}

// verifyWith verifies jws with the keys named kid (every key when kid is
// empty); known says whether a key of that id was there.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) (payload []byte, known bool) {
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		known = kid != ""
		if p, err := jws.Verify(&keys[i]); err == nil {
			return p, true
		}
	}
	return nil, known
}

// read reads the JWKS when it is due (never read, expired, or the last
// read is at least the interval old), else returns the keys in hand and
// the last read's failure. Concurrent callers share one read; a caller
// whose context ends stops waiting for it.
func (k *keySet) read(ctx context.Context) ([]jose.JSONWebKey, error) {
	ch := k.flight.DoChan("jwks", func() (any, error) {
		k.mu.Lock()
		now := k.clock.Now()
		if !k.readAt.IsZero() && !k.expired && now.Sub(k.readAt) < k.every {
			keys, err := k.keys, k.lastErr
			k.mu.Unlock()
			return keys, err
		}
		wasExpired := k.expired
		k.readAt, k.expired = now, false
		k.mu.Unlock()
		keys, err := k.fetch()
		k.mu.Lock()
		defer k.mu.Unlock()
		if err != nil {
			if wasExpired {
				k.keys = nil
			}
			k.lastErr = err
			return k.keys, err
		}
		k.keys, k.lastErr = keys, nil
		return keys, nil
	})
	select {
	case r := <-ch:
		keys, _ := r.Val.([]jose.JSONWebKey)
		return keys, r.Err
	case <-ctx.Done():
		return nil, fmt.Errorf("reading the issuer's keys: %w", ctx.Err())
	}
}

// fetch reads and parses the JWKS. Keys of a type or algorithm go-jose
// does not support are skipped, as go-oidc does.
func (k *keySet) fetch() ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, fmt.Errorf("oidc: the JWKS request: %w", err)
	}
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := k.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oidc: read the JWKS: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("oidc: read the JWKS: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oidc: read the JWKS: status %d", resp.StatusCode)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("oidc: the JWKS is not a key set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var key jose.JSONWebKey
		if err := json.Unmarshal(raw, &key); err != nil {
			continue
		}
		keys = append(keys, key)
	}
	return keys, nil
}
