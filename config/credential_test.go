package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

func TestParseConfig_EveryCredentialFormIsAccepted(t *testing.T) {
	for name, cred := range map[string]string{
		"static env":             "    credential: {env: TOKEN}",
		"static file":            "    credential: {file: /run/secrets/token, header: X-Api-Key, scheme: \"\"}",
		"query key":              "    credential: {env: KEY, query: api_key}",
		"basic":                  "    credential:\n      basic: {user: {env: USER}, password: {file: /run/secrets/pass}}",
		"oauth2":                 "    credential:\n      oauth2:\n        token_url: https://login.example.com/oauth2/token\n        client_id: airlock\n        client_secret: {env: CS}\n        scopes: [read, write]\n        audience: https://api.example.com\n        resource: https://api.example.com/\n        auth_method: client_secret_post",
		"oauth2 loopback":        "    credential:\n      oauth2: {token_url: \"http://127.0.0.1:9/token\", client_id: \"${CLIENT_ID}\", client_secret: {file: /run/cs}}",
		"client cert alone":      "    credential:\n      client_certificate: {cert: c.pem, key: k.pem}",
		"client cert and oauth2": "    credential:\n      client_certificate: {cert: c.pem, key: k.pem, ca: ca.pem}\n      oauth2: {token_url: \"https://a.example/t\", client_id: x, client_secret: {env: CS}}",
		"client cert and a key":  "    credential:\n      env: TOKEN\n      client_certificate: {cert: c.pem, key: k.pem}",
		"aws sigv4":              "    credential:\n      aws_sigv4: {access_key_id: {env: AWS_ACCESS_KEY_ID}, secret_access_key: {file: /run/secrets/aws}, region: eu-west-1, service: dynamodb}",
		"aws sigv4 session":      "    credential:\n      aws_sigv4: {access_key_id: {env: K}, secret_access_key: {env: S}, session_token: {env: T}, region: us-east-1, service: es}",
	} {
		if _, err := Parse(configtest.WithCredential(cred)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestParseConfig_CredentialProblemsAreNamedAllAtOnce: every bad field of
// a credential is reported in one go, with its line, and an inline secret
// is refused without being repeated.
func TestParseConfig_CredentialProblemsAreNamedAllAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		cred string
		want []string // "line path: message" fragments, each required
	}{
		{"no form", "    credential: {header: X-Key}", []string{"line 5: upstreams.api.credential: set exactly one of env or file"}},
		{"empty", "    credential: {}", []string{"upstreams.api.credential: set one form"}},
		{"two forms", "    credential:\n      env: TOKEN\n      basic: {user: {env: U}, password: {env: P}}", []string{"upstreams.api.credential: one form per credential"}},
		{"query with a header", "    credential: {env: KEY, query: \"api key\", header: X-Key}", []string{
			"upstreams.api.credential.query: must be a query parameter name", "upstreams.api.credential.header: the query form does not read header; static reads it"}},
		{"basic halves", "    credential:\n      basic:\n        user: {env: U, file: /u}\n        password: {}", []string{
			"line 7: upstreams.api.credential.basic.user: set exactly one of env or file", "line 8: upstreams.api.credential.basic.password: set exactly one of env or file"}},
		{"oauth2 everything wrong", "    credential:\n      oauth2:\n        token_url: http://login.example.com/token\n        client_secret: s3cr3t-inline-value\n        scopes: [\"two words\"]\n        resource: relative/path\n        auth_method: private_key_jwt", []string{
			"line 7: upstreams.api.credential.oauth2.token_url: must be https",
			"upstreams.api.credential.oauth2.client_id: required",
			"line 8: upstreams.api.credential.oauth2.client_secret: a secret is never written in the configuration",
			"upstreams.api.credential.oauth2.scopes.0: a scope is one word",
			"upstreams.api.credential.oauth2.resource: must be an absolute URI",
			"upstreams.api.credential.oauth2.auth_method: private_key_jwt is not supported"}},
		{"oauth2 secret with an unknown key", "    credential:\n      oauth2: {token_url: \"https://a.example/t\", client_id: x, client_secret: {value: abc}}", []string{
			`upstreams.api.credential.oauth2.client_secret: unknown key "value"`}},
		{"client cert without key", "    credential:\n      client_certificate: {cert: c.pem}", []string{"upstreams.api.credential.client_certificate.key: required"}},
		{"aws sigv4 everything wrong", "    credential:\n      aws_sigv4:\n        secret_access_key: wJalrXUtnFEMI-inline\n        session_token: {env: T, file: /t}\n        region: US East 1", []string{
			"upstreams.api.credential.aws_sigv4.access_key_id: required",
			"line 7: upstreams.api.credential.aws_sigv4.secret_access_key: a secret is never written in the configuration",
			"line 8: upstreams.api.credential.aws_sigv4.session_token: set exactly one of env or file",
			"line 9: upstreams.api.credential.aws_sigv4.region: must be a region name",
			"upstreams.api.credential.aws_sigv4.service: required"}},
		{"aws sigv4 beside a key", "    credential:\n      env: TOKEN\n      aws_sigv4: {access_key_id: {env: K}, secret_access_key: {env: S}, region: us-east-1, service: dynamodb}", []string{
			"upstreams.api.credential: one form per credential"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(configtest.WithCredential(tc.cred))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("missing %q in:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t-inline") || strings.Contains(err.Error(), "wJalrXUtnFEMI") {
				t.Errorf("the error repeats the inline secret: %v", err)
			}
		})
	}
}

// TestCheck_NamesEachSecretsSourceAndWhatIsMissing: airlock check shows
// every form with where its secrets come from and whether they are there,
// and warns about each one that is not, never showing a value.
func TestCheck_NamesEachSecretsSourceAndWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	pass := filepath.Join(dir, "pass")
	if err := os.WriteFile(pass, []byte("pw-value-1234\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"U": "svc-user-name", "CS": "cs-value-1234"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		cred, summary string
		warnings      []string
	}{
		{"    credential:\n      basic: {user: {env: U}, password: {file: " + pass + "}}", "basic credential, basic user from $U (set), basic password from file " + pass + " (readable)", nil},
		{"    credential:\n      basic: {user: {env: MISSING_USER}, password: {file: /nope/pass}}", "basic user from $MISSING_USER (NOT SET), basic password from file /nope/pass (NOT READABLE)",
			[]string{"the basic user's environment variable MISSING_USER is not set", "the basic password file /nope/pass is missing"}},
		{"    credential:\n      oauth2: {token_url: \"https://a.example/t\", client_id: airlock, client_secret: {env: CS}}", "OAuth 2.0 client credentials from https://a.example/t for client airlock, client secret from $CS (set)", nil},
		{"    credential: {env: NOKEY, query: api_key}", "credential in query parameter api_key, secret from $NOKEY (NOT SET)", []string{"the credential's environment variable NOKEY is not set"}},
		{"    credential:\n      client_certificate: {cert: /nope/c.pem, key: /nope/k.pem}", "client certificate /nope/c.pem (NOT READABLE)", []string{"the client certificate file /nope/c.pem is missing", "the client certificate file /nope/k.pem is missing"}},
	} {
		cfg, err := Parse(configtest.WithCredential(tc.cred))
		if err != nil {
			t.Fatal(err)
		}
		sum := strings.Join(cfg.Summary(getenv), "\n")
		if !strings.Contains(sum, tc.summary) {
			t.Errorf("summary %q lacks %q", sum, tc.summary)
		}
		warns := strings.Join(cfg.EnvWarnings(getenv), "\n")
		for _, w := range tc.warnings {
			if !strings.Contains(warns, w) {
				t.Errorf("warnings %q lack %q", warns, w)
			}
		}
		for _, v := range env {
			if strings.Contains(sum+warns, v) {
				t.Errorf("a value shows: %s %s", sum, warns)
			}
		}
	}
}
