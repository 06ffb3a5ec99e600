package transport

import (
	"net/http"
	"strings"

	"github.com/airlock-mcp/airlock/redact"
)

// minSentPart is the shortest part of a sent credential header (a SigV4
// Signature, a cookie's value) redacted on its own: a shorter one (a
// region, wikiUserID=2) is no secret and would match ordinary words.
const minSentPart = 16

// credentialHeaders are the headers that carry a credential on a request
// of this client: those any credential may set (Authorization, Cookie,
// the session token of temporary AWS keys) and those its form names (a
// static key's header, a session's captured token, a write's CSRF
// token).
func credentialHeaders(c *credential) []string {
	names := []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Amz-Security-Token"}
	if c == nil {
		return names
	}
	if c.header != "" {
		names = append(names, c.header)
	}
	if s := c.session; s != nil {
		if s.cfg.Header != nil {
			names = append(names, s.cfg.Header.Name)
		}
		if s.cfg.CSRFHeader != "" {
			names = append(names, s.cfg.CSRFHeader)
		}
	}
	return names
}

// sentCredentials records, on the reqInfo of the request it carries, the
// credential headers each attempt really sent: a SigV4 signature (and an
// access token, a session's token) exists only on the attempt, and no
// stored secret matches it. An error answer that echoes one is redacted
// against them before it is quoted (redactSent). It never logs them.
type sentCredentials struct {
	names []string
	next  http.RoundTripper
}

// RoundTrip records the attempt's credential headers and sends it.
func (s *sentCredentials) RoundTrip(req *http.Request) (*http.Response, error) {
	if info, ok := req.Context().Value(reqInfoKey).(*reqInfo); ok {
		var vals []string
		for _, n := range s.names {
			vals = append(vals, req.Header.Values(n)...)
		}
		if len(vals) > 0 {
			info.mu.Lock()
			info.sentCreds = append(info.sentCreds, vals...)
			info.mu.Unlock()
		}
	}
	return s.next.RoundTrip(req)
}

// CloseIdleConnections is forwarded, so that http.Client's reaches the
// transport it wraps.
func (s *sentCredentials) CloseIdleConnections() {
	if c, ok := s.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// sentSecrets are the texts of one sent credential header to redact: the
// whole value, its credentials after the scheme (AWS4-HMAC-SHA256 …,
// Bearer …), and each of its name=value parts long enough to be a secret
// (a SigV4 Signature=, a cookie's value).
func sentSecrets(value string) []string {
	out := []string{value}
	if _, rest, ok := strings.Cut(value, " "); ok {
		out = append(out, strings.TrimSpace(rest))
	}
	for _, part := range strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		if _, v, ok := strings.Cut(part, "="); ok && len(v) >= minSentPart {
			out = append(out, v)
		}
	}
	return out
}

// redactSent removes from an error answer's body every credential header
// value the request's attempts sent (see sentCredentials).
func redactSent(b []byte, info *reqInfo) []byte {
	info.mu.Lock()
	vals := info.sentCreds
	info.mu.Unlock()
	if len(vals) == 0 {
		return b
	}
	var secrets []string
	for _, v := range vals {
		secrets = append(secrets, sentSecrets(v)...)
	}
	return redact.New(secrets...).Bytes(b)
}
