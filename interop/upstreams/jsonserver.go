package upstreams

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// JSONServerAccounts is how many accounts StartJSONServer seeds: a whole
// number of 100-item pages, so that the last page is full.
const JSONServerAccounts = 2000

// JSONServer is a running json-server 0.17.4 serving /accounts from a
// db.json in the test's temp dir. It pages with _page and _limit (a Link
// header and X-Total-Count), filters by exact match (a repeated parameter
// means any of), and takes PATCH and DELETE by id. It has no credential.
type JSONServer struct {
	URL    string
	DBPath string
	// key is the API key every request needs in ?api_key= ("" for none).
	key string
}

// StartJSONServer writes the seeded db.json, starts json-server on a free
// loopback port and stops it when the test ends. It skips when
// interop/node_modules lacks json-server (see package doc).
func StartJSONServer(t testing.TB) *JSONServer { return startJSONServer(t, "") }

// StartJSONServerWithKey is StartJSONServer behind an API key: a
// middleware answers 401 to a request whose ?api_key= is not key, and
// takes the parameter out of the query json-server filters by (it stays
// in the URL json-server builds its Link headers from, as APIs that take a
// key in the query do).
func StartJSONServerWithKey(t testing.TB, key string) *JSONServer { return startJSONServer(t, key) }

func startJSONServer(t testing.TB, key string) *JSONServer {
	t.Helper()
	Enabled(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	bin := filepath.Join(interopDir(t), "node_modules", "json-server", "lib", "cli", "bin.js")
	if _, err := os.Stat(bin); err != nil {
		missing(t, "interop/node_modules/json-server is missing; run `npm ci` in interop/")
	}
	started := time.Now()
	dir := t.TempDir()
	db := filepath.Join(dir, "db.json")
	b, err := json.Marshal(map[string]any{"accounts": seedAccounts(JSONServerAccounts)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatalf("write db.json: %v", err)
	}
	args := []string{"--quiet"}
	ready := "/accounts?_limit=1"
	if key != "" {
		mw := filepath.Join(dir, "api-key.cjs")
		src := fmt.Sprintf(`module.exports = (req, res, next) => {
  if (req.query.api_key !== %q) { res.status(401).jsonp({ error: 'a valid api_key is required' }); return; }
  delete req.query.api_key;
  next();
};
`, key)
		if err := os.WriteFile(mw, []byte(src), 0o600); err != nil {
			t.Fatalf("write the api key middleware: %v", err)
		}
		args = append(args, "--middlewares", mw)
		ready += "&api_key=" + url.QueryEscape(key)
	}
	base, _ := startProcess(t, "json-server", dir, func(port int) []string {
		// The source first: --middlewares takes every word after it.
		return append([]string{node, bin, db, "--host", "127.0.0.1", "--port", strconv.Itoa(port)}, args...)
	}, answersOK(ready))
	s := &JSONServer{URL: base, DBPath: db, key: key}
	if n := len(s.Accounts(t)); n != JSONServerAccounts {
		t.Fatalf("json-server serves %d accounts, seeded %d", n, JSONServerAccounts)
	}
	t.Logf("json-server 0.17.4: started and seeded %d accounts in %.1fs at %s", JSONServerAccounts, time.Since(started).Seconds(), base)
	return s
}

// Accounts is every account json-server holds, read in one unpaged GET.
func (s *JSONServer) Accounts(t testing.TB) []Record {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodGet, s.withKey(s.URL+"/accounts"), nil, nil, http.StatusOK)
	if err != nil {
		t.Fatalf("read json-server's accounts: %v", err)
	}
	var recs []Record
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatalf("decode json-server's accounts: %v", err)
	}
	return recs
}

// Get sends GET pathAndQuery to json-server.
func (s *JSONServer) Get(t testing.TB, pathAndQuery string) Response {
	t.Helper()
	return get(t, s.withKey(s.URL+pathAndQuery), nil)
}

// withKey adds the API key to a URL, when the server needs one.
func (s *JSONServer) withKey(u string) string {
	if s.key == "" {
		return u
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "api_key=" + url.QueryEscape(s.key)
}

// Account statuses and teams, as seeded.
var (
	Statuses = []string{"active", "disabled", "archived"}
	Teams    = []string{"team-payments", "team-search", "team-infra", "team-growth", "team-data", "team-mobile"}
)

// seedAccounts builds n accounts from a fixed seed. About 60% are active,
// 25% disabled, 15% archived. The owner is a person for most, and for the
// rest null, missing, or "" (so that each of those three differs from the
// others under an exact-match filter).
func seedAccounts(n int) []map[string]any {
	rng := rand.New(rand.NewPCG(20261202, 1))
	first := []string{"ada", "bea", "cyd", "dov", "eli", "fay", "gus", "hal", "ines", "jon", "kai", "lia"}
	tagSet := []string{"prod", "pci", "legacy", "batch", "eu"}
	epoch := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	out := make([]map[string]any, 0, n)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("acc-%05d", i)
		status := "active"
		switch x := rng.IntN(100); {
		case x >= 85:
			status = "archived"
		case x >= 60:
			status = "disabled"
		}
		var tags []string
		for _, tag := range tagSet {
			if rng.IntN(4) == 0 {
				tags = append(tags, tag)
			}
		}
		if tags == nil {
			tags = []string{}
		}
		a := map[string]any{
			"id":         id,
			"name":       fmt.Sprintf("%s-%s-%d", first[rng.IntN(len(first))], first[rng.IntN(len(first))], i),
			"status":     status,
			"team":       Teams[rng.IntN(len(Teams))],
			"tags":       tags,
			"email":      fmt.Sprintf("svc-%05d@accounts.example.com", i),
			"version":    1 + rng.IntN(9),
			"updated_at": epoch.Add(time.Duration(i) * 37 * time.Minute).Format(time.RFC3339),
		}
		switch x := rng.IntN(100); {
		case x < 8:
			a["owner"] = nil
		case x < 14:
			// owner missing altogether
		case x < 20:
			a["owner"] = ""
		default:
			a["owner"] = fmt.Sprintf("%s@example.com", first[rng.IntN(len(first))])
		}
		out = append(out, a)
	}
	return out
}
