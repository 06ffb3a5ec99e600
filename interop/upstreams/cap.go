package upstreams

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CAPAccounts is how many accounts StartCAP seeds from its CSV file; the
// hostile ones (CAPHostileNames) come on top, created through the API.
const CAPAccounts = 2500

// CAPDefaultPage is the page the CRM service serves when no $top is given,
// and CAPMaxPage the largest it serves (@cds.query.limit).
const (
	CAPDefaultPage = 100
	CAPMaxPage     = 200
)

// CAPHostileNames are account names a $filter must carry as one literal:
// quotes, an expression injection, parentheses, unicode, a plus, a percent
// sign, and the characters that separate query parameters.
var CAPHostileNames = []string{
	"O'Brien",
	"' or 1 eq 1 or name eq '",
	"Zoë (Ωmega) ) or (true",
	`quote"d`,
	"a+b c",
	"100% sure",
	"semi;colon&amp=x#frag",
}

// CAP is a running SAP CAP service (@sap/cds 10 over @cap-js/sqlite and
// better-sqlite3, in memory) serving an OData V4 CRM at /odata/v4/crm:
// Accounts with an ETag (@odata.etag on the managed modifiedAt), paged by
// the server at CAPMaxPage with relative @odata.nextLink, filtered by
// $filter. /truth serves the same accounts unpaged and read-only, for the
// suite's ground truth. It has no credential (mocked authentication).
type CAP struct {
	URL string
	// dir is the CAP project StartCAP serves.
	dir string
}

// capModel is the CAP project StartCAP serves: the CRM and the unpaged
// truth service.
var capModel = map[string]string{
	"package.json": `{"name": "airlock-crm", "private": true,
  "cds": {"requires": {"db": {"kind": "sqlite", "credentials": {"url": ":memory:"}, "driver": "better-sqlite3"}}}}
`,
	"db/schema.cds": `namespace crm;
using { managed } from '@sap/cds/common';
entity Accounts : managed {
  key ID : Integer;
  name   : String(200);
  status : String(20);
  owner  : String(100);
}
annotate Accounts with { modifiedAt @odata.etag; }
`,
	"srv/crm.cds": `using crm from '../db/schema';
@path: '/odata/v4/crm'
service CrmService {
  @cds.query.limit: {default: ` + strconv.Itoa(CAPDefaultPage) + `, max: ` + strconv.Itoa(CAPMaxPage) + `}
  entity Accounts as projection on crm.Accounts;
}
@path: '/truth'
service TruthService {
  @cds.query.limit: {max: 0}
  @readonly entity Accounts as projection on crm.Accounts;
}
`,
}

// StartCAP writes the CAP project and its seed into the test's temp dir,
// starts cds-serve on a free loopback port, creates the hostile accounts
// and stops the server when the test ends. cds 10 asks for Node 22; on
// Node 20 it runs with CDS_STRICT_NODE_VERSION=false. It skips when node
// or interop/node_modules lacks @sap/cds, @cap-js/sqlite or
// better-sqlite3 (see package doc).
func StartCAP(t testing.TB) *CAP {
	t.Helper()
	Enabled(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	modules := filepath.Join(interopDir(t), "node_modules")
	for _, m := range []string{"@sap/cds/bin/serve.js", "@cap-js/sqlite/package.json", "better-sqlite3/package.json"} {
		if _, err := os.Stat(filepath.Join(modules, m)); err != nil {
			missing(t, "interop/node_modules lacks %s; run `npm ci` in interop/", m)
		}
	}
	started := time.Now()
	dir := t.TempDir()
	for name, src := range capModel {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "db", "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "db", "data", "crm-Accounts.csv"), capSeed(), 0o600); err != nil {
		t.Fatal(err)
	}
	// The project finds @sap/cds (and '@sap/cds/common') through its own
	// node_modules, as a CAP project does.
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	base, _ := startProcess(t, "cds-serve", dir, func(port int) []string {
		return []string{node, filepath.Join(dir, "node_modules", "@sap", "cds", "bin", "serve.js"), "--port", strconv.Itoa(port)}
	}, answersOK("/truth/Accounts?$top=1"), "CDS_STRICT_NODE_VERSION=false", "NODE_ENV=test")
	c := &CAP{URL: base, dir: dir}
	for i, name := range CAPHostileNames {
		owner := any("team-1")
		if i%2 == 1 {
			owner = nil
		}
		if _, b, err := call(t.Context(), http.MethodPost, base+"/odata/v4/crm/Accounts", nil,
			map[string]any{"ID": CAPAccounts + 1 + i, "name": name, "status": "active", "owner": owner}, http.StatusCreated); err != nil {
			t.Fatalf("create the account %q: %v (%s)", name, err, truncate(b, 200))
		}
	}
	if n := len(c.Accounts(t)); n != CAPAccounts+len(CAPHostileNames) {
		t.Fatalf("CAP serves %d accounts, seeded %d", n, CAPAccounts+len(CAPHostileNames))
	}
	t.Logf("SAP CAP (@sap/cds 10): started and seeded %d accounts in %.1fs at %s", CAPAccounts+len(CAPHostileNames), time.Since(started).Seconds(), base)
	return c
}

// capSeed is the CSV CAP loads at start: ids 1..CAPAccounts, about 60%
// active, 25% disabled and 15% archived, a fifth without an owner (an
// empty CSV cell is NULL), one fixed modifiedAt (the ETag) for all.
func capSeed() []byte {
	rng := rand.New(rand.NewPCG(DefaultSeed, 11))
	var b strings.Builder
	b.WriteString("ID;name;status;owner;modifiedAt\n")
	for id := 1; id <= CAPAccounts; id++ {
		status := "active"
		switch r := rng.IntN(100); {
		case r >= 85:
			status = "archived"
		case r >= 60:
			status = "disabled"
		}
		owner := fmt.Sprintf("team-%d", rng.IntN(4))
		if rng.IntN(5) == 0 {
			owner = ""
		}
		fmt.Fprintf(&b, "%d;account %04d;%s;%s;2026-01-01T00:00:00.000Z\n", id, id, status, owner)
	}
	return []byte(b.String())
}

// Accounts is every account CAP holds, read from the unpaged truth
// service in one GET: ID as "id" (a string), the rest as served.
func (c *CAP) Accounts(t testing.TB) []Record {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodGet, c.URL+"/truth/Accounts", nil, nil, http.StatusOK)
	if err != nil {
		t.Fatalf("read CAP's accounts: %v", err)
	}
	var page struct {
		Value    []Record `json:"value"`
		NextLink string   `json:"@odata.nextLink"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatalf("decode CAP's accounts: %v", err)
	}
	if page.NextLink != "" {
		t.Fatal("the truth service paged its answer")
	}
	for _, r := range page.Value {
		r["id"] = strconv.FormatFloat(r["ID"].(float64), 'f', -1, 64)
	}
	return page.Value
}

// OpenAPI is the CRM service's OpenAPI document as CAP's own compiler
// (@cap-js/openapi) writes it from the model, its server the running
// service: the document a CAP user hands airlock init. It skips when
// interop/node_modules lacks @cap-js/openapi.
func (c *CAP) OpenAPI(t testing.TB) []byte {
	t.Helper()
	if _, err := os.Stat(filepath.Join(c.dir, "node_modules", "@cap-js", "openapi", "package.json")); err != nil {
		missing(t, "interop/node_modules lacks @cap-js/openapi; run `npm ci` in interop/")
	}
	servers, _ := json.Marshal([]map[string]string{{"url": c.URL + "/odata/v4/crm"}})
	script := `const cds = require('@sap/cds'), openapi = require('@cap-js/openapi');
cds.load('srv').then(csn => process.stdout.write(JSON.stringify(openapi.compile(csn,
  {service: 'CrmService', 'openapi:url': '/odata/v4/crm', 'openapi:servers': process.argv[1]}))))
  .catch(e => { console.error(e); process.exit(1) })`
	cmd := exec.CommandContext(t.Context(), "node", "-e", script, string(servers))
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "CDS_STRICT_NODE_VERSION=false")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("compile the CRM service to OpenAPI: %v", err)
	}
	return out
}

// Get sends GET pathAndQuery (already encoded) to CAP.
func (c *CAP) Get(t testing.TB, pathAndQuery string) Response {
	t.Helper()
	return get(t, c.URL+pathAndQuery, nil)
}

// Patch changes an account as another writer would, whatever its ETag
// (CAP answers a PATCH without If-Match 428: If-Match: * matches any).
func (c *CAP) Patch(t testing.TB, id string, fields map[string]any) {
	t.Helper()
	if _, b, err := call(t.Context(), http.MethodPatch, c.URL+"/odata/v4/crm/Accounts("+id+")", http.Header{"If-Match": {"*"}}, fields, http.StatusOK); err != nil {
		t.Fatalf("patch account %s: %v (%s)", id, err, truncate(b, 200))
	}
}
