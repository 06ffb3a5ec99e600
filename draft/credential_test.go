package draft

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
)

// TestDraftCredential_FromEachSecurityScheme: init drafts the credential a
// document's security scheme describes, reads every secret from the
// environment, and leaves to a person what only a person knows; once
// that is decided, the configuration holds the form the scheme names.
func TestDraftCredential_FromEachSecurityScheme(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("testdata", "stripe-cursor.openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, scheme string
		form         string
		lines        []string // each must appear in the draft
		todos        int      // TODOs about the credential
	}{
		{"client credentials", `{type: oauth2, flows: {clientCredentials: {tokenUrl: "https://login.example.com/oauth2/token", scopes: {billing.write: write, billing.read: read}}}}`, config.FormOAuth2, []string{`token_url: "https://login.example.com/oauth2/token"`, "client_secret: {env: BILLING_CLIENT_SECRET}", "scopes: [billing.read, billing.write]"}, 1},
		{"client credentials, relative token url", `{type: oauth2, flows: {clientCredentials: {tokenUrl: /oauth/token, scopes: {}}}}`, config.FormOAuth2, []string{`token_url: "TODO(the authorization server's absolute token URL; the document's is /oauth/token`}, 2},
		{"api key in the query", `{type: apiKey, in: query, name: api_key}`, config.FormQuery, []string{"env: BILLING_API_KEY", "query: api_key"}, 0},
		{"basic", `{type: http, scheme: basic}`, config.FormBasic, []string{"user: {env: BILLING_USER}", "password: {env: BILLING_PASSWORD}"}, 0},
		{"api key in a header", `{type: apiKey, in: header, name: X-Api-Key}`, config.FormStatic, []string{"header: X-Api-Key", `scheme: ""`}, 0},
		{"authorization code only", `{type: oauth2, flows: {authorizationCode: {authorizationUrl: "https://l.example/a", tokenUrl: "https://l.example/t", scopes: {}}}}`, config.FormStatic, []string{"env: BILLING_TOKEN", "it does not run the flow"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := strings.Replace(string(doc), "bearerAuth: {type: http, scheme: bearer}", "bearerAuth: "+tc.scheme, 1)
			dr, err := FromOpenAPI([]byte(d), Options{Environment: "test"})
			if err != nil {
				t.Fatal(err)
			}
			y := string(dr.YAML)
			for _, l := range tc.lines {
				if !strings.Contains(y, l) {
					t.Errorf("the draft lacks %q:\n%s", l, y)
				}
			}
			todos := 0
			for _, td := range dr.TODOs {
				if strings.Contains(td, "client id") || strings.Contains(td, "token URL") {
					todos++
				}
			}
			if todos != tc.todos {
				t.Fatalf("%d credential TODOs, want %d: %v", todos, tc.todos, dr.TODOs)
			}
			// The actions the document describes are decisions of their
			// own: this test keeps the upstream and its resource.
			if i := strings.Index(y, "\nactions:"); i >= 0 {
				y = y[:i+1]
			}
			if len(config.FindTodos([]byte(y))) != tc.todos {
				t.Fatal("the credential's TODOs do not stop the configuration")
			}
			// The person decides.
			y = strings.ReplaceAll(y, `"TODO(the client id the authorization server registered for airlock)"`, "airlock")
			y = strings.ReplaceAll(y, `"TODO(the authorization server's absolute token URL; the document's is /oauth/token)"`, `"https://login.example.com/oauth/token"`)
			cfg := mustParse(t, []byte(y))
			if errs := cfg.Unresolved(); len(errs) > 0 {
				t.Fatalf("left: %v", errs)
			}
			for _, u := range cfg.Upstreams {
				if got := u.Credential.Form(); got != tc.form {
					t.Fatalf("form %s, want %s", got, tc.form)
				}
			}
		})
	}
}

func mustParse(t *testing.T, y []byte) *config.Config {
	t.Helper()
	cfg, err := config.Parse(y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return cfg
}
