package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// envRef is a ${NAME} reference to an environment variable inside a
// configuration value (base_url).
var envRef = regexp.MustCompile(`\$\{([^}]*)\}`)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// badEnvRefs describes a malformed ${...} reference ("" when there is none).
func badEnvRefs(v string) string {
	for _, m := range envRef.FindAllStringSubmatch(v, -1) {
		if !envName.MatchString(m[1]) {
			return fmt.Sprintf("${%s} is not an environment variable name", m[1])
		}
	}
	if strings.Count(v, "${") != len(envRef.FindAllString(v, -1)) {
		return "an unterminated ${ reference"
	}
	return ""
}

// wholeEnvRef reports whether v is exactly one ${NAME} reference.
func wholeEnvRef(v string) bool {
	m := envRef.FindStringIndex(v)
	return m != nil && m[0] == 0 && m[1] == len(v)
}

// placeholderEnv replaces each reference by a word that keeps a URL
// parseable, for checks made before the environment is read.
func placeholderEnv(v string) string { return envRef.ReplaceAllString(v, "env") }

// ExpandEnv replaces each ${NAME} with the variable's value; an unset or
// empty variable is an error naming it.
func ExpandEnv(v string, getenv func(string) string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(v, func(ref string) string {
		name := ref[2 : len(ref)-1]
		val := getenv(name)
		if val == "" {
			missing = append(missing, name)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %q is empty or unset", missing[0])
	}
	return out, nil
}

// EnvRefs lists the environment variables a configuration reads besides
// credentials (references in base_url, token_url and client_id), sorted
// and unique.
func (c *Config) EnvRefs() []string {
	seen := map[string]bool{}
	add := func(v string) {
		for _, m := range envRef.FindAllStringSubmatch(v, -1) {
			seen[m[1]] = true
		}
	}
	for _, u := range c.Upstreams {
		if u != nil {
			add(u.BaseURL)
			if cr := u.Credential; cr != nil && cr.OAuth2 != nil {
				add(cr.OAuth2.TokenURL)
				add(cr.OAuth2.ClientID)
			}
		}
	}
	for _, r := range c.Resources {
		if r == nil {
			continue
		}
		for _, s := range r.Sources {
			add(s.BaseURL)
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// EnvWarnings lists what the configuration needs from the environment and
// does not find: credential variables and files, and variables named in
// base_url. serve would refuse to start; check warns (an error under
// --strict).
func (c *Config) EnvWarnings(getenv func(string) string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.Upstreams)) {
		u := c.Upstreams[name]
		if u == nil {
			continue
		}
		if cr := u.Credential; cr != nil {
			out = append(out, credentialWarnings(name, cr, getenv)...)
		}
	}
	for _, v := range c.EnvRefs() {
		if getenv(v) == "" {
			out = append(out, fmt.Sprintf("the environment variable %s named in a base_url, token_url or client_id is not set", v))
		}
	}
	return out
}

// Placeholders answers getenv for every variable the configuration reads
// and the environment lacks, with a value that lets Initialize check the
// rest of the configuration without them.
func (c *Config) Placeholders(getenv func(string) string) func(string) string {
	refs := map[string]bool{}
	for _, v := range c.EnvRefs() {
		refs[v] = true
	}
	return func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		if refs[k] {
			return "http://placeholder.invalid"
		}
		return "placeholder"
	}
}
