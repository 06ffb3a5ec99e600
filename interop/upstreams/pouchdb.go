package upstreams

import (
	"encoding/json"
	"errors"
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

// PouchDBAccounts is how many documents StartPouchDB seeds into
// PouchDBDatabase, as acct-00001 to acct-01500.
const PouchDBAccounts = 1500

// PouchDBDatabase is the database StartPouchDB creates and seeds.
const PouchDBDatabase = "accounts"

// PouchDBStatusIndex is the Mango index on status StartPouchDB creates:
// its design document is _design/by-status, which _all_docs lists among
// the documents (before them: "_" sorts before "a").
const PouchDBStatusIndex = "by-status"

// PouchDBStatuses are the seeded statuses: about 55% active, 20% disabled,
// 15% archived and 10% past_due.
var PouchDBStatuses = []string{"active", "disabled", "archived", "past_due"}

// PouchDBBigNumber is the balance seeded, as this JSON literal, into every
// 250th document (acct-00250, acct-00500, ...): 2^53+1, which PouchDB, a
// JavaScript database, keeps as the nearest double, 2^53.
const PouchDBBigNumber = "9007199254740993"

// PouchDB is a running PouchDB Server HTTP API (interop/pouchdb/server.mjs:
// express-pouchdb 4.2.0 over pouchdb 7.3.1, every database in memory)
// serving CouchDB's API at URL, with PouchDBDatabase seeded. It has no
// credential (no admins: every request is allowed).
type PouchDB struct {
	// URL is the server's root; DBURL is the database's (URL + "/accounts").
	URL, DBURL string
}

// StartPouchDB starts PouchDB Server on a free loopback port, creates
// PouchDBDatabase, seeds it through _bulk_docs, creates the status index,
// and stops the server when the test ends. It skips when node or
// interop/node_modules lacks express-pouchdb, pouchdb or
// pouchdb-adapter-memory (see package doc).
func StartPouchDB(t testing.TB) *PouchDB {
	t.Helper()
	Enabled(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	dir := interopDir(t)
	for _, pkg := range []string{"express-pouchdb", "pouchdb", "pouchdb-adapter-memory"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing(t, "interop/node_modules/%s is missing; run `npm ci` in interop/", pkg)
		}
	}
	started := time.Now()
	logDir := t.TempDir()
	base, _ := startProcess(t, "pouchdb-server", dir, func(port int) []string {
		return []string{node, filepath.Join("pouchdb", "server.mjs"), strconv.Itoa(port), logDir}
	}, answersOK("/"))
	p := &PouchDB{URL: base, DBURL: base + "/" + PouchDBDatabase}
	if _, _, err := call(t.Context(), http.MethodPut, p.DBURL, nil, nil, http.StatusCreated); err != nil {
		t.Fatalf("pouchdb: create the database: %v", err)
	}
	docs := seedPouchDocs(PouchDBAccounts)
	for start := 0; start < len(docs); start += 500 {
		for _, r := range p.BulkDocs(t, docs[start:min(start+500, len(docs))]) {
			if r.Error != "" {
				t.Fatalf("pouchdb: seed %s: %s: %s", r.ID, r.Error, r.Reason)
			}
		}
	}
	index := map[string]any{"index": map[string]any{"fields": []string{"status"}}, "ddoc": PouchDBStatusIndex, "name": PouchDBStatusIndex, "type": "json"}
	if _, _, err := call(t.Context(), http.MethodPost, p.DBURL+"/_index", nil, index, http.StatusOK); err != nil {
		t.Fatalf("pouchdb: create the status index: %v", err)
	}
	if n := len(p.Docs(t)); n != PouchDBAccounts {
		t.Fatalf("pouchdb holds %d documents, seeded %d", n, PouchDBAccounts)
	}
	t.Logf("PouchDB Server (express-pouchdb 4.2.0, pouchdb 7.3.1 in memory): started and seeded %d documents in %.1fs at %s",
		PouchDBAccounts, time.Since(started).Seconds(), base)
	return p
}

// Docs is every document of the database but design documents, with _id
// and _rev, in _id order: one _all_docs?include_docs=true request without
// a limit.
func (p *PouchDB) Docs(t testing.TB) []Record {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodGet, p.DBURL+"/_all_docs?include_docs=true", nil, nil, http.StatusOK)
	if err != nil {
		t.Fatalf("pouchdb: read every document: %v", err)
	}
	var all struct {
		TotalRows *int `json:"total_rows"`
		Rows      []struct {
			ID  string `json:"id"`
			Doc Record `json:"doc"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatalf("pouchdb: decode _all_docs %q: %v", truncate(b, 200), err)
	}
	if all.TotalRows == nil || *all.TotalRows != len(all.Rows) {
		t.Fatalf("pouchdb: an unlimited _all_docs answered %d rows of total_rows %v", len(all.Rows), all.TotalRows)
	}
	out := make([]Record, 0, len(all.Rows))
	for _, r := range all.Rows {
		if strings.HasPrefix(r.ID, "_design/") {
			continue
		}
		if r.Doc == nil || r.Doc["_id"] != r.ID || r.Doc["_rev"] == nil {
			t.Fatalf("pouchdb: row %q came without its document, _id or _rev", r.ID)
		}
		out = append(out, r.Doc)
	}
	return out
}

// Doc is one document with its _id and _rev, or nil when the database
// answers 404 (never written, or deleted).
func (p *PouchDB) Doc(t testing.TB, id string) Record {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodGet, p.docURL(id), nil, nil, http.StatusOK)
	if isHTTPStatus(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("pouchdb: read %q: %v", id, err)
	}
	var doc Record
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("pouchdb: decode %q: %v", id, err)
	}
	return doc
}

// Put writes doc (which names its _id, and its current _rev unless it is
// new) as another writer would, replacing the whole document, and returns
// the new _rev. Any answer but 201 fails the test.
func (p *PouchDB) Put(t testing.TB, doc Record) string {
	t.Helper()
	id, _ := doc["_id"].(string)
	if id == "" {
		t.Fatal("pouchdb: Put needs a document with an _id")
	}
	_, b, err := call(t.Context(), http.MethodPut, p.docURL(id), nil, doc, http.StatusCreated)
	if err != nil {
		t.Fatalf("pouchdb: put %q: %v", id, err)
	}
	var ok struct {
		OK  bool   `json:"ok"`
		Rev string `json:"rev"`
	}
	if err := json.Unmarshal(b, &ok); err != nil || !ok.OK || ok.Rev == "" {
		t.Fatalf("pouchdb: put %q answered %q", id, truncate(b, 200))
	}
	return ok.Rev
}

// Update reads the document, sets fields on it (a nil value sets JSON
// null; use Put to remove a field) and writes it back at the revision it
// read, as another writer would; it returns the new _rev.
func (p *PouchDB) Update(t testing.TB, id string, fields map[string]any) string {
	t.Helper()
	doc := p.Doc(t, id)
	if doc == nil {
		t.Fatalf("pouchdb: update %q: no such document", id)
	}
	for k, v := range fields {
		doc[k] = v
	}
	return p.Put(t, doc)
}

// Delete deletes the document at its current revision, as another writer
// would; it returns the deletion's _rev. Reading it afterwards answers
// 404 with reason "missing", as for a document never written.
func (p *PouchDB) Delete(t testing.TB, id string) string {
	t.Helper()
	doc := p.Doc(t, id)
	if doc == nil {
		t.Fatalf("pouchdb: delete %q: no such document", id)
	}
	rev, _ := doc["_rev"].(string)
	_, b, err := call(t.Context(), http.MethodDelete, p.docURL(id)+"?rev="+url.QueryEscape(rev), nil, nil, http.StatusOK)
	if err != nil {
		t.Fatalf("pouchdb: delete %q: %v", id, err)
	}
	var ok struct {
		OK  bool   `json:"ok"`
		Rev string `json:"rev"`
	}
	if err := json.Unmarshal(b, &ok); err != nil || !ok.OK || ok.Rev == "" {
		t.Fatalf("pouchdb: delete %q answered %q", id, truncate(b, 200))
	}
	return ok.Rev
}

// PouchBulkResult is one element of _bulk_docs' answer: ok, id and rev
// for a written document, id, error and reason for a refused one.
type PouchBulkResult struct {
	OK     bool   `json:"ok"`
	ID     string `json:"id"`
	Rev    string `json:"rev"`
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

// BulkDocs posts docs to _bulk_docs and returns the answer per document,
// in order. Anything but 201 with one result per document fails the test;
// a refused document does not.
func (p *PouchDB) BulkDocs(t testing.TB, docs []Record) []PouchBulkResult {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodPost, p.DBURL+"/_bulk_docs", nil, map[string]any{"docs": docs}, http.StatusCreated)
	if err != nil {
		t.Fatalf("pouchdb: _bulk_docs: %v", err)
	}
	var out []PouchBulkResult
	if err := json.Unmarshal(b, &out); err != nil || len(out) != len(docs) {
		t.Fatalf("pouchdb: _bulk_docs of %d documents answered %q (%v)", len(docs), truncate(b, 300), err)
	}
	return out
}

// Send sends one request to pathAndQuery under the server's root (a JSON
// body when body is not nil, and header's fields) and returns whatever the
// server answers, for the facts the configuration rests on.
func (p *PouchDB) Send(t testing.TB, method, pathAndQuery string, header http.Header, body any) Response {
	t.Helper()
	hdr, b, err := call(t.Context(), method, p.URL+pathAndQuery, header, body, http.StatusOK)
	var he *httpError
	if errors.As(err, &he) {
		return Response{Status: he.status, Header: hdr, Body: b}
	}
	if err != nil {
		t.Fatalf("pouchdb: %s %s: %v", method, pathAndQuery, err)
	}
	return Response{Status: http.StatusOK, Header: hdr, Body: b}
}

func (p *PouchDB) docURL(id string) string { return p.DBURL + "/" + url.PathEscape(id) }

// pouchNames are seeded names' first parts: quotes, unicode, a backslash,
// an emoji, Mango's own operator syntax.
var pouchNames = []string{"ada", "O'Brien", `"Quoted" Ltd`, "Zoë Ωmega", "李小龍", `back\slash`, "rocket 🚀", "$eq null", "bea", "cyd", "dov", "eli"}

// seedPouchDocs builds n documents from a fixed seed. The owner is a
// person for most, and for the rest null, missing, or "" (so that each of
// those three differs from the others under a Mango selector). Balances
// are cents, whole numbers up to 10^15, negatives and zero, and every
// 250th is PouchDBBigNumber.
func seedPouchDocs(n int) []Record {
	rng := rand.New(rand.NewPCG(DefaultSeed, 13))
	teams := []string{"payments", "platform", "team-infra", "support", "R&D, Labs"}
	tagSet := []string{"prod", "pci", "legacy", "batch", "eu"}
	out := make([]Record, 0, n)
	for i := 1; i <= n; i++ {
		status := PouchDBStatuses[0]
		switch x := rng.IntN(100); {
		case x >= 90:
			status = PouchDBStatuses[3]
		case x >= 75:
			status = PouchDBStatuses[2]
		case x >= 55:
			status = PouchDBStatuses[1]
		}
		tags := []string{}
		for _, tag := range tagSet {
			if rng.IntN(4) == 0 {
				tags = append(tags, tag)
			}
		}
		var balance any
		switch x := rng.IntN(10); {
		case i%250 == 0:
			balance = json.Number(PouchDBBigNumber)
		case x == 0:
			balance = 0
		case x == 1:
			balance = -rng.IntN(100000)
		case x == 2:
			balance = rng.Int64N(1_000_000_000_000_000)
		default:
			balance = float64(rng.IntN(10_000_000)) / 100
		}
		d := Record{
			"_id":     fmt.Sprintf("acct-%05d", i),
			"name":    fmt.Sprintf("%s %d", pouchNames[rng.IntN(len(pouchNames))], i),
			"status":  status,
			"team":    teams[rng.IntN(len(teams))],
			"tags":    tags,
			"balance": balance,
			"version": 1 + rng.IntN(9),
		}
		switch x := rng.IntN(100); {
		case x < 9:
			d["owner"] = nil
		case x < 17:
			// owner missing altogether
		case x < 22:
			d["owner"] = ""
		default:
			d["owner"] = fmt.Sprintf("%s@example.com", pouchNames[8+rng.IntN(4)])
		}
		out = append(out, d)
	}
	return out
}
