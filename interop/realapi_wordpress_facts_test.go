package interop

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// The facts of WordPress 6.1 (Debian's package, under php -S) that
// testdata/wordpress.yaml relies on, pinned by calling its REST API
// directly and reading MariaDB, so that a change of WordPress fails here
// first.

// wpFactsPosts is the size of the facts' own site: three pages of 100 and
// a short one.
const wpFactsPosts = 350

// TestWordPressFacts_TheSitePagesFiltersAndWritesAsTheConfigurationAssumes
// starts its own site: its later subtests change posts.
func TestWordPressFacts_TheSitePagesFiltersAndWritesAsTheConfigurationAssumes(t *testing.T) {
	w := upstreams.StartWordPressWith(t, wpFactsPosts)
	t.Run("seeded_site_has_every_status_and_terms_with_hard_names", func(t *testing.T) { checkWordPressSeed(t, w) })
	t.Run("pages_and_totals", func(t *testing.T) { checkWordPressPageFacts(t, w) })
	t.Run("statuses_and_visibility", func(t *testing.T) { checkWordPressStatusFacts(t, w) })
	t.Run("term_filters", func(t *testing.T) { checkWordPressTermFacts(t, w) })
	t.Run("titles", func(t *testing.T) { checkWordPressTitleFacts(t, w) })
	t.Run("post_tags_replaces_the_list", func(t *testing.T) { checkWordPressTagWrite(t, w) })
	t.Run("deleted_and_trashed_posts_leave_the_total", func(t *testing.T) { checkWordPressDeleteFacts(t, w) })
	t.Run("proxy_deletes_between_pages", func(t *testing.T) { checkWordPressProxy(t, w) })
}

// wpList reads one posts page directly and decodes it.
func wpList(t *testing.T, r upstreams.Response) []upstreams.Record {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, clip(r.Body))
	}
	var page []upstreams.Record
	r.JSON(t, &page)
	return page
}

// wpHeaderInt is a numeric header, -1 when absent or unreadable.
func wpHeaderInt(r upstreams.Response, name string) int {
	n, err := strconv.Atoi(r.Header.Get(name))
	if err != nil {
		return -1
	}
	return n
}

// wpWalk reads every page of a posts query as the administrator (or
// anonymously), asking exactly X-WP-TotalPages pages, and returns the ids
// in the order served.
func wpWalk(t *testing.T, w *upstreams.WordPress, admin bool, query string) (ids []string, total, pages int) {
	t.Helper()
	get := w.Anonymous
	if admin {
		get = w.Admin
	}
	for page := 1; ; page++ {
		r := get(t, http.MethodGet, fmt.Sprintf("/wp-json/wp/v2/posts?%s&per_page=100&page=%d&_fields=id", query, page), nil)
		for _, p := range wpList(t, r) {
			ids = append(ids, p.ID())
		}
		total, pages = wpHeaderInt(r, "X-WP-Total"), wpHeaderInt(r, "X-WP-TotalPages")
		if page >= pages {
			return ids, total, pages
		}
	}
}

func sortedIDs(ids []string) []string { return slices.Sorted(slices.Values(ids)) }

// checkWordPressSeed pins what the rows need of the seed: every status,
// several hundred drafts on the large site, posts with several categories
// and tags, posts without a given tag, and at least three authors.
func checkWordPressSeed(t *testing.T, w *upstreams.WordPress) {
	posts := w.Posts(t)
	statuses, authors := map[string]int{}, map[string]int{}
	multiCat, multiTag, noTag := 0, 0, 0
	for _, p := range posts {
		statuses[p["status"].(string)]++
		authors[fmt.Sprint(p["author"])]++
		if len(p["categories"].([]any)) > 1 {
			multiCat++
		}
		switch n := len(p["tags"].([]any)); {
		case n > 1:
			multiTag++
		case n == 0:
			noTag++
		}
	}
	t.Logf("%d posts: by status %v, by author %v; %d with several categories, %d with several tags, %d untagged", len(posts), statuses, authors, multiCat, multiTag, noTag)
	for _, s := range upstreams.WordPressStatuses {
		if statuses[s] == 0 {
			t.Errorf("no post is %s", s)
		}
	}
	if len(authors) < 3 || multiCat == 0 || multiTag == 0 || noTag == 0 || len(statuses) != len(upstreams.WordPressStatuses) {
		t.Errorf("want 3+ authors, posts with several categories, with several tags and with none, and only the seeded statuses")
	}
	if len(w.Categories) != len(upstreams.WordPressCategories) || len(w.Tags) != len(upstreams.WordPressTags) {
		t.Fatalf("term ids: %d categories, %d tags", len(w.Categories), len(w.Tags))
	}
	r := w.Anonymous(t, http.MethodGet, "/wp-json/wp/v2/categories?per_page=100&_fields=id,name", nil)
	names := map[string]bool{}
	for _, c := range wpList(t, r) {
		names[fmt.Sprint(c["name"])] = true
	}
	// WordPress stores names HTML-escaped (& as &amp;), as its admin
	// screens do.
	for _, want := range []string{"Releases, notes &amp; fixes", "Café culture", "中文资讯", "Emoji 🎉"} {
		if !names[want] {
			t.Errorf("category %q is not served; the API names %v", want, names)
		}
	}
}

// checkWordPressPageFacts pins the page dialect: totals on every page, the
// maximum page size, the order by id, and the 400 past the last page.
func checkWordPressPageFacts(t *testing.T, w *upstreams.WordPress) {
	all := w.PostIDs(t, "")
	r := w.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts?status=any&per_page=100&orderby=id&order=asc", nil)
	page := wpList(t, r)
	pages := (len(all) + 99) / 100
	if len(page) != 100 || wpHeaderInt(r, "X-WP-Total") != len(all) || wpHeaderInt(r, "X-WP-TotalPages") != pages {
		t.Errorf("page 1: %d posts, X-WP-Total %q, X-WP-TotalPages %q; want 100, %d and %d",
			len(page), r.Header.Get("X-WP-Total"), r.Header.Get("X-WP-TotalPages"), len(all), pages)
	}
	ids, _, _ := wpWalk(t, w, true, "status=any&orderby=id&order=asc")
	if !slices.IsSortedFunc(ids, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y }) {
		t.Errorf("orderby=id&order=asc did not serve ids in ascending order")
	}
	if got := sortedIDs(ids); !slices.Equal(got, all) {
		missing, extra := diff(all, got)
		t.Errorf("walking %d pages: %d ids; want %d (missing %v, extra %v)", pages, len(got), len(all), head(missing), head(extra))
	}

	r = w.Admin(t, http.MethodGet, fmt.Sprintf("/wp-json/wp/v2/posts?status=any&per_page=100&page=%d", pages+1), nil)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"code":"rest_post_invalid_page_number"`) {
		t.Errorf("page %d, past the last: status %d %s; want 400 rest_post_invalid_page_number", pages+1, r.Status, clip(r.Body))
	}
	if r.Header.Get("X-WP-Total") != "" || r.Header.Get("X-WP-TotalPages") != "" {
		t.Errorf("the 400 past the last page carries X-WP-Total %q, X-WP-TotalPages %q; want neither", r.Header.Get("X-WP-Total"), r.Header.Get("X-WP-TotalPages"))
	}
	r = w.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts?status=any&per_page=101", nil)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "rest_invalid_param") {
		t.Errorf("per_page=101: status %d %s; want 400 rest_invalid_param", r.Status, clip(r.Body))
	}
	// An empty result is one page: page 1 answers [] with zero totals.
	r = w.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts?status=any&search=zzqxjv-nowhere&per_page=100", nil)
	if got := wpList(t, r); len(got) != 0 || r.Header.Get("X-WP-Total") != "0" || r.Header.Get("X-WP-TotalPages") != "0" {
		t.Errorf("a query nothing matches: %d posts, X-WP-Total %q, X-WP-TotalPages %q; want [] with 0 and 0", len(got), r.Header.Get("X-WP-Total"), r.Header.Get("X-WP-TotalPages"))
	}
}

// checkWordPressStatusFacts pins who sees which status: status=any is the
// five seeded statuses to the administrator, no status is publish to
// everyone, and anonymous readers are refused any other status; a wrong
// application password reads as no credential at all.
func checkWordPressStatusFacts(t *testing.T, w *upstreams.WordPress) {
	published := w.PostIDs(t, upstreams.StatusIn("publish"))
	drafts := w.PostIDs(t, upstreams.StatusIn("draft"))
	total := func(r upstreams.Response) int {
		t.Helper()
		wpList(t, r)
		return wpHeaderInt(r, "X-WP-Total")
	}
	if got := total(w.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts?status=any", nil)); got != len(w.PostIDs(t, upstreams.StatusIn(upstreams.WordPressStatuses...))) {
		t.Errorf("status=any as the administrator: X-WP-Total %d; want every seeded status", got)
	}
	if got := total(w.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts", nil)); got != len(published) {
		t.Errorf("no status as the administrator: X-WP-Total %d; want the %d published posts only", got, len(published))
	}
	if got := total(w.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts?status=draft,pending", nil)); got != len(w.PostIDs(t, upstreams.StatusIn("draft", "pending"))) {
		t.Errorf("status=draft,pending as the administrator: X-WP-Total %d; want any of the two", got)
	}
	if got := total(w.Anonymous(t, http.MethodGet, "/wp-json/wp/v2/posts", nil)); got != len(published) {
		t.Errorf("anonymous: X-WP-Total %d; want the %d published posts", got, len(published))
	}
	if got := total(w.Anonymous(t, http.MethodGet, "/wp-json/wp/v2/posts?status=publish", nil)); got != len(published) {
		t.Errorf("anonymous, status=publish: X-WP-Total %d; want %d", got, len(published))
	}
	for _, status := range []string{"draft", "any", "publish,draft"} {
		r := w.Anonymous(t, http.MethodGet, "/wp-json/wp/v2/posts?status="+status, nil)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "rest_forbidden_status") {
			t.Errorf("anonymous, status=%s: status %d %s; want 400 rest_invalid_param (rest_forbidden_status)", status, r.Status, clip(r.Body))
		}
	}
	if total(w.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts?status=draft", nil)) != len(drafts) || len(drafts) == 0 {
		t.Errorf("status=draft as the administrator: want the %d drafts", len(drafts))
	}

	// A wrong application password is not refused on a read: WordPress
	// checks it only after deciding the request needs no login, so the
	// list answers 200 as to an anonymous reader. Only a route that needs
	// a user (users/me) or a status other than publish says 401 or 400.
	wrong := *w
	wrong.AppPassword = "wrong" + w.AppPassword[5:]
	if got := total(wrong.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts", nil)); got != len(published) {
		t.Errorf("a wrong application password: X-WP-Total %d; want the anonymous %d", got, len(published))
	}
	if r := wrong.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts?status=any", nil); r.Status != http.StatusBadRequest {
		t.Errorf("a wrong application password, status=any: status %d %s; want the anonymous 400", r.Status, clip(r.Body))
	}
	if r := wrong.Admin(t, http.MethodGet, "/wp-json/wp/v2/users/me", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("a wrong application password, users/me: status %d; want 401", r.Status)
	}
	if r := w.Admin(t, http.MethodGet, "/wp-json/wp/v2/users/me?_fields=id", nil); r.Status != http.StatusOK {
		t.Errorf("the application password, users/me: status %d %s; want 200", r.Status, clip(r.Body))
	}
}

// checkWordPressTermFacts pins the term filters: a comma list is any of
// (all of only with tags[operator]=AND), a repeated parameter keeps only
// the last (PHP's reading of a query), two taxonomies are both required,
// and term lists are served in name order.
func checkWordPressTermFacts(t *testing.T, w *upstreams.WordPress) {
	c0, c1 := w.Categories[0], w.Categories[1]
	t0, t1 := w.Tags[0], w.Tags[1]
	count := func(query string) int {
		t.Helper()
		r := w.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts?status=any&per_page=1&"+query, nil)
		wpList(t, r)
		return wpHeaderInt(r, "X-WP-Total")
	}
	cases := []struct {
		name, query, where string
	}{
		{"one_category", fmt.Sprintf("categories=%d", c0), upstreams.HasTerm("category", c0)},
		{"categories_comma_list_is_any_of", fmt.Sprintf("categories=%d,%d", c0, c1),
			upstreams.HasTerm("category", c0) + " OR " + upstreams.HasTerm("category", c1)},
		{"categories_repeated_keeps_the_last", fmt.Sprintf("categories=%d&categories=%d", c0, c1), upstreams.HasTerm("category", c1)},
		{"tags_comma_list_is_any_of", fmt.Sprintf("tags=%d,%d", t0, t1),
			upstreams.HasTerm("post_tag", t0) + " OR " + upstreams.HasTerm("post_tag", t1)},
		{"category_and_tag_are_both_required", fmt.Sprintf("categories=%d&tags=%d", c0, t0),
			upstreams.HasTerm("category", c0) + " AND " + upstreams.HasTerm("post_tag", t0)},
		// tax_relation is between taxonomies: a list stays any of.
		{"tax_relation_and_leaves_a_list_any_of", fmt.Sprintf("tags=%d,%d&tax_relation=AND", t0, t1),
			upstreams.HasTerm("post_tag", t0) + " OR " + upstreams.HasTerm("post_tag", t1)},
		{"operator_and_makes_a_list_all_of", fmt.Sprintf("tags[terms]=%d,%d&tags[operator]=AND", t0, t1),
			upstreams.HasTerm("post_tag", t0) + " AND " + upstreams.HasTerm("post_tag", t1)},
		{"author", fmt.Sprintf("author=%d", w.Users[1]), fmt.Sprintf("p.post_author = %d", w.Users[1])},
		{"authors_comma_list", fmt.Sprintf("author=%d,%d", w.Users[1], w.Users[2]), fmt.Sprintf("p.post_author IN (%d, %d)", w.Users[1], w.Users[2])},
	}
	for _, c := range cases {
		want := len(w.PostIDs(t, c.where))
		if got := count(c.query); got != want || want == 0 {
			t.Errorf("%s (?%s): X-WP-Total %d; MariaDB holds %d", c.name, c.query, got, want)
		}
	}
	r := w.Admin(t, http.MethodGet, fmt.Sprintf("/wp-json/wp/v2/posts?status=any&categories=%d,x", c0), nil)
	if r.Status != http.StatusBadRequest {
		t.Errorf("categories=%d,x: status %d; want 400 (a list of integers)", c0, r.Status)
	}

	// Term lists: the same set as MariaDB's, in the order of the terms'
	// names, which is not the order of their ids.
	byID := map[string]upstreams.Record{}
	for _, p := range w.Posts(t) {
		byID[p.ID()] = p
	}
	unsorted := 0
	for page := 1; page <= 2; page++ {
		r := w.Admin(t, http.MethodGet, fmt.Sprintf("/wp-json/wp/v2/posts?status=any&per_page=100&page=%d&_fields=id,categories,tags", page), nil)
		for _, p := range wpList(t, r) {
			truth := byID[p.ID()]
			for _, k := range []string{"categories", "tags"} {
				got := floats(p[k])
				if !slices.IsSorted(got) {
					unsorted++
				}
				if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, floats(truth[k])) {
					t.Errorf("post %s: %s %v; MariaDB holds %v", p.ID(), k, got, truth[k])
				}
			}
		}
	}
	if unsorted == 0 {
		t.Errorf("every term list came in id order: the name order this pins was not seen")
	}
}

func floats(v any) []float64 {
	list, _ := v.([]any)
	out := make([]float64, 0, len(list))
	for _, x := range list {
		f, _ := x.(float64)
		out = append(out, f)
	}
	return out
}

// checkWordPressTitleFacts pins titles: title.rendered is HTML with curly
// quote entities; with context=edit, title.raw is the stored title.
func checkWordPressTitleFacts(t *testing.T, w *upstreams.WordPress) {
	var quoted upstreams.Record
	for _, p := range w.Posts(t) {
		if title := p["title"].(string); strings.Contains(title, `"`) && strings.Contains(title, ",") {
			quoted = p
			break
		}
	}
	if quoted == nil {
		t.Fatal("no seeded title holds both a quote and a comma")
	}
	var got struct {
		Title struct {
			Raw      string `json:"raw"`
			Rendered string `json:"rendered"`
		} `json:"title"`
	}
	w.Admin(t, http.MethodGet, fmt.Sprintf("/wp-json/wp/v2/posts/%s?context=edit&_fields=title", quoted.ID()), nil).JSON(t, &got)
	raw := quoted["title"].(string)
	if got.Title.Raw != raw || got.Title.Rendered == raw || !strings.Contains(got.Title.Rendered, "&#822") {
		t.Errorf("post %s: raw %q, rendered %q; want raw %q and a rendered title with curly quote entities", quoted.ID(), got.Title.Raw, got.Title.Rendered, raw)
	}
}

// checkWordPressTagWrite pins the write add_tag relies on: POST {"tags"}
// replaces the whole list, answers the post with its new tags, and needs
// the credential.
func checkWordPressTagWrite(t *testing.T, w *upstreams.WordPress) {
	var post upstreams.Record
	for _, p := range w.Posts(t) {
		if len(p["tags"].([]any)) >= 2 {
			post = p
			break
		}
	}
	id, _ := strconv.Atoi(post.ID())
	before := w.PostTerms(t, id, "post_tag")
	newTag := 0
	for _, tag := range w.Tags {
		if !slices.Contains(before, tag) {
			newTag = tag
			break
		}
	}
	path := fmt.Sprintf("/wp-json/wp/v2/posts/%d", id)
	if r := w.Anonymous(t, http.MethodPost, path, map[string]any{"tags": []int{newTag}}); r.Status != http.StatusUnauthorized {
		t.Errorf("POST tags anonymously: status %d; want 401", r.Status)
	}
	r := w.Admin(t, http.MethodPost, path, map[string]any{"tags": []int{newTag}})
	var answered struct {
		ID   int   `json:"id"`
		Tags []int `json:"tags"`
	}
	r.JSON(t, &answered)
	if after := w.PostTerms(t, id, "post_tag"); r.Status != http.StatusOK || !slices.Equal(after, []int{newTag}) || !slices.Equal(answered.Tags, []int{newTag}) {
		t.Errorf("POST {\"tags\": [%d]} to post %d tagged %v: status %d, answered %v, MariaDB %v; want the list replaced by [%d]",
			newTag, id, before, r.Status, answered.Tags, after, newTag)
	}
	// Sending the whole list puts it back (the compensation's write).
	r = w.Admin(t, http.MethodPost, path, map[string]any{"tags": before})
	if after := w.PostTerms(t, id, "post_tag"); r.Status != http.StatusOK || !slices.Equal(after, before) {
		t.Errorf("POST the old list back: status %d, MariaDB %v; want %v", r.Status, after, before)
	}
	if cats := w.PostTerms(t, id, "category"); len(cats) == 0 {
		t.Errorf("post %d lost its categories to a tags-only POST", id)
	}
}

// checkWordPressDeleteFacts pins that X-WP-Total is counted per request: a
// post deleted behind WordPress's back, or trashed through the API,
// leaves the next answer's total at once.
func checkWordPressDeleteFacts(t *testing.T, w *upstreams.WordPress) {
	totalAny := func() int {
		r := w.Admin(t, http.MethodGet, "/wp-json/wp/v2/posts?status=any&per_page=1", nil)
		wpList(t, r)
		return wpHeaderInt(r, "X-WP-Total")
	}
	all := w.PostIDs(t, "")
	before := totalAny()
	last, _ := strconv.Atoi(all[len(all)-1])
	w.Delete(t, last)
	if got := totalAny(); got != before-1 {
		t.Errorf("after deleting post %d with SQL: X-WP-Total %d; want %d", last, got, before-1)
	}
	if r := w.Admin(t, http.MethodGet, fmt.Sprintf("/wp-json/wp/v2/posts/%d", last), nil); r.Status != http.StatusNotFound {
		t.Errorf("GET the deleted post: status %d; want 404", r.Status)
	}
	first, _ := strconv.Atoi(all[0])
	r := w.Trash(t, first)
	var trashed struct {
		Status string `json:"status"`
	}
	r.JSON(t, &trashed)
	if r.Status != http.StatusOK || trashed.Status != "trash" {
		t.Errorf("DELETE post %d (no force): status %d, post status %q; want 200 and trash", first, r.Status, trashed.Status)
	}
	if got := totalAny(); got != before-2 {
		t.Errorf("after trashing post %d: status=any X-WP-Total %d; want %d (trash is not any)", first, got, before-2)
	}
	if ids := w.PostIDs(t, upstreams.StatusIn("trash")); !slices.Equal(ids, []string{strconv.Itoa(first)}) {
		t.Errorf("MariaDB's trash: %v; want post %d", ids, first)
	}
}

// checkWordPressProxy pins the knob the shrinking-total row uses: the page
// it names is served as it was, the posts are gone before the next page,
// and the proxy counts pages and the 400 past the end.
func checkWordPressProxy(t *testing.T, w *upstreams.WordPress) {
	all := w.PostIDs(t, upstreams.StatusIn(upstreams.WordPressStatuses...))
	victims := []int{}
	for _, s := range all[10:15] {
		id, _ := strconv.Atoi(s)
		victims = append(victims, id)
	}
	w.SetFaults(upstreams.WordPressFaults{DeleteAfterPage: 1, DeletePosts: victims})
	defer w.SetFaults(upstreams.WordPressFaults{})
	get := func(page int) upstreams.Response {
		t.Helper()
		return w.AdminViaProxy(t, http.MethodGet, fmt.Sprintf("/wp-json/wp/v2/posts?status=any&orderby=id&order=asc&per_page=100&page=%d&_fields=id", page), nil)
	}
	p1 := get(1)
	if got := wpList(t, p1); len(got) != 100 || got[10].ID() != all[10] || wpHeaderInt(p1, "X-WP-Total") != len(all) {
		t.Errorf("page 1 through the knob: %d posts, X-WP-Total %q; want the page as it was, with %s and total %d", len(got), p1.Header.Get("X-WP-Total"), all[10], len(all))
	}
	p2 := get(2)
	if got := wpList(t, p2); wpHeaderInt(p2, "X-WP-Total") != len(all)-len(victims) || len(got) == 0 || got[0].ID() != all[100+len(victims)] {
		t.Errorf("page 2 after the knob: X-WP-Total %q, %d posts; want %d, starting at %s", p2.Header.Get("X-WP-Total"), len(got), len(all)-len(victims), all[100+len(victims)])
	}
	past := get(10)
	st := w.ProxyStats()
	if past.Status != http.StatusBadRequest || st.PastTheEnd != 1 || !slices.Equal(st.ListPages, []int{1, 2, 10}) || st.Deleted != len(victims) || len(st.Errors) != 0 {
		t.Errorf("proxy stats %+v after pages 1, 2 and 10 (status %d); want pages [1 2 10], one past the end, %d deleted", st, past.Status, len(victims))
	}
}
