package interop

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// registryBasic is a registry account: the password is a canary, the hash
// its bcrypt (cost 4) as htpasswd holds it.
var registryBasic = upstreams.RegistryBasic{User: "airlock-reader", Password: "cnry-6c2e81f0-registry-password",
	Hash: "$2b$04$bt9mk8k9NgNT2cBycKWQBO850xmm04S/eby37B6.Ns2kprjQesY8e"}

// testdataWith is a testdata configuration at baseURL with the credential
// block put in front of "    timeout: 10s".
func testdataWith(t *testing.T, name, baseURL, credential string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	y := strings.ReplaceAll(string(b), "{{BASE_URL}}", baseURL)
	if !strings.Contains(y, "    timeout: 10s\n") {
		t.Fatalf("testdata/%s has no upstream timeout to put the credential before", name)
	}
	return strings.Replace(y, "    timeout: 10s\n", credential+"    timeout: 10s\n", 1)
}

// TestBasic_RegistryBehindHtpasswd: docker-registry 2.8.2 requiring
// htpasswd Basic authentication is read whole with a user and a password
// read from two variables; a wrong password is the API's refusal; the
// password is in no log, result or store.
func TestBasic_RegistryBehindHtpasswd(t *testing.T) {
	reg := upstreams.StartRegistryWithBasic(t, registryBasic)
	cfg := testdataWith(t, "registry.yaml", reg.URL, "    credential:\n      basic: {user: {env: REG_USER}, password: {env: REG_PASSWORD}}\n")
	a := startMCPAirlock(t, cfg, map[string]string{"REG_USER": registryBasic.User, "REG_PASSWORD": registryBasic.Password})
	env, names := a.walk(t, "repositories", "name")
	sort.Strings(names)
	if env["complete"] != true || strings.Join(names, ",") != strings.Join(reg.Pushed, ",") {
		t.Fatalf("complete %v, %d names; the registry holds %d", env["complete"], len(names), len(reg.Pushed))
	}
	a.noneOf(t, registryBasic.Password)

	wrong := startMCPAirlock(t, cfg, map[string]string{"REG_USER": registryBasic.User, "REG_PASSWORD": "cnry-6c2e81f0-not-the-password"})
	if code, _, _ := problemOf(wrong.call(t, "search_all", map[string]any{"resource": "repositories"})); code != string(envelope.ProblemUpstreamAuth) {
		t.Fatalf("a wrong password: %s", code)
	}
	wrong.noneOf(t, registryBasic.Password, "cnry-6c2e81f0-not-the-password")
}

// TestQueryKey_JSONServerBehindAnAPIKey: json-server taking its key in
// ?api_key= (and building its Link headers from the URL that carried it)
// is read whole; the key goes on every request and in no log, result,
// cursor or stored scan; a wrong key is the API's refusal.
func TestQueryKey_JSONServerBehindAnAPIKey(t *testing.T) {
	const key = "cnry-9b41d7e2-json-server-api-key"
	js := upstreams.StartJSONServerWithKey(t, key)
	if link := js.Get(t, "/accounts?_page=1&_limit=100").NextLink(); !strings.Contains(link, "api_key=") {
		t.Fatalf("json-server's next link does not carry the key: %q", link)
	}
	var truth []string
	for _, r := range js.Accounts(t) {
		truth = append(truth, r.ID())
	}
	sort.Strings(truth)
	cfg := testdataWith(t, "json-server.yaml", js.URL, "    credential: {env: JS_KEY, query: api_key}\n")
	a := startMCPAirlock(t, cfg, map[string]string{"JS_KEY": key})
	env, ids := a.walk(t, "accounts", "id")
	sort.Strings(ids)
	if env["complete"] != true || strings.Join(ids, ",") != strings.Join(truth, ",") {
		t.Fatalf("complete %v, %d ids; json-server holds %d", env["complete"], len(ids), len(truth))
	}
	a.noneOf(t, key)

	wrong := startMCPAirlock(t, cfg, map[string]string{"JS_KEY": "cnry-9b41d7e2-a-wrong-key"})
	if code, _, _ := problemOf(wrong.call(t, "search_all", map[string]any{"resource": "accounts"})); code != string(envelope.ProblemUpstreamAuth) {
		t.Fatalf("a wrong key: %s", code)
	}
	wrong.noneOf(t, key, "cnry-9b41d7e2-a-wrong-key")
}
