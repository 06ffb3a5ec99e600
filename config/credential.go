package config

import (
	"fmt"
	"os"
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

// ClientCertConfig is a client certificate for mutual TLS, from PEM files.
// CA, when set, is the only authority trusted for the upstream's server
// certificate.
type ClientCertConfig struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	CA   string `yaml:"ca"`
}

// static is the static secret's source.
func (c *CredentialConfig) static() SecretSource { return SecretSource{Env: c.Env, File: c.File} }

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
	if k, ok := CredentialKindOf(c.Form()); ok && k.summary != nil {
		return k.summary(c, parts)
	}
	return fmt.Sprintf("%s credential, %s", c.Form(), joinParts(parts))
}

// joinParts lists the secrets' states.
func joinParts(parts []string) string { return strings.Join(parts, ", ") }

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
