// Package signing derives airlock's signing keys and seals and opens the
// signed tokens that carry state through a client: page cursors and
// approval requests. A token is the payload's JSON and its HMAC-SHA256
// tag, each in unpadded base64url, joined by a dot. A Box encrypts the
// values airlock keeps in its store that no reader of the store may read
// (an upstream's continuation, which can carry a credential).
//
// Replicas of different versions read each other's tokens during a rolling
// deploy, so this package must never change how a key is derived or how a
// token or a sealed value is written; a test pins them to values issued
// before.
package signing

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Derive returns the key called name derived from secret. Every process
// given the same secret derives the same key.
func Derive(secret []byte, name string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("airlock signing key: " + name))
	return m.Sum(nil)
}

// Keeper keeps a value under a name for every process that shares it; the
// first value kept wins and is what every later call returns (the store's
// SetMetaIfAbsent).
type Keeper interface {
	SetMetaIfAbsent(ctx context.Context, key string, value []byte) ([]byte, error)
}

// Key returns the key called name: derived from secret when secret is
// set, else a random key that keeper keeps under name, so that every
// process sharing the keeper signs with the same key.
func Key(ctx context.Context, secret []byte, name string, keeper Keeper) ([]byte, error) {
	if len(secret) > 0 {
		return Derive(secret, name), nil
	}
	return keeper.SetMetaIfAbsent(ctx, name, Random())
}

// Random returns a fresh random 32-byte key.
func Random() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails: crypto/rand crashes the program instead
	return b
}

// KeyID names a key without revealing it: a token can carry it, so that a
// token of an earlier key reads as expired rather than forged.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// Tag lengths, in bytes: a full HMAC-SHA256, or its first half where the
// token must stay short (a cursor).
const (
	FullTag  = sha256.Size
	ShortTag = 16
)

// Errors of Open.
var (
	// ErrMalformed: the token is not a token, or its payload is not the
	// JSON of the payload asked for.
	ErrMalformed = errors.New("signing: malformed token")
	// ErrForged: the tag does not match the payload under this key.
	ErrForged = errors.New("signing: token not signed with this key")
	// ErrExpired: the token is signed, and past its end.
	ErrExpired = errors.New("signing: token expired")
)

// Expiring is a payload that carries its own end, in whole seconds: Open
// refuses it once that second has passed.
type Expiring interface {
	ExpiresAt() time.Time
}

// Sealer seals and opens tokens with one key and one tag length.
type Sealer struct {
	key []byte
	tag int
}

// NewSealer returns a sealer with key whose tags are tag bytes long
// (FullTag or ShortTag).
func NewSealer(key []byte, tag int) Sealer {
	return Sealer{key: key, tag: min(max(tag, 1), FullTag)}
}

func (s Sealer) mac(b []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(b)
	return m.Sum(nil)[:s.tag]
}

// Seal returns the token of payload: its JSON and the tag. payload is a
// struct of strings and numbers; one that has no JSON encoding is a bug,
// and Seal panics.
func (s Sealer) Seal(payload any) string {
	b, err := json.Marshal(payload)
	if err != nil {
		panic("signing: a payload without a JSON encoding: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(s.mac(b))
}

// Open verifies token and decodes its payload into v. It returns nil only
// for a token this sealer's key signed whose payload, if Expiring, has
// not passed its end at now.
//
// Open decodes v before it checks the tag, so that a caller can read a
// hint from a token that failed (the key id a cursor names); v is to be
// trusted only when Open returns nil.
func (s Sealer) Open(token string, now time.Time, v any) error {
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return ErrMalformed
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	tag, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || json.Unmarshal(b, v) != nil {
		return ErrMalformed
	}
	if !hmac.Equal(tag, s.mac(b)) {
		return ErrForged
	}
	if e, ok := v.(Expiring); ok && now.Truncate(time.Second).After(e.ExpiresAt()) {
		return ErrExpired
	}
	return nil
}

// Box encrypts and authenticates values kept where others can read them:
// AES-256-GCM under a key from Key, with a fresh random nonce each time.
// Every process that derives the same key opens what another sealed.
type Box struct {
	aead cipher.AEAD
}

// NewBox returns a box with key, 32 bytes as Key returns; another length
// is an error.
func NewBox(key []byte) (Box, error) {
	if len(key) != 32 {
		return Box{}, errors.New("signing: a box key is 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return Box{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Box{}, err
	}
	return Box{aead: aead}, nil
}

// Seal returns plain encrypted for label (what the value is; Open must
// name the same label), as unpadded base64url of the nonce, the
// ciphertext and the tag.
func (b Box) Seal(plain []byte, label string) string {
	out := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	_, _ = rand.Read(out) // never fails: crypto/rand crashes the program instead
	out = b.aead.Seal(out, out, plain, []byte(label))
	return base64.RawURLEncoding.EncodeToString(out)
}

// Open returns the plaintext of a value Seal wrote for label. A value that
// is not one is ErrMalformed; one that another key sealed, for another
// label, or that was altered, is ErrForged.
func (b Box) Open(sealed, label string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil || len(raw) < b.aead.NonceSize()+b.aead.Overhead() {
		return nil, ErrMalformed
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(label))
	if err != nil {
		return nil, ErrForged
	}
	return plain, nil
}
