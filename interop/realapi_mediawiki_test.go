package interop

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// TestMediaWiki_ContinuationsSearchesAndLoggedInEdits runs airlock against
// MediaWiki 1.39 over SQLite (testdata/mediawiki.yaml), logged in with a
// bot password, and holds every answer to the wiki's own truth: its SQLite
// rows, or its API asked directly. allpages is read through a
// continuation object per namespace; a generator's batches (gcmcontinue
// and clcontinue at once) are merged into pages with every category; a
// full-text search is the index's claim and never complete; MediaWiki's
// own error words are quoted; an edit logs in, carries a CSRF token,
// re-reads by pageids, skips a page another editor changed after the
// preview, and is undone by its compensation.
func TestMediaWiki_ContinuationsSearchesAndLoggedInEdits(t *testing.T) {
	start := time.Now()
	m := upstreams.StartMediaWiki(t)
	env := map[string]string{"WIKI_BOT_USER": m.BotUser, "WIKI_BOT_PASSWORD": m.BotPassword}
	al := startAirlock(t, "mediawiki.yaml", m.URL, env)
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "MediaWiki", config: "mediawiki.yaml", base: m.URL, env: env, resource: "pages", pageSize: 40})
		checkEvidence(t, evidenceCase{upstream: "MediaWiki (batches)", config: "mediawiki.yaml", base: m.URL, env: env, resource: "alpha_members"})
	})
	truth := m.Pages(t)
	t.Logf("MediaWiki %s: %d pages in namespaces 0, 2 and 4", m.Version, len(truth))

	nsIs := func(ns ...any) func(upstreams.Record) bool { return valueIn("ns", ns...) }
	hostile := []any{"Page, 5", `Quote "12"`, "Ünïcode страница 23", "Apostrophe's 104", "Airlock Wiki:Apostrophe's 4", "no such page"}
	cases := []upstreamCase{
		{name: "every_page_of_three_namespaces", resource: "pages", correct: true},
		{name: "user_namespace", resource: "pages", filter: map[string]any{"ns": 2}, keep: nsIs(float64(2)), correct: true},
		{name: "any_of_namespaces", resource: "pages", filter: map[string]any{"ns": []any{0, "4"}}, keep: nsIs(float64(0), float64(4)), correct: true},
		{name: "titles_with_commas_quotes_and_unicode", resource: "pages", filter: map[string]any{"title": hostile}, keep: valueIn("title", hostile...), correct: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "pageid", "ns") })
	}

	t.Run("a_scan_cut_by_its_page_budget_continues_where_it_stopped", func(t *testing.T) {
		args := map[string]any{"resource": "pages", "max_items": 1000, "max_pages": 2, "fields": []string{"pageid"}, "deadline_ms": deadlineMS}
		var ids []string
		var last answer
		for calls := 1; ; calls++ {
			last = al.search(t, args)
			for _, it := range last.Data.Items {
				ids = append(ids, idOf(it["pageid"]))
			}
			if last.Continuation.Kind != envelope.ContinueNextCursor || calls > 100 {
				break
			}
			args = map[string]any{"resource": "pages", "cursor": last.Continuation.Cursor, "max_items": 1000, "max_pages": 2, "fields": []string{"pageid"}, "deadline_ms": deadlineMS}
		}
		want := upstreams.IDs(truth, nil)
		if !last.Complete {
			t.Fatalf("the continued scan ended %s", last)
		}
		checkItems(t, "continued scan", last, ids, want)
	})

	t.Run("generator_batches_are_merged_with_every_category", func(t *testing.T) {
		inAlpha := func(r upstreams.Record) bool {
			cats, _ := r["categories"].([]any)
			return slices.Contains(cats, any("Category:Alpha"))
		}
		want := upstreams.IDs(truth, inAlpha)
		ans, ids := al.walk(t, map[string]any{"resource": "alpha_members", "max_items": 1000, "fields": []string{"pageid", "categories"}, "deadline_ms": deadlineMS}, "pageid")
		t.Logf("Category:Alpha: %s; SQLite holds %d members", ans, len(want))
		if !ans.Complete {
			t.Fatalf("Category:Alpha: %s; want complete", ans)
		}
		checkItems(t, "Category:Alpha", ans, ids, want)
		byID := map[string]upstreams.Record{}
		for _, r := range truth {
			byID[r.ID()] = r
		}
		// Each page's categories, merged over its batch, are SQLite's.
		ans2 := al.search(t, map[string]any{"resource": "alpha_members", "max_items": 1000, "fields": []string{"pageid", "categories"}, "deadline_ms": deadlineMS})
		for _, it := range ans2.Data.Items {
			id := idOf(it["pageid"])
			var got []string
			list, _ := it["categories"].([]any)
			for _, c := range list {
				got = append(got, c.(map[string]any)["title"].(string))
			}
			var want []string
			cats, _ := byID[id]["categories"].([]any)
			for _, c := range cats {
				want = append(want, c.(string))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("page %s: categories %q, SQLite holds %q", id, got, want)
			}
		}
	})

	t.Run("a_search_is_the_indexs_claim_never_complete", func(t *testing.T) {
		direct := mwSearch(t, m, "searchword3")
		ans, ids := al.walk(t, map[string]any{"resource": "search", "filter": map[string]any{"text": "searchword3"}, "max_items": 1000,
			"fields": []string{"pageid"}, "deadline_ms": deadlineMS}, "pageid")
		t.Logf("search searchword3: %s; MediaWiki's own search returns %d", ans, len(direct))
		if ans.Complete || !hasCode(ans, string(envelope.SearchMatchesUnverified)) {
			t.Errorf("search: %s; want partial with SEARCH_MATCHES_UNVERIFIED", ans)
		}
		if got := slices.Sorted(slices.Values(ids)); !slices.Equal(got, direct) {
			missing, extra := diff(direct, got)
			t.Errorf("search delivered %d pages, MediaWiki's search %d: missing %v, extra %v", len(got), len(direct), head(missing), head(extra))
		}
		empty := al.search(t, map[string]any{"resource": "search", "filter": map[string]any{"text": "zzqxnothingmatches"}, "max_items": 0, "deadline_ms": deadlineMS})
		if empty.Complete || empty.Data.TotalMatched != 0 || !hasCode(empty, string(envelope.SearchMatchesUnverified)) {
			t.Errorf("an empty search: %s; want 0 found, never complete (no proof of absence)", empty)
		}
		hostile := al.search(t, map[string]any{"resource": "search", "filter": map[string]any{"text": `"common" OR (x) & srnamespace=1 Ünïcode`}, "max_items": 0, "deadline_ms": deadlineMS})
		if hostile.Problem != nil || hostile.Complete {
			t.Errorf("a search with quotes, parentheses and &: %s; want an answer, never complete", hostile)
		}
	})

	t.Run("mediawikis_error_words_are_quoted", func(t *testing.T) {
		ans := al.search(t, map[string]any{"resource": "pages_bad_namespace", "max_items": 0, "deadline_ms": deadlineMS})
		if ans.Problem == nil || ans.Problem.Code != string(envelope.ProblemUpstreamErrorInSuccess) || !strings.Contains(ans.Problem.UpstreamMessage, `Unrecognized value for parameter "apnamespace": abc`) {
			t.Errorf("a refused namespace: %s, %+v; want UPSTREAM_ERROR_IN_SUCCESS quoting MediaWiki", ans, ans.Problem)
		}
	})

	t.Run("an_edit_logs_in_skips_a_page_changed_after_the_preview_and_is_undone", func(t *testing.T) {
		checkMediaWikiEdit(t, m, env)
	})
	t.Run("write_evidence_mutation", func(t *testing.T) {
		const text = "Written through the mutating proxy."
		var pool []string
		for _, r := range m.SQL(t, `SELECT page_id AS id FROM page WHERE page_namespace = 0 AND page_id NOT IN
			(SELECT cl_from FROM categorylinks WHERE cl_to = 'Editable') ORDER BY page_id LIMIT 40`) {
			pool = append(pool, fmt.Sprint(r["id"]))
		}
		checkWriteEvidence(t, writeEvidenceCase{upstream: "MediaWiki 1.39", config: "mediawiki.yaml", base: m.URL, env: env, action: "set_text",
			params: map[string]any{"text": text}, pool: pool, target: mediaWikiTarget,
			applied: func(t *testing.T, ids []string) map[string]bool {
				out := map[string]bool{}
				for _, r := range m.SQL(t, `SELECT p.page_id AS id, t.old_text AS text FROM page p JOIN slots s ON s.slot_revision_id = p.page_latest
					JOIN content ct ON ct.content_id = s.slot_content_id JOIN text t ON t.old_id = CAST(substr(ct.content_address, 4) AS INTEGER)
					WHERE p.page_id IN (`+strings.Join(ids, ",")+`)`) {
					out[fmt.Sprint(r["id"])] = r["text"] == text
				}
				return out
			}})
	})
	t.Logf("the MediaWiki suite took %s", time.Since(start).Round(time.Millisecond))
}

// mediaWikiTarget reads the page an api.php request names: an edit writes
// its pageid, a query by pageids reads it.
func mediaWikiTarget(r proxied) (string, bool) {
	switch {
	case r.Query.Get("action") == "edit":
		return r.Query.Get("pageid"), true
	case r.Query.Get("action") == "query" && r.Query.Get("pageids") != "":
		return r.Query.Get("pageids"), false
	}
	return "", false
}

// mwSearch asks MediaWiki's search directly (anonymously) for every page
// of namespaces 0, 2 and 4 the words find, and returns their ids sorted.
func mwSearch(t *testing.T, m *upstreams.MediaWiki, words string) []string {
	t.Helper()
	var ids []string
	offset := 0
	for {
		u := m.URL + "/api.php?" + url.Values{"action": {"query"}, "list": {"search"}, "srwhat": {"text"}, "srnamespace": {"0|2|4"}, "srsearch": {words},
			"srlimit": {"500"}, "sroffset": {fmt.Sprint(offset)}, "format": {"json"}, "formatversion": {"2"}}.Encode()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var doc struct {
			Continue *struct {
				SROffset int `json:"sroffset"`
			} `json:"continue"`
			Query struct {
				Search []struct {
					PageID int `json:"pageid"`
				} `json:"search"`
			} `json:"query"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("MediaWiki's search: %v: %s", err, b)
		}
		for _, s := range doc.Query.Search {
			ids = append(ids, fmt.Sprint(s.PageID))
		}
		if doc.Continue == nil {
			break
		}
		offset = doc.Continue.SROffset
	}
	slices.Sort(ids)
	return ids
}

// checkMediaWikiEdit previews an edit of the Editable pages, lets another
// user change one of them, commits (logged in, a CSRF token per login, a
// re-read by pageids before each write): the changed page is skipped, the
// others hold the new text in SQLite; the compensation puts their text
// back.
func checkMediaWikiEdit(t *testing.T, m *upstreams.MediaWiki, env map[string]string) {
	wa := withStore(t, startAirlock(t, "mediawiki.yaml", m.URL, env))
	textOf := func() map[string]string {
		out := map[string]string{}
		for _, r := range m.SQL(t, `SELECT p.page_id AS id, t.old_text AS text FROM page p JOIN categorylinks c ON c.cl_from = p.page_id AND c.cl_to = 'Editable'
			JOIN slots s ON s.slot_revision_id = p.page_latest JOIN content ct ON ct.content_id = s.slot_content_id
			JOIN text t ON t.old_id = CAST(substr(ct.content_address, 4) AS INTEGER)`) {
			out[fmt.Sprint(r["id"])] = r["text"].(string)
		}
		return out
	}
	before := textOf()
	if len(before) != 12 {
		t.Fatalf("%d Editable pages in SQLite, want 12", len(before))
	}
	newText := "Rewritten by airlock, with & = ? # and Ünïcode.\n[[Category:Editable]]"
	prev := wa.tool(t, "preview_selection", map[string]any{"resource": "editable",
		"action": map[string]any{"type": "set_text", "params": map[string]any{"text": newText}}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true || data["counts"].(map[string]any)["members"] != float64(12) {
		t.Fatalf("preview: committable %v, counts %v; want 12 members", data["committable"], data["counts"])
	}
	// Another editor changes one page between the preview and the commit.
	var moved string
	for _, r := range m.SQL(t, `SELECT p.page_id AS id, p.page_title AS title FROM page p JOIN categorylinks c ON c.cl_from = p.page_id AND c.cl_to = 'Editable' ORDER BY p.page_id LIMIT 1`) {
		moved = fmt.Sprint(r["id"])
		m.EditAs(t, upstreams.MediaWikiOther, strings.ReplaceAll(r["title"].(string), "_", " "), "Changed by another editor.\n[[Category:Editable]]")
	}
	changed := textOf()[moved]
	res := wa.tool(t, "commit_bulk_action", map[string]any{"selection_id": data["selection_id"], "expected_digest": data["digest"],
		"action": data["action"], "mode": "execute", "wait_ms": 60000})
	op := res["data"].(map[string]any)["operation_id"].(string)
	got := wa.tool(t, "get_operation", map[string]any{"operation_id": op})["data"].(map[string]any)
	for i := 0; got["status"] == "running" && i < 120; i++ {
		time.Sleep(500 * time.Millisecond)
		got = wa.tool(t, "get_operation", map[string]any{"operation_id": op})["data"].(map[string]any)
	}
	counts := got["counts"].(map[string]any)
	t.Logf("edit: status %v, counts %v", got["status"], counts)
	if counts["succeeded"] != float64(11) || counts["skipped"] != float64(1) {
		t.Errorf("edit counts %v; want 11 succeeded and the page another editor changed skipped", counts)
	}
	after := textOf()
	for id, text := range after {
		want := strings.TrimSpace(newText)
		if id == moved {
			want = changed
		}
		if strings.TrimSpace(text) != strings.TrimSpace(want) {
			t.Errorf("page %s after the commit: %q, want %q", id, text, want)
		}
	}
	comp := wa.tool(t, "preview_selection", map[string]any{"compensate": op, "deadline_ms": deadlineMS})
	cdata := comp["data"].(map[string]any)
	if cdata["counts"].(map[string]any)["members"] != float64(11) {
		t.Fatalf("compensation preview: counts %v; want the 11 pages written", cdata["counts"])
	}
	// MediaWiki trims trailing whitespace from every text it saves, and the
	// imported texts end in a newline: written back, each is stored without
	// it. The journal says succeeded only of a page SQLite holds exactly as
	// it was; a page stored otherwise is unknown, with the write's problem.
	cop, _ := commitOp(t, wa, cdata)
	cj := journalOf(t, wa, cop)
	exact, trimmed := 0, 0
	for id, text := range textOf() {
		want := before[id]
		if id == moved {
			want = changed
		}
		if strings.TrimSpace(text) != strings.TrimSpace(want) {
			t.Errorf("page %s after the compensation: %q, want %q", id, text, want)
		}
		if id == moved {
			continue
		}
		switch e := cj[id]; {
		case text == want && e.Outcome == "succeeded":
			exact++
		case text != want && e.Outcome == "unknown" && e.code() == "UPSTREAM_WRITE_UNCONFIRMED":
			trimmed++
		default:
			t.Errorf("page %s: journaled %s %s %q; SQLite holds %q, it held %q", id, e.Outcome, e.code(), e.Note, text, want)
		}
	}
	t.Logf("compensation: %v; %d pages restored exactly and succeeded, %d stored by MediaWiki without their trailing newline and unknown", outcomeCounts(cj), exact, trimmed)
	if exact+trimmed != 11 {
		t.Errorf("%d of the 11 pages written are accounted for", exact+trimmed)
	}
	if n := wa.runtime.Upstreams["wiki"].Logins(); n < 1 || n > 2 {
		t.Errorf("%d logins for a preview, a commit and a compensation; want one shared login (two at most)", n)
	}
}
