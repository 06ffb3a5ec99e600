package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
)

// CredentialFingerprint identifies the credentials the runtime's clients
// send, without revealing them: it changes when any credential material
// does (a secret, a Basic pair, a query key, an OAuth client's id, secret,
// token URL, scopes, audience or resource, a client certificate or key),
// and not when an access token is renewed. Answers remembered from an
// upstream are keyed on it.
func (rt *Runtime) CredentialFingerprint() string {
	names := make([]string, 0, len(rt.Upstreams))
	for n := range rt.Upstreams {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(rt.Upstreams[n].CredentialPrint())
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
