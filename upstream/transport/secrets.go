package transport

import (
	"encoding/base64"
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
