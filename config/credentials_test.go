package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

// credentialMinimal is, for every form, the flow mapping of a minimal
// credential (line 5) that parses.
var credentialMinimal = map[string]string{
	FormStatic:  "{env: TOKEN}",
	FormQuery:   "{env: KEY, query: api_key}",
	FormBasic:   "{basic: {user: {env: U}, password: {env: P}}}",
	FormOAuth2:  `{oauth2: {token_url: "https://login.example.com/token", client_id: airlock, client_secret: {env: CS}}}`,
	FormSession: "{session: {secrets: {password: {env: PW}}, steps: [{name: auth, method: POST, path: /login, json: {password: \"{{secrets.password}}\"}, capture: {token: token}}], header: {name: Authorization, value: \"{{auth.token}}\"}}}",
	FormSigV4:   "{aws_sigv4: {access_key_id: {env: K}, secret_access_key: {env: S}, region: us-east-1, service: dynamodb}}",
}

// credentialKeyValues is a value for every credential key.
var credentialKeyValues = map[string]string{
	"env": "TOKEN2", "file": "/run/secrets/t", "header": "X-Api-Key", "scheme": `""`, "query": "api_key",
	"basic":              "{user: {env: U}, password: {env: P}}",
	"oauth2":             `{token_url: "https://login.example.com/token", client_id: x, client_secret: {env: CS}}`,
	"session":            "{steps: [{name: s, method: GET, path: /}]}",
	"aws_sigv4":          "{access_key_id: {env: K}, secret_access_key: {env: S}, region: us-east-1, service: s3}",
	"client_certificate": "{cert: c.pem, key: k.pem}",
}

func withCredentialKey(form, key, value string) []byte {
	m := credentialMinimal[form]
	if key != "" {
		m = strings.TrimSuffix(m, "}") + ", " + key + ": " + value + "}"
	}
	return configtest.WithCredential("    credential: " + m)
}

// TestCredentialKinds_EveryFormsMinimalCredentialParses, and every form
// the table holds has one here.
func TestCredentialKinds_EveryFormsMinimalCredentialParses(t *testing.T) {
	for _, k := range CredentialKinds() {
		if _, ok := credentialMinimal[k.Name]; !ok {
			t.Errorf("form %s has no minimal credential here", k.Name)
			continue
		}
		cfg, err := Parse(withCredentialKey(k.Name, "", ""))
		if err != nil {
			t.Errorf("form %s: %v", k.Name, err)
			continue
		}
		if got := cfg.Upstreams["api"].Credential.Form(); got != k.Name {
			t.Errorf("form %s read as %s", k.Name, got)
		}
	}
}

// TestCredentialKinds_AKeyTheFormDoesNotReadIsRefusedWithItsLine: for
// every form and every credential key it does not read, the key set is
// refused, at its line, naming the key, the form and the forms that read
// it; client_certificate goes with every form.
func TestCredentialKinds_AKeyTheFormDoesNotReadIsRefusedWithItsLine(t *testing.T) {
	var all []string
	rt := reflect.TypeFor[CredentialConfig]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("yaml"), ",")
		all = append(all, name)
	}
	refused := 0
	for _, k := range CredentialKinds() {
		for _, key := range all {
			value, ok := credentialKeyValues[key]
			if !ok {
				t.Fatalf("no test value for the credential key %s", key)
			}
			if strings.Contains(credentialMinimal[k.Name], key+":") || (k.Name == FormStatic && key == "query") {
				// Already set; a static secret with a query parameter is
				// the query form.
				continue
			}
			_, err := Parse(withCredentialKey(k.Name, key, value))
			if k.Reads(key) {
				if key == "client_certificate" && err != nil {
					t.Errorf("%s with a client certificate: %v", k.Name, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s: %s accepted", k.Name, key)
				continue
			}
			var readers []string
			for _, o := range CredentialKinds() {
				if o.Reads(key) {
					readers = append(readers, o.Name)
				}
			}
			if _, isForm := CredentialKindOf(formOfKey(key)); isForm {
				// Another form's own key names two forms.
				want := "one form per credential"
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s + %s: want %q, got %v", k.Name, key, want, err)
				}
			} else {
				want := fmt.Sprintf("line 5: upstreams.api.credential.%s: the %s form does not read %s; %s reads it", key, k.Name, key, strings.Join(readers, ", "))
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s + %s: want %q, got %v", k.Name, key, want, err)
				}
			}
			refused++
		}
	}
	if refused < 30 {
		t.Errorf("only %d refusals: the table or its keys shrank", refused)
	}
	t.Logf("%d foreign credential keys refused over %d forms", refused, len(CredentialKinds()))
}

// formOfKey is the form a key chooses by itself ("" for a key that only
// completes a form: header, scheme, file).
func formOfKey(key string) string {
	switch key {
	case "env", "file":
		return FormStatic
	case "query":
		return FormQuery
	case "aws_sigv4":
		return FormSigV4
	case "oauth2":
		return FormOAuth2
	}
	if slices.Contains([]string{FormBasic, FormSession}, key) {
		return key
	}
	return ""
}
