package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
)

// OAuth2Config is the OAuth 2.0 client credentials grant (RFC 6749 §4.4):
// airlock asks TokenURL for an access token, caches it per upstream and
// renews it before it expires.
type OAuth2Config struct {
	TokenURL     string       `yaml:"token_url"`
	ClientID     string       `yaml:"client_id"`
	ClientSecret SecretSource `yaml:"client_secret"`
	Scopes       []string     `yaml:"scopes"`
	// Audience is sent as the audience parameter (Auth0, Okta and others);
	// Resource as RFC 8707's resource indicator.
	Audience string `yaml:"audience"`
	Resource string `yaml:"resource"`
	// AuthMethod is client_secret_basic (default) or client_secret_post.
	AuthMethod string `yaml:"auth_method"`
}

var oauth2Kind = CredentialKind{
	Name:   FormOAuth2,
	keys:   []string{"oauth2"},
	chosen: func(c *CredentialConfig) bool { return c.OAuth2 != nil },
	check: func(l *errList, c *CredentialConfig, p []string) {
		validateOAuth2(l, c.OAuth2, append(append([]string(nil), p...), "oauth2"))
	},
	sources: func(c *CredentialConfig) []namedSource {
		return []namedSource{{"client secret", c.OAuth2.ClientSecret}}
	},
	summary: func(c *CredentialConfig, parts []string) string {
		return fmt.Sprintf("OAuth 2.0 client credentials from %s for client %s, %s", c.OAuth2.TokenURL, c.OAuth2.ClientID, joinParts(parts))
	},
}

// scopeToken is a scope as RFC 6749 section 3.3 writes one.
var scopeToken = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]+$`)

func validateOAuth2(l *errList, o *OAuth2Config, p []string) {
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	switch {
	case o.TokenURL == "":
		l.add("required: the authorization server's token endpoint", at("token_url")...)
	case badEnvRefs(o.TokenURL) != "":
		l.add(badEnvRefs(o.TokenURL), at("token_url")...)
	case wholeEnvRef(o.TokenURL):
		// Read from the environment: checked at start-up.
	default:
		if err := CheckTokenURL(placeholderEnv(o.TokenURL)); err != nil {
			l.add(err.Error(), at("token_url")...)
		}
	}
	if o.ClientID == "" {
		l.add("required: the client id the authorization server registered", at("client_id")...)
	} else if bad := badEnvRefs(o.ClientID); bad != "" {
		l.add(bad, at("client_id")...)
	}
	if !o.ClientSecret.set() && len(o.ClientSecret.unknown) == 0 {
		l.add("required: {env: VARIABLE} or {file: PATH} holding the client secret", at("client_secret")...)
	} else {
		validateSecretSource(l, o.ClientSecret, at("client_secret"))
	}
	for i, s := range o.Scopes {
		if !scopeToken.MatchString(s) {
			l.add("a scope is one word without spaces or quotes", at("scopes", fmt.Sprint(i))...)
		}
	}
	if o.Resource != "" {
		if u, err := url.Parse(o.Resource); err != nil || !u.IsAbs() || u.Fragment != "" {
			l.add("must be an absolute URI without a fragment (RFC 8707)", at("resource")...)
		}
	}
	switch o.AuthMethod {
	case "", AuthClientSecretBasic, AuthClientSecretPost:
	case "private_key_jwt":
		l.add("private_key_jwt is not supported: use client_secret_basic or client_secret_post", at("auth_method")...)
	default:
		l.add("must be client_secret_basic or client_secret_post", at("auth_method")...)
	}
}

// CheckTokenURL accepts an absolute https URL, or http to a loopback host
// (the client secret would otherwise cross the network in clear).
func CheckTokenURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("must be an absolute https URL")
	case u.User != nil:
		return fmt.Errorf("must not carry credentials; use client_id and client_secret")
	case u.Fragment != "":
		return fmt.Errorf("must not have a fragment")
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return fmt.Errorf("must be https: the client secret would cross the network in clear (http is accepted for a loopback host only)")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
