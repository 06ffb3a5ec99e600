package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/internal/oauthtest"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestProbe_ChecksTheTokenItsScopesAndThatTheAPIAcceptsIt: probe obtains a
// token, names the scopes it got and those it did not, says whether the
// API accepted it, and says what it cannot check.
func TestProbe_ChecksTheTokenItsScopesAndThatTheAPIAcceptsIt(t *testing.T) {
	checks := func(rep *Report) map[string]Check {
		out := map[string]Check{}
		for _, c := range rep.Checks {
			if strings.HasPrefix(c.Check, "credential.") {
				out[c.Check] = c
			}
		}
		return out
	}
	probe := func(t *testing.T, te *oauthtest.TokenEndpoint, api http.Handler, secret string) map[string]Check {
		tsrv := httptest.NewServer(te)
		t.Cleanup(tsrv.Close)
		asrv := httptest.NewServer(api)
		t.Cleanup(asrv.Close)
		cfg, err := config.Parse(configtest.OneUpstream(asrv.URL, oauthtest.Credential(tsrv.URL+"/token", "    scopes: [items.read, items.write]\n")))
		if err != nil {
			t.Fatal(err)
		}
		rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: func(string) string { return secret }})
		if err != nil {
			t.Fatal(err)
		}
		return checks(CheckAssumptions(context.Background(), rt.Resources["items"], Options{MaxRequests: 5}))
	}
	list := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") == "" {
			w.WriteHeader(401)
			return
		}
		fmt.Fprint(w, `[{"id":"a"}]`)
	})
	t.Run("a token with fewer scopes than asked", func(t *testing.T) {
		te := &oauthtest.TokenEndpoint{Answer: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"tok-scoped-1","token_type":"Bearer","expires_in":3600,"scope":"items.read"}`)
		}}
		got := probe(t, te, list, oauthtest.ClientSecret)
		if got["credential.token"].Status != OK || !strings.Contains(got["credential.token"].Evidence, "valid 3600s") {
			t.Fatalf("token: %+v", got["credential.token"])
		}
		if c := got["credential.scopes"]; c.Status != Wrong || !strings.Contains(c.Evidence, "not granted: items.write") {
			t.Fatalf("scopes: %+v", c)
		}
		if got["credential.accepted"].Status != OK || got["credential.writes"].Status != Unverifiable || got["credential.renewal"].Status != Unverifiable {
			t.Fatalf("accepted, writes, renewal: %+v", got)
		}
	})
	t.Run("a wrong secret", func(t *testing.T) {
		got := probe(t, &oauthtest.TokenEndpoint{}, list, "not-the-secret-value")
		if c := got["credential.token"]; c.Status != Wrong || !strings.Contains(c.Evidence, "TOKEN_CLIENT_REJECTED") || !strings.Contains(c.Hint, "client_id") {
			t.Fatalf("token: %+v", c)
		}
	})
	t.Run("a token the API refuses", func(t *testing.T) {
		api := &oauthtest.API{Accept: func(string) bool { return false }}
		got := probe(t, &oauthtest.TokenEndpoint{}, api, oauthtest.ClientSecret)
		if c := got["credential.accepted"]; c.Status != Wrong || !strings.Contains(c.Evidence, "401") {
			t.Fatalf("accepted: %+v", c)
		}
	})
}

// TestProbe_ADeclaredRefusalIsARefusedCredential: an upstream whose
// refusal of a credential is a declared 400 (DynamoDB's
// InvalidSignatureException for a wrong SigV4 secret) has the probe say
// the credential was refused, as for a 401, and quote no part of what it
// sent.
func TestProbe_ADeclaredRefusalIsARefusedCredential(t *testing.T) {
	var sent string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"com.amazon.coral.service#InvalidSignatureException","message":"The request signature we calculated does not match the signature you provided. %s"}`, sent)
	}))
	t.Cleanup(srv.Close)
	cfg, err := config.Parse(configtest.OneUpstream(srv.URL, `unauthorized: [{status: 400, member: __type, match: InvalidSignatureException}]
credential: {aws_sigv4: {access_key_id: {env: K}, secret_access_key: {env: S}, region: us-east-1, service: dynamodb}}`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"K": "AKIDEXAMPLE", "S": "a-wrong-secret-access-key"}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	rep := CheckAssumptions(context.Background(), rt.Resources["items"], Options{MaxRequests: 5})
	var got *Check
	for i, c := range rep.Checks {
		if c.Check == "credential.accepted" {
			got = &rep.Checks[i]
		}
	}
	if got == nil || got.Status != Wrong || !strings.Contains(got.Evidence, "400, declared under unauthorized") {
		t.Fatalf("credential.accepted: %+v; want Wrong, the declared 400 named", got)
	}
	_, sig, _ := strings.Cut(sent, "Signature=")
	if b := fmt.Sprintf("%+v", rep); sig == "" || strings.Contains(b, sig) {
		t.Fatalf("the report holds the sent signature %q (or none was sent): %s", sig, b)
	}
}
