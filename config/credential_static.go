package config

import (
	"fmt"
	"regexp"
	"strings"
)

// queryParamName is a query parameter's or a header's name.
var queryParamName = regexp.MustCompile(`^[A-Za-z0-9_.\-\[\]]+$`)

// staticKind is a static secret sent in a header: env or file, header
// (Authorization) and scheme (Bearer).
var staticKind = CredentialKind{
	Name: FormStatic,
	keys: []string{"env", "file", "header", "scheme"},
	// The secret chooses the form; header and scheme only say how it is
	// sent (and are another form's foreign keys).
	chosen: func(c *CredentialConfig) bool { return (c.Env != "" || c.File != "") && c.Query == "" },
	check: func(l *errList, c *CredentialConfig, p []string) {
		checkStaticSecret(l, c, p)
		if c.Header != "" && (strings.ContainsAny(c.Header, " :\t") || !queryParamName.MatchString(c.Header)) {
			l.add("must be an HTTP header name", append(append([]string(nil), p...), "header")...)
		}
	},
	sources: func(c *CredentialConfig) []namedSource { return []namedSource{{"secret", c.static()}} },
	summary: func(c *CredentialConfig, parts []string) string {
		// Said as airlock check has always said it.
		return strings.Replace(parts[0], "secret from", "credential from", 1) + withCert(parts[1:])
	},
}

// queryKind is a static secret sent as a query parameter (?api_key=).
var queryKind = CredentialKind{
	Name:   FormQuery,
	keys:   []string{"env", "file", "query"},
	chosen: func(c *CredentialConfig) bool { return c.Query != "" },
	check: func(l *errList, c *CredentialConfig, p []string) {
		checkStaticSecret(l, c, p)
		if !queryParamName.MatchString(c.Query) {
			l.add("must be a query parameter name such as api_key", append(append([]string(nil), p...), "query")...)
		}
	},
	sources: func(c *CredentialConfig) []namedSource { return []namedSource{{"secret", c.static()}} },
	summary: func(c *CredentialConfig, parts []string) string {
		return fmt.Sprintf("credential in query parameter %s, %s", c.Query, joinParts(parts))
	},
}

// checkStaticSecret: a static secret is read from exactly one of env and
// file.
func checkStaticSecret(l *errList, c *CredentialConfig, p []string) {
	if (c.Env == "") == (c.File == "") {
		l.add("set exactly one of env or file", p...)
	}
}
