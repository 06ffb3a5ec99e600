package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Credential forms, as describe_resources and airlock check name them.
const (
	FormStatic            = "static"
	FormQuery             = "query"
	FormBasic             = "basic"
	FormOAuth2            = "oauth2_client_credentials"
	FormClientCertificate = "client_certificate"
)

// OAuth 2.0 client authentication methods at the token endpoint.
const (
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
)

// SecretSource is where one secret is read: an environment variable or a
// file, never the configuration itself. A value written inline is kept
// out of the parsed configuration (and out of every error message) and
// reported by validation.
type SecretSource struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`

	inline  bool
	unknown []string
}

// UnmarshalYAML reads {env: NAME} or {file: PATH}. A plain value is
// remembered as written inline, without the value.
func (s *SecretSource) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				s.unknown = append(s.unknown, k.Value)
				continue
			}
			switch k.Value {
			case "env":
				s.Env = v.Value
			case "file":
				s.File = v.Value
			default:
				s.unknown = append(s.unknown, k.Value)
			}
		}
	case yaml.ScalarNode:
		s.inline = n.Tag != "!!null"
	default:
		s.inline = true
	}
	return nil
}

// set reports whether the source names anything.
func (s SecretSource) set() bool { return s.Env != "" || s.File != "" || s.inline }

// describe says where the secret is read, never what it is.
func (s SecretSource) describe() string {
	if s.Env != "" {
		return "env " + s.Env
	}
	return "file " + s.File
}

// BasicConfig is HTTP Basic authentication from a user and a password, each
// read from its own environment variable or file.
type BasicConfig struct {
	User     SecretSource `yaml:"user"`
	Password SecretSource `yaml:"password"`
}

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

// ClientCertConfig is a client certificate for mutual TLS, from PEM files.
// CA, when set, is the only authority trusted for the upstream's server
// certificate.
type ClientCertConfig struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	CA   string `yaml:"ca"`
}

// Form names the credential's form: static, query, basic or
// oauth2_client_credentials, or client_certificate alone.
func (c *CredentialConfig) Form() string {
	switch {
	case c.Session != nil:
		return FormSession
	case c.SigV4 != nil:
		return FormSigV4
	case c.OAuth2 != nil:
		return FormOAuth2
	case c.Basic != nil:
		return FormBasic
	case c.Query != "":
		return FormQuery
	case c.Env != "" || c.File != "":
		return FormStatic
	case c.ClientCertificate != nil:
		return FormClientCertificate
	}
	return ""
}

// static is the static secret's source.
func (c *CredentialConfig) static() SecretSource { return SecretSource{Env: c.Env, File: c.File} }

var (
	queryParamName = regexp.MustCompile(`^[A-Za-z0-9_.\-\[\]]+$`)
	scopeToken     = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]+$`) // RFC 6749 §3.3
)

func validateCredential(l *errList, c *CredentialConfig, p []string) {
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	staticSet := c.Env != "" || c.File != "" || c.Header != "" || c.Scheme != nil || c.Query != ""
	forms := 0
	for _, set := range []bool{staticSet, c.Basic != nil, c.OAuth2 != nil, c.Session != nil, c.SigV4 != nil} {
		if set {
			forms++
		}
	}
	switch {
	case forms == 0 && c.ClientCertificate == nil:
		l.add("set one form: env or file (a static secret), basic, oauth2, session, aws_sigv4 or client_certificate", p...)
	case forms > 1:
		l.add("one form per credential: a static secret (env or file), basic, oauth2, session or aws_sigv4; only client_certificate goes with another", p...)
	}
	if c.SigV4 != nil {
		validateSigV4(l, c.SigV4, at("aws_sigv4"))
	}
	if c.Session != nil {
		validateSession(l, c.Session, at("session"))
	}
	if staticSet {
		if (c.Env == "") == (c.File == "") {
			l.add("set exactly one of env or file", p...)
		}
		if c.Query != "" {
			if !queryParamName.MatchString(c.Query) {
				l.add("must be a query parameter name such as api_key", at("query")...)
			}
			if c.Header != "" || c.Scheme != nil {
				l.add("query sends the secret as a query parameter: header and scheme do not apply", at("query")...)
			}
		}
		if c.Header != "" && (strings.ContainsAny(c.Header, " :\t") || !queryParamName.MatchString(c.Header)) {
			l.add("must be an HTTP header name", at("header")...)
		}
	}
	if b := c.Basic; b != nil {
		validateSecretSource(l, b.User, at("basic", "user"))
		validateSecretSource(l, b.Password, at("basic", "password"))
	}
	if o := c.OAuth2; o != nil {
		validateOAuth2(l, o, at("oauth2"))
	}
	if cc := c.ClientCertificate; cc != nil {
		if cc.Cert == "" {
			l.add("required: the PEM file of the client certificate", at("client_certificate", "cert")...)
		}
		if cc.Key == "" {
			l.add("required: the PEM file of the certificate's private key", at("client_certificate", "key")...)
		}
	}
}

// validateSecretSource checks a required secret: exactly one of env and
// file, never the value itself.
func validateSecretSource(l *errList, s SecretSource, p []string) {
	for _, k := range s.unknown {
		l.add(fmt.Sprintf("unknown key %q: use env or file", k), p...)
	}
	switch {
	case s.inline:
		l.add("a secret is never written in the configuration: use {env: VARIABLE} or {file: PATH}", p...)
	case (s.Env == "") == (s.File == ""):
		l.add("set exactly one of env or file", p...)
	}
}

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

// credentialSources lists every secret a credential reads, with what it
// is, for airlock check's warnings and summary.
func credentialSources(c *CredentialConfig) []namedSource {
	var out []namedSource
	if c.Env != "" || c.File != "" {
		out = append(out, namedSource{"secret", c.static()})
	}
	if b := c.Basic; b != nil {
		out = append(out, namedSource{"basic user", b.User}, namedSource{"basic password", b.Password})
	}
	if o := c.OAuth2; o != nil {
		out = append(out, namedSource{"client secret", o.ClientSecret})
	}
	if se := c.Session; se != nil {
		for _, name := range slices.Sorted(maps.Keys(se.Secrets)) {
			out = append(out, namedSource{"session secret " + name, se.Secrets[name]})
		}
	}
	if s := c.SigV4; s != nil {
		out = append(out, sigV4Sources(s)...)
	}
	return out
}

// Sources are where the credential's secrets are read, in order: "env
// NAME" or "file PATH".
func (c *CredentialConfig) Sources() []string {
	var out []string
	for _, s := range credentialSources(c) {
		out = append(out, s.src.describe())
	}
	return out
}

type namedSource struct {
	what string
	src  SecretSource
}

// present says whether a secret source holds a value now.
func (s SecretSource) present(getenv func(string) string) bool {
	if s.Env != "" {
		return strings.TrimSpace(getenv(s.Env)) != ""
	}
	b, err := os.ReadFile(s.File)
	return err == nil && strings.TrimSpace(string(b)) != ""
}

// credentialSummary describes an upstream's credential for airlock check:
// its form and where each secret comes from, with whether it is there.
func credentialSummary(c *CredentialConfig, getenv func(string) string) string {
	if c == nil {
		return "no credential"
	}
	var parts []string
	for _, s := range credentialSources(c) {
		state := "set"
		missing := "NOT SET"
		if s.src.File != "" {
			state, missing = "readable", "NOT READABLE"
		}
		if !s.src.present(getenv) {
			state = missing
		}
		from := "$" + s.src.Env
		if s.src.File != "" {
			from = "file " + s.src.File
		}
		parts = append(parts, fmt.Sprintf("%s from %s (%s)", s.what, from, state))
	}
	if cc := c.ClientCertificate; cc != nil {
		state := "readable"
		for _, f := range []string{cc.Cert, cc.Key, cc.CA} {
			if f == "" {
				continue
			}
			if _, err := os.Stat(f); err != nil {
				state = "NOT READABLE"
			}
		}
		parts = append(parts, fmt.Sprintf("client certificate %s (%s)", cc.Cert, state))
	}
	form := c.Form()
	switch form {
	case FormStatic:
		// Said as airlock check has always said it.
		return strings.Replace(parts[0], "secret from", "credential from", 1) + withCert(parts[1:])
	case FormQuery:
		return fmt.Sprintf("credential in query parameter %s, %s", c.Query, strings.Join(parts, ", "))
	case FormOAuth2:
		return fmt.Sprintf("OAuth 2.0 client credentials from %s for client %s, %s", c.OAuth2.TokenURL, c.OAuth2.ClientID, strings.Join(parts, ", "))
	case FormSigV4:
		return fmt.Sprintf("AWS Signature Version 4 for %s in %s, %s", c.SigV4.Service, c.SigV4.Region, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("%s credential, %s", form, strings.Join(parts, ", "))
}

func withCert(rest []string) string {
	if len(rest) == 0 {
		return ""
	}
	return ", " + strings.Join(rest, ", ")
}

// credentialWarnings lists what a credential needs from the environment
// and the files it reads that is not there.
func credentialWarnings(name string, c *CredentialConfig, getenv func(string) string) []string {
	var out []string
	for _, s := range credentialSources(c) {
		if s.src.present(getenv) {
			continue
		}
		what := s.what
		if what == "secret" {
			what = "credential"
		}
		if s.src.Env != "" {
			out = append(out, fmt.Sprintf("upstream %s: the %s's environment variable %s is not set", name, what, s.src.Env))
		} else {
			out = append(out, fmt.Sprintf("upstream %s: the %s file %s is missing, unreadable or empty", name, what, s.src.File))
		}
	}
	if cc := c.ClientCertificate; cc != nil {
		for _, f := range []string{cc.Cert, cc.Key, cc.CA} {
			if f == "" {
				continue
			}
			if b, err := os.ReadFile(f); err != nil || len(b) == 0 {
				out = append(out, fmt.Sprintf("upstream %s: the client certificate file %s is missing, unreadable or empty", name, f))
			}
		}
	}
	return out
}
