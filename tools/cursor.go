package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	"github.com/airlock-mcp/airlock/internal/signing"
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
	return cursorKeyFrom(signing.Random())
}

func cursorKeyFrom(secret []byte) CursorKey {
	return CursorKey{ID: signing.KeyID(secret), Secret: secret}
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
	// Q is the manifest query a get_selection cursor continues, so that a
	// caller who gives only the cursor (as preview_selection hands it
	// out) continues that same query.
	Q *manifestQuery `json:"q,omitempty"`
	// Claim is the upstream's claim a search_all cursor verifies (count:
	// claimed), carried so that the answers continuing it set the count
	// beside it.
	Claim *upstreamClaim `json:"c,omitempty"`
}

// manifestQuery is what a manifest page was asked for: a disposition,
// a group (values in canonical JSON) and the review fields.
type manifestQuery struct {
	Disposition string                     `json:"d,omitempty"`
	Group       map[string]json.RawMessage `json:"g,omitempty"`
	Fields      []string                   `json:"f,omitempty"`
}

// sealer signs with half an HMAC: a cursor travels in every call.
func (k CursorKey) sealer() signing.Sealer { return signing.NewSealer(k.Secret, signing.ShortTag) }

func (k CursorKey) encode(p cursorPayload) string {
	p.Key = k.ID
	return k.sealer().Seal(p)
}

type cursorState int

const (
	cursorOK cursorState = iota
	cursorTampered
	cursorOtherKey
)

func (k CursorKey) decode(s string) (cursorPayload, cursorState) {
	var p cursorPayload
	// A cursor does not expire by itself: the frozen scan it names does.
	err := k.sealer().Open(s, time.Time{}, &p)
	switch {
	case errors.Is(err, signing.ErrMalformed):
		return p, cursorTampered
	case p.Key != k.ID:
		return p, cursorOtherKey
	case err != nil:
		return p, cursorTampered
	}
	return p, cursorOK
}

// fingerprint binds a cursor to the arguments that define the scan. An
// unset list or map and an empty one are the same argument: a cursor
// handed out by one tool is accepted by the tool it names, whichever of the
// two forms each tool holds.
func fingerprint(parts ...any) string {
	for i, p := range parts {
		if v := reflect.ValueOf(p); (v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.Len() == 0 {
			parts[i] = []any{}
		}
	}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
