package draft

import (
	"net/url"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/airlock-mcp/airlock/config"
)

// oauthDraft is an OAuth 2.0 client credentials credential read from a
// document's clientCredentials flow.
type oauthDraft struct {
	tokenURL string
	scopes   []string
}

// credentialFromScheme drafts the credential of one security scheme: a
// bearer token, an API key in a header or the query, Basic from a user
// and a password, or OAuth 2.0 client credentials with the flow's token
// URL and scopes. Every secret is read from an environment variable whose
// name is drafted from the upstream's; what only a person knows (the
// client id, a relative token URL) is a TODO.
func credentialFromScheme(name string, s *openapi3.SecurityScheme, upstreamName string) (*credDraft, string) {
	env := envName(upstreamName)
	base := strings.TrimSuffix(env, "_TOKEN")
	switch {
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		return &credDraft{env: env}, "security scheme " + quote(name) + ": a bearer token"
	case s.Type == "http" && strings.EqualFold(s.Scheme, "basic"):
		return &credDraft{user: base + "_USER", env: base + "_PASSWORD", basic: true},
			"security scheme " + quote(name) + ": basic, from a user and a password read separately"
	case s.Type == "apiKey" && s.In == "header":
		empty := ""
		return &credDraft{env: env, header: s.Name, scheme: &empty}, "security scheme " + quote(name) + ": an API key in the " + s.Name + " header"
	case s.Type == "apiKey" && s.In == "query":
		return &credDraft{env: base + "_API_KEY", query: s.Name}, "security scheme " + quote(name) + ": an API key in the " + s.Name + " query parameter"
	case s.Type == "oauth2" && s.Flows != nil && s.Flows.ClientCredentials != nil:
		f := s.Flows.ClientCredentials
		o := &oauthDraft{tokenURL: f.TokenURL}
		if u, err := url.Parse(f.TokenURL); err != nil || !u.IsAbs() {
			o.tokenURL = config.Todo("the authorization server's absolute token URL; the document's is " + strings.ReplaceAll(f.TokenURL, ")", ""))
		}
		for sc := range f.Scopes {
			o.scopes = append(o.scopes, sc)
		}
		sort.Strings(o.scopes)
		return &credDraft{env: base + "_CLIENT_SECRET", oauth: o},
			"security scheme " + quote(name) + ": OAuth 2.0 client credentials; airlock obtains and renews the token"
	case s.Type == "oauth2" || s.Type == "openIdConnect":
		return &credDraft{env: env}, "security scheme " + quote(name) + " (" + s.Type + " without a client credentials flow): airlock sends an access token you obtain; it does not run the flow"
	}
	return &credDraft{env: todo("the variable holding the credential; security scheme " + name + " is sent in the " + s.In + ", which airlock cannot do")}, ""
}

// render writes the credential block of an upstream.
func (c *credDraft) render(w *writer) {
	w.line(2, "credential:")
	switch {
	case c.sigv4 != nil:
		w.line(3, "aws_sigv4:")
		w.kv(4, "access_key_id", "{env: "+SigV4KeyEnv+"}", "read from this variable")
		w.kv(4, "secret_access_key", "{env: "+SigV4SecretEnv+"}", "read from this variable, never written here")
		if c.sigv4.SessionToken {
			w.kv(4, "session_token", "{env: "+SigV4TokenEnv+"}", "temporary credentials")
		}
		w.kv(4, "region", quote(c.sigv4.Region), "")
		w.kv(4, "service", quote(c.sigv4.Service), "")
	case c.oauth != nil:
		w.line(3, "oauth2:")
		w.kv(4, "token_url", quote(c.oauth.tokenURL), "")
		w.kv(4, "client_id", quote(config.Todo("the client id the authorization server registered for airlock")), "")
		w.kv(4, "client_secret", "{env: "+c.env+"}", "the secret is read from this variable, never written here")
		if len(c.oauth.scopes) > 0 {
			w.kv(4, "scopes", "["+strings.Join(c.oauth.scopes, ", ")+"]", "the document's scopes: keep only those airlock needs")
		}
	case c.basic:
		w.line(3, "basic:")
		w.kv(4, "user", "{env: "+c.user+"}", "read from this variable")
		w.kv(4, "password", "{env: "+c.env+"}", "read from this variable, never written here")
	default:
		w.kv(3, "env", quote(c.env), "the secret is read from this variable, never written here")
		if c.query != "" {
			w.kv(3, "query", quote(c.query), "sent as this query parameter; redacted from every URL airlock shows")
		}
		if c.header != "" {
			w.kv(3, "header", quote(c.header), "")
		}
		if c.scheme != nil {
			w.kv(3, "scheme", quote(*c.scheme), "")
		}
	}
}
