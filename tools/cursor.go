package tools

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Cursors are opaque to callers: a payload naming a frozen scan and a
// delivery offset, bound to the query's fingerprint, with an HMAC.

// CursorKey signs cursors. ID changes whenever the key does, so that a
// cursor from an earlier airlock process reads as expired, not tampered.
type CursorKey struct {
	ID     string
	Secret []byte
}

// NewCursorKey returns a random key.
func NewCursorKey() CursorKey {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		panic("tools: no randomness: " + err.Error())
	}
	return cursorKeyFrom(secret)
}

func cursorKeyFrom(secret []byte) CursorKey {
	sum := sha256.Sum256(secret)
	return CursorKey{ID: hex.EncodeToString(sum[:4]), Secret: secret}
}

type cursorPayload struct {
	Key         string `json:"k"`
	Scan        string `json:"s"`
	Offset      int    `json:"o,omitempty"`
	After       string `json:"a,omitempty"`
	Fingerprint string `json:"f"`
	// Rev is the frozen scan's revision in the store when the cursor was
	// issued.
	Rev int `json:"r,omitempty"`
}

func (k CursorKey) mac(b []byte) []byte {
	m := hmac.New(sha256.New, k.Secret)
	m.Write(b)
	return m.Sum(nil)[:16]
}

func (k CursorKey) encode(p cursorPayload) string {
	p.Key = k.ID
	b, _ := json.Marshal(p)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(k.mac(b))
}

type cursorState int

const (
	cursorOK cursorState = iota
	cursorTampered
	cursorOtherKey
)

func (k CursorKey) decode(s string) (cursorPayload, cursorState) {
	var p cursorPayload
	body, sig, ok := strings.Cut(s, ".")
	if !ok {
		return p, cursorTampered
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || json.Unmarshal(b, &p) != nil {
		return p, cursorTampered
	}
	if p.Key != k.ID {
		return p, cursorOtherKey
	}
	if !hmac.Equal(mac, k.mac(b)) {
		return p, cursorTampered
	}
	return p, cursorOK
}

// fingerprint binds a cursor to the arguments that define the scan.
func fingerprint(parts ...any) string {
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
