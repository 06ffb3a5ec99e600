package upstream

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"sort"
	"strings"
)

// credentialSecrets lists what a credential header value gives away, each
// of which must be redacted: the whole value, the secret after its scheme
// ("Bearer x" -> "x") and, for Basic, the decoded user:password and the
// password.
func credentialSecrets(value string) []string {
	if value == "" {
		return nil
	}
	out := []string{value}
	scheme, rest, ok := strings.Cut(value, " ")
	if !ok {
		return out
	}
	rest = strings.TrimSpace(rest)
	out = append(out, rest)
	if strings.EqualFold(scheme, "basic") {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			if dec, err := enc.DecodeString(rest); err == nil {
				out = append(out, string(dec))
				if _, pass, ok := strings.Cut(string(dec), ":"); ok {
					out = append(out, pass)
				}
				break
			}
		}
	}
	return out
}

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
		if c := rt.Upstreams[n].cred; c != nil {
			h.Write(c.print)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
