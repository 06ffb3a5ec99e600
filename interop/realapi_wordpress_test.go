package interop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// TestWordPress_CompleteOnlyWithTheSitesExactPosts runs airlock against
// WordPress 6.1 over MariaDB (testdata/wordpress.yaml), as its
// administrator (Basic, an application password) and as an anonymous
// reader, and holds every answer to the site's own truth: MariaDB's rows,
// read with SQL. Counts are exact whether a term id is given as a number
// or a string; an anonymous reader's view is never complete about what it
// cannot see; a filter the upstream applied otherwise than airlock's own
// check is doubt, not absence; a result that fits one page costs one
// page; a tag added keeps every tag a post had, and its compensation puts
// the lists back; a manifest is delivered whole, once; a list that shrinks
// during a scan is never complete and never a rejected request. The
// subtests run in order: the last ones change the posts.
func TestWordPress_CompleteOnlyWithTheSitesExactPosts(t *testing.T) {
	w := upstreams.StartWordPress(t)
	env := map[string]string{"WORDPRESS_USER": w.User, "WORDPRESS_APP_PASSWORD": w.AppPassword}
	al := startAirlock(t, "wordpress.yaml", w.URL, env)
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "WordPress", config: "wordpress.yaml", base: w.URL, env: env, resource: "posts",
			filter: map[string]any{"categories": json.Number(strconv.Itoa(w.Categories[2]))}, pageSize: 25})
	})
	truth := w.Posts(t) // every seeded post is in one of the statuses status=any lists

	t.Run("counts_by_term_id_as_number_and_as_string", func(t *testing.T) {
		checkWordPressTermCounts(t, w, al, truth)
	})

	cat, tag := w.Categories, w.Tags
	cases := []upstreamCase{
		{name: "every_post", resource: "posts", correct: true},
		{name: "category_as_number", resource: "posts", filter: map[string]any{"categories": cat[2]}, keep: wpHas("categories", cat[2]), correct: true},
		{name: "category_as_string", resource: "posts", filter: map[string]any{"categories": strconv.Itoa(cat[2])}, keep: wpHas("categories", cat[2]), correct: true},
		{name: "tag_as_number", resource: "posts", filter: map[string]any{"tags": tag[10]}, keep: wpHas("tags", tag[10]), correct: true},
		{name: "tag_as_string", resource: "posts", filter: map[string]any{"tags": strconv.Itoa(tag[10])}, keep: wpHas("tags", tag[10]), correct: true},
		{name: "any_of_categories", resource: "posts", filter: map[string]any{"categories": []any{cat[4], cat[6]}},
			keep: wpAny(wpHas("categories", cat[4]), wpHas("categories", cat[6])), correct: true},
		{name: "any_of_tags_number_and_string", resource: "posts", filter: map[string]any{"tags": []any{tag[3], strconv.Itoa(tag[9])}},
			keep: wpAny(wpHas("tags", tag[3]), wpHas("tags", tag[9])), correct: true},
		{name: "category_and_tag", resource: "posts", filter: map[string]any{"categories": cat[1], "tags": tag[0]},
			keep: func(r upstreams.Record) bool { return wpHas("categories", cat[1])(r) && wpHas("tags", tag[0])(r) }, correct: true},
		{name: "drafts_as_the_administrator", resource: "posts", filter: map[string]any{"status": "draft"}, keep: valueIn("status", "draft"), correct: true},
		{name: "drafts_and_pending", resource: "posts", filter: map[string]any{"status": []any{"draft", "pending"}},
			keep: valueIn("status", "draft", "pending"), correct: true},
		{name: "author_as_number", resource: "posts", filter: map[string]any{"author": w.Users[3]}, keep: valueIn("author", float64(w.Users[3])), correct: true},
		{name: "author_as_string", resource: "posts", filter: map[string]any{"author": strconv.Itoa(w.Users[3])}, keep: valueIn("author", float64(w.Users[3])), correct: true},
		{name: "published_as_anonymous", resource: "posts_public", filter: map[string]any{"status": "publish"}, keep: valueIn("status", "publish"), correct: true},
		{name: "published_in_a_category_as_anonymous", resource: "posts_public", filter: map[string]any{"status": "publish", "categories": cat[5]},
			keep: func(r upstreams.Record) bool { return r["status"] == "publish" && wpHas("categories", cat[5])(r) }, correct: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "id", "status") })
	}

	t.Run("drafts_as_anonymous_are_restricted_never_none", func(t *testing.T) {
		drafts := len(upstreams.IDs(truth, valueIn("status", "draft")))
		ans := al.search(t, map[string]any{"resource": "posts_public", "filter": map[string]any{"status": "draft"}, "max_items": 0, "deadline_ms": deadlineMS})
		t.Logf("anonymous drafts: %s; MariaDB holds %d drafts", ans, drafts)
		checkClaim(t, "anonymous drafts", ans, drafts)
		if ans.Complete || !hasCode(ans, string(envelope.VisibilityRestricted)) {
			t.Errorf("anonymous drafts: %s; want partial with VISIBILITY_RESTRICTED (an anonymous reader sees no draft, which proves nothing)", ans)
		}
	})
	t.Run("every_post_as_anonymous_is_restricted", func(t *testing.T) {
		ans := al.search(t, map[string]any{"resource": "posts_public", "max_items": 0, "deadline_ms": deadlineMS})
		checkClaim(t, "anonymous, every post", ans, len(truth))
		if ans.Complete || !hasCode(ans, string(envelope.VisibilityRestricted)) {
			t.Errorf("anonymous, every post: %s; want partial with VISIBILITY_RESTRICTED", ans)
		}
	})
	t.Run("a_filter_sent_to_the_wrong_parameter_is_doubt_not_absence", func(t *testing.T) {
		// posts_misdeclared sends tags as tags_exclude: WordPress answers
		// the posts without the tag, and airlock's own check rejects them
		// all. Two pieces of evidence disagree: never "none have it".
		want := len(upstreams.IDs(truth, wpHas("tags", tag[0])))
		ans := al.search(t, map[string]any{"resource": "posts_misdeclared", "filter": map[string]any{"tags": tag[0]}, "max_items": 0, "deadline_ms": deadlineMS})
		t.Logf("tags sent as tags_exclude: %s; MariaDB holds %d", ans, want)
		checkClaim(t, "tags sent as tags_exclude", ans, want)
		if ans.Complete || !hasCode(ans, conflictingEvidence) {
			t.Errorf("tags sent as tags_exclude: %s; want partial with %s", ans, conflictingEvidence)
		}
		for _, r := range ans.IncompleteReasons {
			if r.Code == conflictingEvidence && r.Signal == "" {
				t.Errorf("%s names no signal: both sides of the disagreement must be named", conflictingEvidence)
			}
		}
	})
	t.Run("a_result_that_fits_one_page_asks_one_page", func(t *testing.T) {
		checkWordPressOnePage(t, w, al, truth)
	})
	t.Run("manifest_of_500_members_paged_to_its_end", func(t *testing.T) {
		checkWordPressManifest(t, w, truth, env)
	})
	t.Run("add_tag_keeps_every_tag_and_compensation_restores_the_lists", func(t *testing.T) {
		checkWordPressAddTag(t, w, env, "add_tag")
	})
	t.Run("add_tag_through_the_batch_endpoint_keeps_every_tag", func(t *testing.T) {
		checkWordPressAddTag(t, w, env, "add_tag_batch")
	})
	t.Run("total_shrinking_during_a_scan_is_inconsistent_not_rejected", func(t *testing.T) {
		checkWordPressShrinkingTotal(t, w, al)
	})
	t.Run("write_evidence_mutation", func(t *testing.T) {
		w.SetFaults(upstreams.WordPressFaults{})
		tag := w.Tags[10]
		pool := upstreams.IDs(w.Posts(t), func(r upstreams.Record) bool { return !wpHas("tags", tag)(r) })
		checkWriteEvidence(t, writeEvidenceCase{upstream: "WordPress 6.1", config: "wordpress.yaml", base: w.URL, env: env, action: "add_tag",
			params: map[string]any{"tag": tag}, pool: pool[:40], target: pathTarget(`^/wp-json/wp/v2/posts/(\d+)$`),
			applied: func(t *testing.T, ids []string) map[string]bool {
				out := map[string]bool{}
				for _, p := range w.Posts(t) {
					if slices.Contains(ids, p.ID()) {
						out[p.ID()] = wpHas("tags", tag)(p)
					}
				}
				return out
			}})
	})
}

// wpHas keeps the posts whose term list (categories or tags) holds the
// term id.
func wpHas(field string, id int) func(upstreams.Record) bool {
	return func(r upstreams.Record) bool {
		list, _ := r[field].([]any)
		return slices.Contains(list, any(float64(id)))
	}
}

func wpAny(fs ...func(upstreams.Record) bool) func(upstreams.Record) bool {
	return func(r upstreams.Record) bool {
		for _, f := range fs {
			if f(r) {
				return true
			}
		}
		return false
	}
}

// conflictingEvidence is the reason two pieces of upstream evidence
// contradict each other (the upstream's filter and airlock's re-check),
// spelled out: the test reads what the agent reads.
const conflictingEvidence = "CONFLICTING_EVIDENCE"

func hasCode(a answer, code string) bool {
	for _, r := range a.IncompleteReasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// checkWordPressTermCounts counts the posts of every category and tag,
// the term id sent once as a number and once as a string: both are the
// exact SQL count, complete.
func checkWordPressTermCounts(t *testing.T, w *upstreams.WordPress, al *airlock, truth []upstreams.Record) {
	terms := []struct {
		filter string
		ids    []int
	}{{"categories", w.Categories}, {"tags", w.Tags}}
	for _, tt := range terms {
		for _, id := range tt.ids {
			want := len(upstreams.IDs(truth, wpHas(tt.filter, id)))
			for _, v := range []any{id, strconv.Itoa(id)} {
				ans := al.search(t, map[string]any{"resource": "posts", "filter": map[string]any{tt.filter: v}, "max_items": 0, "deadline_ms": deadlineMS})
				what := fmt.Sprintf("%s %#v", tt.filter, v)
				checkClaim(t, what, ans, want)
				if !ans.Complete || ans.Data.TotalMatched != want {
					t.Errorf("%s: %s; want complete with MariaDB's %d", what, ans, want)
				}
			}
		}
	}
}

// checkWordPressOnePage reads a tag on fewer than 100 posts, and a filter
// nothing matches: each is complete after exactly one page, and nothing
// asks past X-WP-TotalPages (which WordPress answers 400).
func checkWordPressOnePage(t *testing.T, w *upstreams.WordPress, al *airlock, truth []upstreams.Record) {
	rare := w.Tags[9]
	want := upstreams.IDs(truth, wpHas("tags", rare))
	if len(want) == 0 || len(want) > 100 {
		t.Fatalf("the rare tag is on %d posts; the row needs 1 to 100", len(want))
	}
	// A filter nothing matches: the rare tag, scheduled, by one author in
	// one category (the first such pair in seed order).
	var none map[string]any
	for _, c := range w.Categories {
		for _, u := range w.Users {
			if none == nil && len(upstreams.IDs(truth, func(r upstreams.Record) bool {
				return wpHas("tags", rare)(r) && r["status"] == "future" && wpHas("categories", c)(r) && r["author"] == float64(u)
			})) == 0 {
				none = map[string]any{"tags": rare, "status": "future", "categories": c, "author": u}
			}
		}
	}
	if none == nil {
		t.Fatal("every category and author holds a scheduled post with the rare tag; the empty case needs a pair that does not")
	}
	for _, c := range []struct {
		name   string
		filter map[string]any
		want   []string
	}{{"rare_tag", map[string]any{"tags": rare}, want}, {"nothing_matches", none, []string{}}} {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range []map[string]any{
				{"resource": "posts", "filter": c.filter, "fields": []string{"id"}, "max_items": 1000, "deadline_ms": deadlineMS},
				{"resource": "posts", "filter": c.filter, "max_items": 0, "group_by": []string{"status"}, "deadline_ms": deadlineMS},
			} {
				w.SetFaults(upstreams.WordPressFaults{})
				last, ids := al.walk(t, args, "id")
				st := w.ProxyStats()
				what := fmt.Sprintf("%s, max_items %v", c.name, args["max_items"])
				checkClaim(t, what, last, len(c.want))
				if args["max_items"] != 0 {
					checkItems(t, what, last, ids, c.want)
				}
				if !last.Complete || !slices.Equal(st.ListPages, []int{1}) || st.PastTheEnd != 0 {
					t.Errorf("%s: %s; pages asked %v (%d past the end, X-WP-TotalPages %d); want complete after page 1 alone",
						what, last, st.ListPages, st.PastTheEnd, st.TotalPages)
				}
			}
		})
	}
}

// checkWordPressManifest previews add_tag on a category of 500+ posts and
// pages through its manifest, from the preview's next_cursor through
// get_selection's continuations: every member once, exactly MariaDB's.
func checkWordPressManifest(t *testing.T, w *upstreams.WordPress, truth []upstreams.Record, env map[string]string) {
	news := w.Categories[0]
	want := upstreams.IDs(truth, wpHas("categories", news))
	if len(want) < 500 {
		t.Fatalf("category %d holds %d posts; the row needs 500 or more", news, len(want))
	}
	wa := withStore(t, startAirlock(t, "wordpress.yaml", w.URL, env))
	prev := wa.tool(t, "preview_selection", map[string]any{"resource": "posts", "filter": map[string]any{"categories": news},
		"action": map[string]any{"type": "add_tag", "params": map[string]any{"tag": w.Tags[5]}}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if members := data["counts"].(map[string]any)["members"]; members != float64(len(want)) {
		t.Fatalf("preview: %v members; MariaDB holds %d posts in category %d", members, len(want), news)
	}
	manifest := data["manifest"].(map[string]any)
	var got []string
	collect := func(items any) {
		list, _ := items.([]any)
		for _, it := range list {
			got = append(got, fmt.Sprint(it.(map[string]any)["id"]))
		}
	}
	collect(manifest["items"])
	cursor, _ := manifest["next_cursor"].(string)
	for pages := 1; cursor != ""; pages++ {
		if pages > 200 {
			t.Fatalf("the manifest did not end within %d pages", pages)
		}
		res := wa.tool(t, "get_selection", map[string]any{"selection_id": data["selection_id"], "cursor": cursor})
		collect(res["data"].(map[string]any)["items"])
		cursor = ""
		if cont, _ := res["continuation"].(map[string]any); cont["kind"] == envelope.ContinueNextCursor {
			cursor, _ = cont["cursor"].(string)
		} else if res["complete"] != true {
			t.Errorf("the manifest's last page: complete %v, continuation %v", res["complete"], cont)
		}
	}
	sorted := slices.Sorted(slices.Values(got))
	if len(slices.Compact(slices.Clone(sorted))) != len(got) {
		t.Errorf("the manifest delivered %d records, some more than once", len(got))
	}
	if !slices.Equal(slices.Compact(sorted), want) {
		missing, extra := diff(want, slices.Compact(sorted))
		t.Errorf("the manifest holds %d posts; MariaDB %d (missing %v, extra %v)", len(got), len(want), head(missing), head(extra))
	}
	t.Logf("manifest: %d members delivered once each", len(got))
}

// checkWordPressAddTag adds a tag to the posts of the rare tag that lack
// it: each keeps every tag it had and gains the new one (WordPress
// replaces the list it is sent, so the whole list must be sent), nothing
// else changes, and the compensation puts every list back exactly.
func checkWordPressAddTag(t *testing.T, w *upstreams.WordPress, env map[string]string, action string) {
	rare, added := w.Tags[9], w.Tags[11]
	before := map[string]upstreams.Record{}
	var targets []string
	for _, p := range w.Posts(t) {
		before[p.ID()] = p
		if wpHas("tags", rare)(p) && !wpHas("tags", added)(p) {
			targets = append(targets, p.ID())
		}
	}
	if len(targets) < 10 {
		t.Fatalf("%d posts have tag %d without tag %d; the row needs 10 or more", len(targets), rare, added)
	}
	wa := withStore(t, startAirlock(t, "wordpress.yaml", w.URL, env))
	w.SetFaults(upstreams.WordPressFaults{})
	prev := wa.tool(t, "preview_selection", map[string]any{"resource": "posts", "filter": map[string]any{"tags": rare},
		"exclude": []any{map[string]any{"field": "tags", "op": "contains", "value": added, "reason": "already tagged"}},
		"action":  map[string]any{"type": action, "params": map[string]any{"tag": added}}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true || data["counts"].(map[string]any)["members"] != float64(len(targets)) {
		t.Fatalf("preview: committable %v, counts %v; want %d members", data["committable"], data["counts"], len(targets))
	}
	op := commitAndWait(t, wa, data)

	tags := func(r upstreams.Record) []float64 { return slices.Sorted(slices.Values(floats(r["tags"]))) }
	after := w.Posts(t)
	for _, p := range after {
		b := before[p.ID()]
		want := tags(b)
		if slices.Contains(targets, p.ID()) {
			want = slices.Sorted(slices.Values(append(want, float64(added))))
		}
		if got := tags(p); !slices.Equal(got, want) {
			t.Errorf("post %s: tags %v after the commit; it had %v, want %v", p.ID(), got, tags(b), want)
		}
		if got, had := floats(p["categories"]), floats(b["categories"]); !slices.Equal(got, had) {
			t.Errorf("post %s: categories %v after the commit; it had %v", p.ID(), got, had)
		}
	}

	comp := wa.tool(t, "preview_selection", map[string]any{"compensate": op, "deadline_ms": deadlineMS})
	cdata := comp["data"].(map[string]any)
	if cdata["counts"].(map[string]any)["members"] != float64(len(targets)) {
		t.Fatalf("compensation preview: counts %v; want %d members", cdata["counts"], len(targets))
	}
	commitAndWait(t, wa, cdata)
	for _, p := range w.Posts(t) {
		if got, had := tags(p), tags(before[p.ID()]); !slices.Equal(got, had) {
			t.Errorf("post %s: tags %v after the compensation; it had %v", p.ID(), got, had)
		}
	}
	t.Logf("tag %d added to %d posts and taken back", added, len(targets))
}

// checkWordPressShrinkingTotal deletes posts once the first page of a
// counting scan is served (60 of that page's, 60 further on): WordPress
// then counts 120 fewer and serves one page fewer. The scan is partial
// with INCONSISTENT_SNAPSHOT and a restart, never a rejected request for
// the page that no longer exists; the restart is complete and exact.
func checkWordPressShrinkingTotal(t *testing.T, w *upstreams.WordPress, al *airlock) {
	all := w.PostIDs(t, upstreams.StatusIn(upstreams.WordPressStatuses...))
	var victims []int
	for _, s := range append(slices.Clone(all[20:80]), all[1500:1560]...) {
		id, _ := strconv.Atoi(s)
		victims = append(victims, id)
	}
	w.SetFaults(upstreams.WordPressFaults{DeleteAfterPage: 1, DeletePosts: victims})
	defer w.SetFaults(upstreams.WordPressFaults{})
	args := map[string]any{"resource": "posts", "max_items": 0, "group_by": []string{"status"}, "deadline_ms": deadlineMS}
	ans := al.search(t, args)
	st := w.ProxyStats()
	t.Logf("%s; pages asked %v, %d past the end, %d posts deleted after page 1", ans, st.ListPages, st.PastTheEnd, st.Deleted)
	if st.Deleted != len(victims) || len(st.Errors) != 0 {
		t.Fatalf("the proxy deleted %d posts (errors %v); want %d", st.Deleted, st.Errors, len(victims))
	}
	if ans.Problem != nil && ans.Problem.Code == "UPSTREAM_REJECTED_REQUEST" || hasCode(ans, "UPSTREAM_REJECTED_REQUEST") {
		t.Errorf("the shrunk list: %s; a page that vanished during the scan is no rejected request", ans)
	}
	if ans.Complete || !hasCode(ans, string(envelope.InconsistentSnapshot)) || ans.Continuation.Kind != envelope.ContinueRestart {
		t.Errorf("the shrunk list: %s; want partial with INCONSISTENT_SNAPSHOT and a restart", ans)
	}
	if ans.Data.TotalMatched > len(all) {
		t.Errorf("the shrunk list counted %d posts, more than the %d there ever were", ans.Data.TotalMatched, len(all))
	}

	w.SetFaults(upstreams.WordPressFaults{})
	restart := al.search(t, args)
	now := len(all) - len(victims)
	checkClaim(t, "restart", restart, now)
	if !restart.Complete {
		t.Errorf("the restart: %s; want complete with MariaDB's %d", restart, now)
	}
}
