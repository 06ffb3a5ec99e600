package transport

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/redact"
)

// TestCredentialLoaders_OneForEveryFormConfigNames: upstream loads exactly
// the credential forms config's table of kinds names.
func TestCredentialLoaders_OneForEveryFormConfigNames(t *testing.T) {
	names := map[string]bool{}
	for _, k := range config.CredentialKinds() {
		names[k.Name] = true
		if credentialLoaders[k.Name] == nil {
			t.Errorf("config names the form %s, upstream has no loader for it", k.Name)
		}
	}
	for name := range credentialLoaders {
		if !names[name] {
			t.Errorf("upstream loads a form %s that config does not name", name)
		}
	}
}

// TestRuntimeRedactor_KnowsEveryLoadedCredential: the redactor a client
// is given (the runtime's) removes each credential, its secret alone and a
// Basic credential's decoded password.
func TestRuntimeRedactor_KnowsEveryLoadedCredential(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("svc-user:s3cr3t-passw0rd"))
	yaml := strings.Replace(string(fixtures.DemoConfig("http://127.0.0.1:1")), "env: "+fixtures.DemoTokenEnv,
		"env: "+fixtures.DemoTokenEnv+"\n      scheme: Basic", 1)
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	rd := redact.New()
	c, err := newClient("demo", cfg.Upstreams["demo"], Options{Getenv: func(string) string { return basic }, Redactor: rd})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.cred.value; v != "Basic "+basic {
		t.Fatalf("the edit did not take: %q", v)
	}
	for _, s := range []string{"Basic " + basic, basic, "svc-user:s3cr3t-passw0rd", "s3cr3t-passw0rd"} {
		if out := rd.String("x " + s + " y"); strings.Contains(out, "s3cr3t") || strings.Contains(out, basic) {
			t.Fatalf("%q survived: %q", s, out)
		}
	}
}
