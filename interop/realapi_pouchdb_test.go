package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// The facts of PouchDB Server's CouchDB API (express-pouchdb 4.2.0 over
// pouchdb 7.3.1, interop/pouchdb/server.mjs) that a configuration for
// CouchDB's API will rely on, pinned by calling the server directly, so
// that a change of PouchDB fails here first. Where PouchDB differs from
// CouchDB (no Mango bookmarks, no default _find limit, $ne null refused,
// a deleted document read as missing),
// the test says so. Every JSON body ends in a newline, as CouchDB's do.

// The seeded counts, measured once and pinned: a change of the seed or of
// PouchDB's matching shows here.
const (
	pouchNullOwners    = 148
	pouchMissingOwners = 118
	pouchEmptyOwners   = 88
	pouchPastDue       = 130
)

// TestPouchDBFacts_PagesMangoConflictsAndWholeDocumentWrites starts its own
// server: its later subtests write documents.
func TestPouchDBFacts_PagesMangoConflictsAndWholeDocumentWrites(t *testing.T) {
	p := upstreams.StartPouchDB(t)
	truth := p.Docs(t)
	t.Run("seeded_truth", func(t *testing.T) { checkPouchSeed(t, p, truth) })
	t.Run("all_docs_pages_by_limit_and_skip", func(t *testing.T) { checkPouchAllDocs(t, p, truth) })
	t.Run("find_has_no_bookmark_and_pages_by_skip", func(t *testing.T) { checkPouchFindPaging(t, p, truth) })
	t.Run("mango_null_is_not_missing", func(t *testing.T) { checkPouchMangoNull(t, p, truth) })
	t.Run("stale_rev_put_is_a_conflict_and_deleted_reads_as_missing", func(t *testing.T) { checkPouchConflict(t, p) })
	t.Run("put_replaces_the_whole_document", func(t *testing.T) { checkPouchPutReplaces(t, p) })
	t.Run("bulk_docs_answers_a_bare_array_per_document", func(t *testing.T) { checkPouchBulkDocs(t, p) })
}

// pouchJSON decodes a response body into a generic value, failing the
// test when it is not JSON.
func pouchJSON(t *testing.T, what string, r upstreams.Response) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("%s: status %d, body %q is not a JSON object: %v", what, r.Status, r.Body, err)
	}
	return m
}

func pouchFind(t *testing.T, p *upstreams.PouchDB, body map[string]any) (upstreams.Response, []string) {
	t.Helper()
	r := p.Send(t, http.MethodPost, "/"+upstreams.PouchDBDatabase+"/_find", nil, body)
	if r.Status != http.StatusOK {
		return r, nil
	}
	var a struct {
		Docs []struct {
			ID string `json:"_id"`
		} `json:"docs"`
	}
	r.JSON(t, &a)
	ids := []string{}
	for _, d := range a.Docs {
		ids = append(ids, d.ID)
	}
	return r, ids
}

func checkPouchSeed(t *testing.T, p *upstreams.PouchDB, truth []upstreams.Record) {
	owners := map[string]int{}
	statuses := map[string]int{}
	for _, d := range truth {
		switch v, ok := d["owner"]; {
		case !ok:
			owners["missing"]++
		case v == nil:
			owners["null"]++
		case v == "":
			owners["empty"]++
		}
		statuses[fmt.Sprint(d["status"])]++
	}
	t.Logf("seeded: %d documents, owners %v, statuses %v", len(truth), owners, statuses)
	if len(truth) != upstreams.PouchDBAccounts || owners["null"] != pouchNullOwners || owners["missing"] != pouchMissingOwners ||
		owners["empty"] != pouchEmptyOwners || statuses["past_due"] != pouchPastDue {
		t.Errorf("seeded %d documents, owners %v, past_due %d; want %d, null %d, missing %d, empty %d, past_due %d",
			len(truth), owners, statuses["past_due"], upstreams.PouchDBAccounts, pouchNullOwners, pouchMissingOwners, pouchEmptyOwners, pouchPastDue)
	}
	// PouchDB keeps numbers as doubles: 2^53+1 comes back as 2^53.
	r := p.Send(t, http.MethodGet, "/"+upstreams.PouchDBDatabase+"/acct-00250", nil, nil)
	if !strings.Contains(string(r.Body), `"balance":9007199254740992,`) {
		t.Errorf("acct-00250, seeded with balance %s: %s; want 9007199254740992, the nearest double", upstreams.PouchDBBigNumber, r.Body)
	}
}

func checkPouchAllDocs(t *testing.T, p *upstreams.PouchDB, truth []upstreams.Record) {
	type page struct {
		TotalRows *int `json:"total_rows"`
		Offset    *int `json:"offset"`
		Rows      []struct {
			ID  string `json:"id"`
			Key string `json:"key"`
		} `json:"rows"`
	}
	path := "/" + upstreams.PouchDBDatabase + "/_all_docs"
	total := upstreams.PouchDBAccounts + 1 // and the index's design document

	// CouchDB's way: JSON as text/plain unless the client accepts JSON.
	r := p.Send(t, http.MethodGet, path+"?limit=1", nil, nil)
	rj := p.Send(t, http.MethodGet, path+"?limit=1", http.Header{"Accept": {"application/json"}}, nil)
	if ct := r.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("_all_docs without Accept: Content-Type %q; want text/plain; charset=utf-8", ct)
	}
	if ct := rj.Header.Get("Content-Type"); ct != "application/json" || string(rj.Body) != string(r.Body) {
		t.Errorf("_all_docs with Accept: application/json: Content-Type %q, body %s; want application/json and the same body %s", ct, rj.Body, r.Body)
	}

	seen := map[string]int{}
	pages := 0
	for skip := 0; ; skip += 100 {
		r := p.Send(t, http.MethodGet, fmt.Sprintf("%s?limit=100&skip=%d", path, skip), nil, nil)
		var pg page
		r.JSON(t, &pg)
		if r.Status != http.StatusOK || pg.TotalRows == nil || *pg.TotalRows != total || pg.Offset == nil || *pg.Offset != skip {
			t.Fatalf("_all_docs skip %d: status %d, total_rows %v, offset %v; want 200, total_rows %d (the design document counts), offset %d",
				skip, r.Status, pg.TotalRows, pg.Offset, total, skip)
		}
		if skip == 0 && (len(pg.Rows) == 0 || pg.Rows[0].ID != "_design/"+upstreams.PouchDBStatusIndex) {
			t.Errorf("the first row: %v; want _design/%s (raw collation: _ before a)", pg.Rows[:min(1, len(pg.Rows))], upstreams.PouchDBStatusIndex)
		}
		pages++
		for _, row := range pg.Rows {
			seen[row.ID]++
		}
		if len(pg.Rows) < 100 {
			if len(pg.Rows) != total%100 || pg.Rows[len(pg.Rows)-1].ID != "acct-01500" {
				t.Errorf("the last page (skip %d): %d rows; want %d ending with acct-01500", skip, len(pg.Rows), total%100)
			}
			break
		}
	}
	want := append(upstreams.IDs(truth, nil), "_design/"+upstreams.PouchDBStatusIndex)
	var got []string
	for id, n := range seen {
		if n != 1 {
			t.Errorf("_all_docs served %q %d times", id, n)
		}
		got = append(got, id)
	}
	slices.Sort(got)
	slices.Sort(want)
	if pages != 16 || !slices.Equal(got, want) {
		t.Errorf("walking _all_docs by 100: %d pages, %d ids; want 16 pages holding every document and the design document once (%d)", pages, len(got), len(want))
	}

	// Past the end: no rows, total_rows and offset still there.
	r = p.Send(t, http.MethodGet, fmt.Sprintf("%s?limit=100&skip=%d", path, total), nil, nil)
	if string(r.Body) != fmt.Sprintf(`{"total_rows":%d,"offset":%d,"rows":[]}`, total, total)+"\n" {
		t.Errorf("_all_docs past the end: %s", r.Body)
	}
}

func checkPouchFindPaging(t *testing.T, p *upstreams.PouchDB, truth []upstreams.Record) {
	sel := map[string]any{"status": "past_due"}
	want := upstreams.IDs(truth, func(r upstreams.Record) bool { return r["status"] == "past_due" })

	// The first page: docs only. No bookmark (PouchDB implements none), no
	// warning (the status index serves it).
	r, first := pouchFind(t, p, map[string]any{"selector": sel, "fields": []string{"_id"}, "limit": 25})
	if m := pouchJSON(t, "_find limit 25", r); len(first) != 25 || !slices.Equal(slices.Sorted(maps.Keys(m)), []string{"docs"}) {
		t.Errorf("_find limit 25: status %d, %d docs, members %v; want 25 docs and no other member (no bookmark)", r.Status, len(first), slices.Sorted(maps.Keys(m)))
	}
	// A bookmark sent back is ignored: the same first page again.
	r, again := pouchFind(t, p, map[string]any{"selector": sel, "fields": []string{"_id"}, "limit": 25, "bookmark": "g1AAAABweJzLYWBgYMpgSmHgKy5JLCrJTq2MT8lPzkzJBYqzGRgYGhiZmIBkOGAyeCQBAJ6LDrs"})
	if r.Status != http.StatusOK || !slices.Equal(again, first) {
		t.Errorf("_find with a bookmark: status %d, %v; want the first page again %v (the bookmark ignored)", r.Status, again, first)
	}

	// skip pages it: every match once, the last page short.
	var ids []string
	pages := 0
	for skip := 0; ; skip += 25 {
		r, page := pouchFind(t, p, map[string]any{"selector": sel, "fields": []string{"_id"}, "limit": 25, "skip": skip})
		if r.Status != http.StatusOK {
			t.Fatalf("_find skip %d: status %d %s", skip, r.Status, r.Body)
		}
		pages++
		ids = append(ids, page...)
		if len(page) < 25 {
			if len(page) != pouchPastDue%25 {
				t.Errorf("the last _find page: %d docs; want %d", len(page), pouchPastDue%25)
			}
			break
		}
	}
	slices.Sort(ids)
	if pages != pouchPastDue/25+1 || !slices.Equal(ids, want) || len(want) != pouchPastDue {
		t.Errorf("_find by skip: %d pages, %d ids; want %d pages and each of the %d past_due documents once", pages, len(ids), pouchPastDue/25+1, pouchPastDue)
	}
	// Past the end: exactly {"docs":[]}.
	if r, _ := pouchFind(t, p, map[string]any{"selector": sel, "fields": []string{"_id"}, "limit": 25, "skip": 1000}); string(r.Body) != `{"docs":[]}`+"\n" {
		t.Errorf("_find past the end: %s; want {\"docs\":[]}", r.Body)
	}
	// No default limit (CouchDB's is 25): every match in one answer.
	if _, all := pouchFind(t, p, map[string]any{"selector": sel, "fields": []string{"_id"}}); len(all) != pouchPastDue {
		t.Errorf("_find without a limit: %d docs; want all %d", len(all), pouchPastDue)
	}
	// A selector no index serves answers a warning beside the docs.
	r, _ = pouchFind(t, p, map[string]any{"selector": map[string]any{"team": "support"}, "fields": []string{"_id"}, "limit": 1})
	if m := pouchJSON(t, "_find by team", r); m["warning"] != "No matching index found, create an index to optimize query time." {
		t.Errorf("_find without an index: %s; want the no-index warning", r.Body)
	}
}

func checkPouchMangoNull(t *testing.T, p *upstreams.PouchDB, truth []upstreams.Record) {
	owner := func(keep func(v any, ok bool) bool) []string {
		return upstreams.IDs(truth, func(r upstreams.Record) bool { v, ok := r["owner"]; return keep(v, ok) })
	}
	cases := []struct {
		name     string
		selector any
		want     []string
		count    int
	}{
		{"null_matches_null_only", nil, owner(func(v any, ok bool) bool { return ok && v == nil }), pouchNullOwners},
		{"exists_false_matches_missing_only", map[string]any{"$exists": false}, owner(func(_ any, ok bool) bool { return !ok }), pouchMissingOwners},
		{"empty_string_matches_empty_only", "", owner(func(v any, ok bool) bool { return ok && v == "" }), pouchEmptyOwners},
		// Unlike CouchDB, where $ne needs the field: PouchDB's $ne matches
		// documents without it.
		{"ne_empty_matches_null_and_missing_too", map[string]any{"$ne": ""}, owner(func(v any, ok bool) bool { return !ok || v != "" }),
			upstreams.PouchDBAccounts - pouchEmptyOwners},
		// $in cannot name null.
		{"in_null_matches_nothing", map[string]any{"$in": []any{nil}}, []string{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ids := pouchFind(t, p, map[string]any{"selector": map[string]any{"owner": c.selector}, "fields": []string{"_id"}})
			slices.Sort(ids)
			if r.Status != http.StatusOK || len(ids) != c.count || !slices.Equal(ids, c.want) {
				t.Errorf("owner %v: status %d, %d docs; want %d, exactly the truth's (%d)", c.selector, r.Status, len(ids), c.count, len(c.want))
			}
		})
	}
	// $ne null is refused, with JavaScript's own message.
	r, _ := pouchFind(t, p, map[string]any{"selector": map[string]any{"owner": map[string]any{"$ne": nil}}})
	if r.Status != http.StatusBadRequest || string(r.Body) != `{"error":"bad_request","reason":"Cannot convert undefined or null to object"}`+"\n" {
		t.Errorf("owner $ne null: status %d %s; want 400 bad_request", r.Status, r.Body)
	}
}

func checkPouchConflict(t *testing.T, p *upstreams.PouchDB) {
	const id = "acct-00003"
	before := p.Doc(t, id)
	stale, _ := before["_rev"].(string)
	rev := p.Update(t, id, map[string]any{"status": "archived"}) // another writer
	if !strings.HasPrefix(stale, "1-") || !strings.HasPrefix(rev, "2-") {
		t.Errorf("revisions %q then %q; want 1-… then 2-…", stale, rev)
	}
	const conflict = `{"error":"conflict","reason":"Document update conflict"}` + "\n"
	for _, c := range []struct {
		name string
		doc  map[string]any
	}{
		{"stale_rev", map[string]any{"_rev": stale, "status": "disabled"}},
		{"no_rev", map[string]any{"status": "disabled"}},
	} {
		r := p.Send(t, http.MethodPut, "/"+upstreams.PouchDBDatabase+"/"+id, nil, c.doc)
		if r.Status != http.StatusConflict || string(r.Body) != conflict {
			t.Errorf("PUT with %s: status %d %s; want 409 %s", c.name, r.Status, r.Body, conflict)
		}
	}
	if after := p.Doc(t, id); after["_rev"] != rev || after["status"] != "archived" {
		t.Errorf("after the refused writes: %v; want the other writer's %s", after, rev)
	}
	// Never there and deleted read the same (CouchDB's reason for a deleted
	// document is "deleted"; PouchDB's is "missing").
	r := p.Send(t, http.MethodGet, "/"+upstreams.PouchDBDatabase+"/acct-99999", nil, nil)
	if r.Status != http.StatusNotFound || string(r.Body) != `{"error":"not_found","reason":"missing"}`+"\n" || p.Doc(t, "acct-99999") != nil {
		t.Errorf("GET of a document never written: status %d %s; want 404 not_found missing", r.Status, r.Body)
	}
	if rev := p.Delete(t, id); !strings.HasPrefix(rev, "3-") {
		t.Errorf("the deletion's _rev %q; want 3-…", rev)
	}
	r = p.Send(t, http.MethodGet, "/"+upstreams.PouchDBDatabase+"/"+id, nil, nil)
	if r.Status != http.StatusNotFound || string(r.Body) != `{"error":"not_found","reason":"missing"}`+"\n" || p.Doc(t, id) != nil {
		t.Errorf("GET of a deleted document: status %d %s; want 404 not_found missing", r.Status, r.Body)
	}
}

func checkPouchPutReplaces(t *testing.T, p *upstreams.PouchDB) {
	const id = "acct-00004"
	before := p.Doc(t, id)
	r := p.Send(t, http.MethodPut, "/"+upstreams.PouchDBDatabase+"/"+id, nil, map[string]any{"_rev": before["_rev"], "status": "disabled"})
	m := pouchJSON(t, "PUT", r)
	if r.Status != http.StatusCreated || m["ok"] != true || m["id"] != id || !strings.HasPrefix(fmt.Sprint(m["rev"]), "2-") || len(m) != 3 {
		t.Errorf("PUT with the current _rev: status %d %s; want 201 {ok, id, rev 2-…}", r.Status, r.Body)
	}
	after := p.Doc(t, id)
	if got := slices.Sorted(maps.Keys(after)); !slices.Equal(got, []string{"_id", "_rev", "status"}) {
		t.Errorf("after a PUT of status only: members %v (before: %v); want _id, _rev and status: the fields not sent are gone", got, slices.Sorted(maps.Keys(before)))
	}
}

func checkPouchBulkDocs(t *testing.T, p *upstreams.PouchDB) {
	current := p.Doc(t, "acct-00005")
	current["status"] = "disabled"
	stale := p.Doc(t, "acct-00006")
	p.Update(t, "acct-00006", map[string]any{"status": "archived"}) // another writer
	stale["status"] = "disabled"
	docs := []any{current, stale, map[string]any{"_id": "acct-new-1", "status": "active"}}
	r := p.Send(t, http.MethodPost, "/"+upstreams.PouchDBDatabase+"/_bulk_docs", nil, map[string]any{"docs": docs})
	var got []map[string]any
	if err := json.Unmarshal(r.Body, &got); r.Status != http.StatusCreated || err != nil || len(got) != 3 {
		t.Fatalf("_bulk_docs: status %d %s; want 201 and a bare JSON array of 3", r.Status, r.Body)
	}
	wantKeys := [][]string{{"id", "ok", "rev"}, {"error", "id", "reason"}, {"id", "ok", "rev"}}
	for i, g := range got {
		if keys := slices.Sorted(maps.Keys(g)); !slices.Equal(keys, wantKeys[i]) {
			t.Errorf("_bulk_docs result %d: %v; want members %v", i, g, wantKeys[i])
		}
	}
	if got[0]["id"] != "acct-00005" || got[0]["ok"] != true || got[1]["id"] != "acct-00006" || got[1]["error"] != "conflict" ||
		got[1]["reason"] != "Document update conflict" || got[2]["id"] != "acct-new-1" || !strings.HasPrefix(fmt.Sprint(got[2]["rev"]), "1-") {
		t.Errorf("_bulk_docs: %s; want ok, a conflict for the stale _rev, and a new document", r.Body)
	}
	if p.Doc(t, "acct-00006")["status"] != "archived" || p.Doc(t, "acct-00005")["status"] != "disabled" {
		t.Error("_bulk_docs: the conflict must leave the other writer's document, the ok one must be written")
	}
	// The harness's own BulkDocs reads the same answer.
	res := p.BulkDocs(t, []upstreams.Record{{"_id": "acct-new-1", "status": "x"}})
	if res[0].Error != "conflict" || res[0].ID != "acct-new-1" {
		t.Errorf("BulkDocs of an existing id without _rev: %+v; want a conflict", res[0])
	}
}

// TestPouchDB_WholeDocumentWritesAreJournaledAsTheDatabaseHoldsThem runs
// airlock's writes against PouchDB Server (testdata/pouchdb.yaml) and holds
// the journal to the database's own documents. CouchDB replaces the whole
// document on PUT: archive sends the document as read right before the
// write ({{after}}, its _rev included) and every other member survives; a
// document another writer changed after the preview, or between airlock's
// read and its PUT (a 409 on the stale _rev), is skipped and keeps the other
// writer's change; the compensation puts every status back. A naive PUT of
// the status alone destroys the rest of each document, and no such target
// is ever journaled succeeded.
func TestPouchDB_WholeDocumentWritesAreJournaledAsTheDatabaseHoldsThem(t *testing.T) {
	p := upstreams.StartPouchDB(t)
	px := startWriteProxy(t, p.URL)
	w := withStore(t, startAirlock(t, "pouchdb.yaml", px.URL, nil))
	t.Run("archive_keeps_every_member_skips_conflicts_and_is_compensated", func(t *testing.T) { checkPouchArchive(t, p, px, w) })
	t.Run("a_put_of_the_status_alone_is_never_succeeded", func(t *testing.T) { checkPouchNaiveArchive(t, p, px, w) })
	t.Run("write_evidence_mutation", func(t *testing.T) {
		pool := upstreams.IDs(p.Docs(t), func(d upstreams.Record) bool { return d["status"] == "active" && d["team"] == "payments" })
		checkWriteEvidence(t, writeEvidenceCase{upstream: "PouchDB Server 4.2", config: "pouchdb.yaml", base: p.URL, action: "archive", pool: pool,
			target: pathTarget(`^/accounts/([^/_][^/]*)$`),
			applied: func(t *testing.T, ids []string) map[string]bool {
				docs := pouchByID(t, p)
				out := map[string]bool{}
				for _, id := range ids {
					out[id] = docs[id]["status"] == "archived"
				}
				return out
			}})
	})
}

// pouchByID is the database's documents by _id.
func pouchByID(t *testing.T, p *upstreams.PouchDB) map[string]upstreams.Record {
	out := map[string]upstreams.Record{}
	for _, d := range p.Docs(t) {
		out[d.ID()] = d
	}
	return out
}

// pouchMembers is a document without _rev and the members named.
func pouchMembers(d upstreams.Record, without ...string) upstreams.Record {
	out := upstreams.Record{}
	for k, v := range d {
		if k != "_rev" && !slices.Contains(without, k) {
			out[k] = v
		}
	}
	return out
}

// pouchOtherWriter changes a document at its current _rev as another
// writer would, from inside the proxy (where a test cannot stop).
func pouchOtherWriter(p *upstreams.PouchDB, id string, fields map[string]any) error {
	resp, err := http.Get(p.DBURL + "/" + id)
	if err != nil {
		return err
	}
	var doc map[string]any
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		return err
	}
	maps.Copy(doc, fields)
	b, _ := json.Marshal(doc)
	req, _ := http.NewRequest(http.MethodPut, p.DBURL+"/"+id, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("the other writer's PUT of %s: status %d", id, resp.StatusCode)
	}
	return nil
}

func checkPouchArchive(t *testing.T, p *upstreams.PouchDB, px *writeProxy, w *airlock) {
	before := pouchByID(t, p)
	var targets []string
	for id, d := range before {
		if d["status"] == "past_due" {
			targets = append(targets, id)
		}
	}
	slices.Sort(targets)
	if len(targets) != pouchPastDue {
		t.Fatalf("%d past_due documents; seeded %d", len(targets), pouchPastDue)
	}
	prev := w.tool(t, "preview_selection", map[string]any{"resource": "accounts", "filter": map[string]any{"status": "past_due"},
		"action": map[string]any{"type": "archive"}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true || data["counts"].(map[string]any)["members"] != float64(len(targets)) {
		t.Fatalf("preview: committable %v, counts %v; want %d members", data["committable"], data["counts"], len(targets))
	}
	for _, wn := range prev["warnings"].([]any) {
		if wn.(map[string]any)["code"] == "NOT_CONDITIONAL" {
			t.Errorf("the preview warns NOT_CONDITIONAL: CouchDB's _rev is a condition the database enforces")
		}
	}

	// One document changes after the preview; another between airlock's
	// read of it right before its write and the PUT, which then carries a
	// stale _rev.
	early, late := targets[10], targets[20]
	p.Update(t, early, map[string]any{"name": "renamed by another writer"})
	var (
		mu      sync.Mutex
		hookErr error
		hooked  int
	)
	px.set(nil, func(req proxied, status int, body []byte) (int, []byte) {
		mu.Lock()
		defer mu.Unlock()
		if req.Method == http.MethodGet && req.Path == "/accounts/"+late && hooked == 0 {
			hooked++
			hookErr = pouchOtherWriter(p, late, map[string]any{"team": "moved by another writer"})
		}
		return status, body
	})
	op, res := commitOp(t, w, data)
	px.set(nil, nil)
	mu.Lock()
	defer mu.Unlock()
	if hookErr != nil || hooked != 1 {
		t.Fatalf("the other writer acted %d times: %v", hooked, hookErr)
	}
	j := journalOf(t, w, op)
	counts := outcomeCounts(j)
	t.Logf("archive of %d past_due documents: %v (%s)", len(targets), counts, unsettled(j))
	if res["status"] != "completed" || counts["succeeded"] != len(targets)-2 || counts["skipped"] != 2 || len(j) != len(targets) {
		t.Errorf("operation %s: status %v, counts %v; want %d succeeded and 2 skipped", op, res["status"], counts, len(targets)-2)
	}
	if e := j[early]; e.Outcome != "skipped" || !strings.Contains(e.Note, "version changed") {
		t.Errorf("%s, changed after the preview: %s %q; want skipped, its version changed", early, e.Outcome, e.Note)
	}
	if l := j[late]; l.Outcome != "skipped" || l.HTTPStatus != http.StatusConflict || l.code() != "UPSTREAM_CONFLICT" {
		t.Errorf("%s, changed between airlock's read and its PUT: %s %d %s %q; want skipped by CouchDB's 409 conflict", late, l.Outcome, l.HTTPStatus, l.code(), l.Note)
	}

	after := pouchByID(t, p)
	var kept, wrong int
	for id, b := range before {
		a := after[id]
		switch {
		case id == early || id == late:
			if a["status"] != "past_due" || a["_rev"] == b["_rev"] || !strings.HasPrefix(fmt.Sprint(a["_rev"]), "2-") {
				t.Errorf("%s: %v; want the other writer's revision 2, still past_due", id, a)
			}
		case j[id].Outcome == "succeeded":
			if a["status"] != "archived" || a["_rev"] == b["_rev"] || !reflect.DeepEqual(pouchMembers(a, "status"), pouchMembers(b, "status")) {
				wrong++
				t.Errorf("%s journaled succeeded: the database holds %v; it held %v: want archived at a new _rev, every other member as it was", id, a, b)
			} else {
				kept++
			}
		default:
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s, not a target, changed: %v; it was %v", id, a, b)
			}
		}
	}
	t.Logf("journal vs database: %d succeeded, each archived at a new _rev with every other member intact: %d; otherwise: %d", counts["succeeded"], kept, wrong)

	comp := w.tool(t, "preview_selection", map[string]any{"compensate": op, "deadline_ms": deadlineMS})
	cdata := comp["data"].(map[string]any)
	if cdata["counts"].(map[string]any)["members"] != float64(len(targets)-2) {
		t.Fatalf("compensation preview: counts %v; want the %d documents archived", cdata["counts"], len(targets)-2)
	}
	cop, cres := commitOp(t, w, cdata)
	cj := journalOf(t, w, cop)
	if cc := outcomeCounts(cj); cres["status"] != "completed" || cc["succeeded"] != len(targets)-2 {
		t.Errorf("compensation %s: status %v, counts %v; want %d succeeded (%s)", cop, cres["status"], cc, len(targets)-2, unsettled(cj))
	}
	restored := 0
	for id, a := range pouchByID(t, p) {
		b := before[id]
		if id == early || id == late || cj[id].Outcome != "succeeded" {
			continue
		}
		if !reflect.DeepEqual(pouchMembers(a), pouchMembers(b)) || !strings.HasPrefix(fmt.Sprint(a["_rev"]), "3-") {
			t.Errorf("%s after the compensation: %v; it held %v", id, a, b)
		} else {
			restored++
		}
	}
	t.Logf("compensation restored %d of %d documents, every member as before the archive", restored, len(targets)-2)
}

// pouchFrameFields are the declared fields outside archive's effect
// (testdata/pouchdb.yaml), which a write must leave as they were.
var pouchFrameFields = []string{"balance", "name", "owner", "tags", "team", "version"}

func checkPouchNaiveArchive(t *testing.T, p *upstreams.PouchDB, px *writeProxy, w *airlock) {
	px.set(nil, nil)
	before := pouchByID(t, p)
	filter := map[string]any{"status": "disabled", "team": "support"}
	var targets []string
	for id, d := range before {
		if d["status"] == "disabled" && d["team"] == "support" {
			targets = append(targets, id)
		}
	}
	if len(targets) < 20 {
		t.Fatalf("%d disabled documents of team support; the case needs 20 or more", len(targets))
	}
	prev := w.tool(t, "preview_selection", map[string]any{"resource": "accounts", "filter": filter,
		"action": map[string]any{"type": "archive_naive"}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true || data["counts"].(map[string]any)["members"] != float64(len(targets)) {
		t.Fatalf("preview: committable %v, counts %v; want %d members", data["committable"], data["counts"], len(targets))
	}
	op, _ := commitOp(t, w, data)
	j := journalOf(t, w, op)
	after := pouchByID(t, p)
	var damaged, damagedSucceeded, named int
	for _, id := range targets {
		b, a, e := before[id], after[id], j[id]
		var lost []string
		for _, f := range pouchFrameFields {
			if _, had := b[f]; had {
				if _, has := a[f]; !has {
					lost = append(lost, f)
				}
			}
		}
		if a["status"] != "archived" {
			t.Errorf("%s: status %v in the database; the naive PUT was applied to every target", id, a["status"])
		}
		if len(lost) == 0 {
			continue
		}
		damaged++
		if e.Outcome == "succeeded" {
			damagedSucceeded++
			t.Errorf("%s lost %v and is journaled succeeded", id, lost)
			continue
		}
		_, list, _ := strings.Cut(e.Note, "changed (")
		list, _, _ = strings.Cut(list, ")")
		names := strings.Split(list, ", ")
		slices.Sort(names)
		if e.Outcome != "unknown" || e.code() != "UPSTREAM_WRITE_UNCONFIRMED" || !slices.Equal(names, lost) {
			t.Errorf("%s lost %v: journaled %s %s %q; want unknown, UPSTREAM_WRITE_UNCONFIRMED, the note naming exactly the fields lost", id, lost, e.Outcome, e.code(), e.Note)
		} else {
			named++
		}
	}
	t.Logf("archive_naive on %d documents: journal %v; the database shows %d documents that lost members, %d of them journaled succeeded, %d unknown with a note naming exactly the members lost",
		len(targets), outcomeCounts(j), damaged, damagedSucceeded, named)
	if damaged != len(targets) {
		t.Errorf("%d of %d documents lost members: the case expects CouchDB to replace each whole document", damaged, len(targets))
	}
}
