package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// The facts of Django REST Framework 3.14 with django-filter 23.1
// (interop/drf) that airlock's configurations for it rely on, pinned by
// calling the server directly, so that a change of DRF fails here first.

// TestDRFFacts_TheServerPagesFiltersAndExpiresAsConfigurationsAssume
// starts its own server: its later subtests change accounts and knobs.
func TestDRFFacts_TheServerPagesFiltersAndExpiresAsConfigurationsAssume(t *testing.T) {
	d := upstreams.StartDRF(t)
	truth := d.Accounts(t)
	t.Run("seeded_truth_has_comma_teams_and_two_kinds_of_no_owner", func(t *testing.T) {
		checkSeededAccounts(t, truth, "owner")
	})
	t.Run("lists", func(t *testing.T) { checkDRFListFacts(t, d, truth) })
	t.Run("filters", func(t *testing.T) { checkDRFFilterFacts(t, d, truth) })
	t.Run("cursor_expiry_knob", func(t *testing.T) { checkDRFCursorExpiry(t, d) })
	t.Run("detail_and_patch", func(t *testing.T) { checkDRFWriteFacts(t, d, truth) })
	t.Run("concurrent_patches_each_bump_the_version", func(t *testing.T) { checkDRFConcurrentPatches(t, d, truth) })
}

// checkSeededAccounts pins the seeded data that the any-of and null cases
// need, and logs its counts.
func checkSeededAccounts(t *testing.T, truth []upstreams.Record, ownerField string) {
	t.Helper()
	teams := map[string]int{}
	nullOwners, emptyOwners := 0, 0
	for _, r := range truth {
		teams[fmt.Sprint(r["team"])]++
		switch r[ownerField] {
		case nil:
			nullOwners++
		case "":
			emptyOwners++
		}
	}
	t.Logf("seeded truth: %d accounts, by team %v, %d NULL owners, %d \"\" owners", len(truth), teams, nullOwners, emptyOwners)
	if len(truth) != upstreams.DefaultAccounts {
		t.Errorf("%d accounts; want %d", len(truth), upstreams.DefaultAccounts)
	}
	if teams[upstreams.CommaTeam] < 200 || nullOwners < 200 || emptyOwners < 200 {
		t.Errorf("want several hundred accounts each in %q, with a NULL owner and with an empty owner: %d, %d, %d",
			upstreams.CommaTeam, teams[upstreams.CommaTeam], nullOwners, emptyOwners)
	}
	for _, team := range upstreams.AccountTeams {
		if teams[team] == 0 {
			t.Errorf("no account in team %q", team)
		}
	}
}

// drfPage is one list page; Count is absent on the cursor route.
type drfPage struct {
	Count    *int               `json:"count"`
	Next     *string            `json:"next"`
	Previous *string            `json:"previous"`
	Results  []upstreams.Record `json:"results"`
}

// drfGet reads one list page, failing on any status but 200.
func drfGet(t *testing.T, d *upstreams.DRF, pathAndQuery string) drfPage {
	t.Helper()
	r := d.Get(t, pathAndQuery)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", pathAndQuery, r.Status, r.Body)
	}
	var p drfPage
	r.JSON(t, &p)
	return p
}

// drfWalk follows next from pathAndQuery to the end and returns every
// record and the pages read. Every next link must be absolute, on the
// server's own origin.
func drfWalk(t *testing.T, d *upstreams.DRF, pathAndQuery string) ([]upstreams.Record, []drfPage) {
	t.Helper()
	var (
		all   []upstreams.Record
		pages []drfPage
	)
	for next := pathAndQuery; ; {
		p := drfGet(t, d, next)
		pages = append(pages, p)
		all = append(all, p.Results...)
		if p.Next == nil {
			return all, pages
		}
		if !strings.HasPrefix(*p.Next, d.URL+"/api/") {
			t.Fatalf("next %q is not an absolute link on %s", *p.Next, d.URL)
		}
		next = strings.TrimPrefix(*p.Next, d.URL)
		if len(pages) > 2*upstreams.DefaultAccounts {
			t.Fatalf("%s: no end after %d pages", pathAndQuery, len(pages))
		}
	}
}

// sameRecords reports the first difference between two record lists.
func sameRecords(got, want []upstreams.Record) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d records; want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			return fmt.Sprintf("record %d is %v; want %v", i, got[i], want[i])
		}
	}
	return ""
}

func recordsWhere(truth []upstreams.Record, f func(upstreams.Record) bool) []upstreams.Record {
	out := []upstreams.Record{}
	for _, r := range truth {
		if f(r) {
			out = append(out, r)
		}
	}
	return out
}

func valueIn(field string, values ...any) func(upstreams.Record) bool {
	return func(r upstreams.Record) bool { v, ok := r[field]; return ok && slices.Contains(values, v) }
}

// checkDRFListFacts pins the three list routes: shapes, next links, ends,
// and the silent cap on the page size.
func checkDRFListFacts(t *testing.T, d *upstreams.DRF, truth []upstreams.Record) {
	t.Run("page_number_route_counts_links_and_ends_without_next", func(t *testing.T) {
		p := drfGet(t, d, "/api/page/accounts/?page=1&page_size=100")
		if p.Count == nil || *p.Count != len(truth) || p.Next == nil || p.Previous != nil || len(p.Results) != 100 {
			t.Errorf("page 1: count %v, next %v, previous %v, %d results; want count %d, a next link, no previous, 100 results",
				orNil(p.Count), orNil(p.Next), orNil(p.Previous), len(p.Results), len(truth))
		}
		if p.Next != nil && *p.Next != d.URL+"/api/page/accounts/?page=2&page_size=100" {
			t.Errorf("page 1's next is %q", *p.Next)
		}
		all, pages := drfWalk(t, d, "/api/page/accounts/?page_size=100")
		if diff := sameRecords(all, truth); diff != "" {
			t.Errorf("walking next from page 1: %s", diff)
		}
		if last := pages[len(pages)-1]; last.Next != nil || len(last.Results) == 0 {
			t.Errorf("the last page: next %v, %d results; want no next on a non-empty page", orNil(last.Next), len(last.Results))
		}
		past := (len(truth)+99)/100 + 1
		r := d.Get(t, fmt.Sprintf("/api/page/accounts/?page=%d&page_size=100", past))
		if r.Status != http.StatusNotFound || !sameJSON(r.Body, `{"detail":"Invalid page."}`) {
			t.Errorf("page %d, past the end: status %d %s; want 404 {\"detail\":\"Invalid page.\"}", past, r.Status, r.Body)
		}
		p = drfGet(t, d, "/api/page/accounts/?page_size=5000")
		if len(p.Results) != 1000 || p.Next == nil || !strings.Contains(*p.Next, "page_size=5000") {
			t.Errorf("page_size=5000: %d results, next %v; want 1000 (capped silently) and a next link that repeats page_size=5000",
				len(p.Results), orNil(p.Next))
		}
		p = drfGet(t, d, "/api/page/accounts/")
		if len(p.Results) != 100 {
			t.Errorf("no page_size: %d results; want the default, 100", len(p.Results))
		}
	})
	t.Run("limit_offset_route_counts_links_and_ends_without_next", func(t *testing.T) {
		p := drfGet(t, d, "/api/offset/accounts/?limit=100")
		if p.Count == nil || *p.Count != len(truth) || p.Next == nil || len(p.Results) != 100 {
			t.Errorf("limit=100: count %v, next %v, %d results; want count %d, a next link, 100 results",
				orNil(p.Count), orNil(p.Next), len(p.Results), len(truth))
		}
		if p.Next != nil && *p.Next != d.URL+"/api/offset/accounts/?limit=100&offset=100" {
			t.Errorf("limit=100's next is %q", *p.Next)
		}
		all, _ := drfWalk(t, d, "/api/offset/accounts/?limit=100")
		if diff := sameRecords(all, truth); diff != "" {
			t.Errorf("walking next from offset 0: %s", diff)
		}
		p = drfGet(t, d, fmt.Sprintf("/api/offset/accounts/?limit=100&offset=%d", len(truth)+10))
		if len(p.Results) != 0 || p.Next != nil || p.Count == nil || *p.Count != len(truth) {
			t.Errorf("offset past the end: %d results, next %v, count %v; want 200 with none, no next and the count", len(p.Results), orNil(p.Next), orNil(p.Count))
		}
		p = drfGet(t, d, "/api/offset/accounts/?limit=5000")
		if len(p.Results) != 1000 || p.Next == nil || !strings.Contains(*p.Next, "limit=1000") {
			t.Errorf("limit=5000: %d results, next %v; want 1000 (capped silently) and a next link with limit=1000", len(p.Results), orNil(p.Next))
		}
	})
	t.Run("cursor_route_has_no_count_and_an_opaque_cursor_in_next", func(t *testing.T) {
		r := d.Get(t, "/api/cursor/accounts/?page_size=100")
		var raw map[string]json.RawMessage
		r.JSON(t, &raw)
		if _, ok := raw["count"]; ok {
			t.Errorf("the cursor route answers a count: %s", clip(r.Body))
		}
		p := drfGet(t, d, "/api/cursor/accounts/?page_size=100")
		if p.Next == nil {
			t.Fatal("the cursor route's first page has no next link")
		}
		next, err := url.Parse(*p.Next)
		if err != nil || next.Query().Get("cursor") == "" || next.Query().Get("page_size") != "100" {
			t.Errorf("next %q: want a cursor parameter and page_size=100", *p.Next)
		}
		all, pages := drfWalk(t, d, "/api/cursor/accounts/?page_size=100")
		if diff := sameRecords(all, truth); diff != "" {
			t.Errorf("walking next from the first page: %s", diff)
		}
		if last := pages[len(pages)-1]; last.Next != nil || len(last.Results) == 0 {
			t.Errorf("the last page: next %v, %d results; want no next on a non-empty page", orNil(last.Next), len(last.Results))
		}
		p = drfGet(t, d, "/api/cursor/accounts/?page_size=5000")
		if len(p.Results) != 1000 {
			t.Errorf("page_size=5000: %d results; want 1000 (capped silently)", len(p.Results))
		}
		r = d.Get(t, "/api/cursor/accounts/?cursor=not-a-cursor")
		if r.Status != http.StatusNotFound || !sameJSON(r.Body, `{"detail":"Invalid cursor"}`) {
			t.Errorf("a malformed cursor: status %d %s; want 404 {\"detail\":\"Invalid cursor\"}", r.Status, r.Body)
		}
	})
}

// checkDRFFilterFacts pins django-filter's reading of every filter, on
// every route.
func checkDRFFilterFacts(t *testing.T, d *upstreams.DRF, truth []upstreams.Record) {
	comma := url.QueryEscape(upstreams.CommaTeam) // R%26D%2C+Labs
	cases := []struct {
		name, query string
		want        []upstreams.Record
	}{
		{"status_exact", "status=disabled", recordsWhere(truth, valueIn("status", "disabled"))},
		{"status_in_comma_list", "status__in=active,archived", recordsWhere(truth, valueIn("status", "active", "archived"))},
		{"team_exact_keeps_its_comma", "team=R%26D%2C%20Labs", recordsWhere(truth, valueIn("team", upstreams.CommaTeam))},
		{"team_exact_plus_for_space", "team=" + comma, recordsWhere(truth, valueIn("team", upstreams.CommaTeam))},
		// The server splits the list on every comma, escaped or not: the
		// comma team becomes "R&D" and " Labs", which no account has.
		{"team_in_splits_a_value_on_its_comma", "team__in=payments,R%26D%2C%20Labs", recordsWhere(truth, valueIn("team", "payments"))},
		{"team_in_of_the_comma_team_alone_is_empty", "team__in=R%26D%2C%20Labs", nil},
		{"team_in_repeated_keeps_only_the_last", "team__in=payments&team__in=platform", recordsWhere(truth, valueIn("team", "platform"))},
		{"owner_isnull_true_is_only_null", "owner__isnull=true", recordsWhere(truth, valueIn("owner", nil))},
		{"owner_isnull_1_is_only_null", "owner__isnull=1", recordsWhere(truth, valueIn("owner", nil))},
		{"owner_isnull_false_includes_empty", "owner__isnull=false", recordsWhere(truth, func(r upstreams.Record) bool { return r["owner"] != nil })},
		{"owner_isnull_unreadable_filters_nothing", "owner__isnull=yes", truth},
		{"owner_empty_filters_nothing", "owner=", truth},
		{"team_in_empty_filters_nothing", "team__in=", truth},
		{"unknown_parameter_filters_nothing", "colour=blue", truth},
		{"owner_exact", "owner=ada%40example.com", recordsWhere(truth, valueIn("owner", "ada@example.com"))},
		{"status_and_team", "status=active&team=support", recordsWhere(truth, func(r upstreams.Record) bool {
			return valueIn("status", "active")(r) && valueIn("team", "support")(r)
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.want == nil {
				c.want = []upstreams.Record{}
			}
			for _, route := range []string{"page", "offset", "cursor"} {
				size := "page_size=1000"
				if route == "offset" {
					size = "limit=1000"
				}
				all, pages := drfWalk(t, d, "/api/"+route+"/accounts/?"+c.query+"&"+size)
				if diff := sameRecords(all, c.want); diff != "" {
					t.Errorf("%s route, ?%s: %s", route, c.query, diff)
				}
				if route != "cursor" && (pages[0].Count == nil || *pages[0].Count != len(c.want)) {
					t.Errorf("%s route, ?%s: count %v; want %d", route, c.query, orNil(pages[0].Count), len(c.want))
				}
			}
		})
	}
}

// checkDRFCursorExpiry pins the fault knob: a cursor issued before the
// knob was turned on is refused with the chosen status, and a new scan
// works.
func checkDRFCursorExpiry(t *testing.T, d *upstreams.DRF) {
	defer d.SetFaults(t, upstreams.DRFFaults{})
	first := drfGet(t, d, "/api/cursor/accounts/?page_size=100")
	old := strings.TrimPrefix(*first.Next, d.URL)
	drfGet(t, d, old) // works before the knob

	d.SetFaults(t, upstreams.DRFFaults{ExpireCursors: true})
	if r := d.Get(t, old); r.Status != http.StatusGone || !sameJSON(r.Body, `{"detail":"cursor expired"}`) {
		t.Errorf("a cursor issued before the knob: status %d %s; want 410 {\"detail\":\"cursor expired\"}", r.Status, r.Body)
	}
	fresh := drfGet(t, d, "/api/cursor/accounts/?page_size=100")
	if p := drfGet(t, d, strings.TrimPrefix(*fresh.Next, d.URL)); len(p.Results) != 100 {
		t.Errorf("a cursor issued after the knob: %d results; want the next page", len(p.Results))
	}
	if p := drfGet(t, d, "/api/page/accounts/?page=2&page_size=100"); len(p.Results) != 100 {
		t.Errorf("the page route under the knob: %d results; want its page", len(p.Results))
	}

	d.SetFaults(t, upstreams.DRFFaults{ExpireCursors: true, ExpiredStatus: http.StatusBadRequest})
	freshNext := strings.TrimPrefix(*fresh.Next, d.URL)
	if r := d.Get(t, freshNext); r.Status != http.StatusBadRequest || !sameJSON(r.Body, `{"detail":"Cursor expired"}`) {
		t.Errorf("turned on again, 400 mode: status %d %s; want 400 {\"detail\":\"Cursor expired\"}", r.Status, r.Body)
	}

	d.SetFaults(t, upstreams.DRFFaults{ExpireCursors: true, MaxAge: 1})
	newest := drfGet(t, d, "/api/cursor/accounts/?page_size=100")
	if r := d.Get(t, strings.TrimPrefix(*newest.Next, d.URL)); r.Status != http.StatusGone {
		t.Errorf("a cursor older than a max age of 1ns: status %d %s; want 410", r.Status, r.Body)
	}

	d.SetFaults(t, upstreams.DRFFaults{})
	if r := d.Get(t, old); r.Status != http.StatusOK {
		t.Errorf("the first cursor with the knob off: status %d %s; want 200", r.Status, r.Body)
	}
}

// checkDRFWriteFacts pins the detail routes: GET, PATCH bumping version,
// 404 for a missing id, 400 naming every bad field. It changes one account
// and puts it back (a compensation), as a commit would.
func checkDRFWriteFacts(t *testing.T, d *upstreams.DRF, truth []upstreams.Record) {
	before := truth[6]
	id := int(before["id"].(float64))
	var got upstreams.Record
	r := d.Get(t, fmt.Sprintf("/api/cursor/accounts/%d/", id))
	r.JSON(t, &got)
	if r.Status != http.StatusOK || !reflect.DeepEqual(got, before) {
		t.Errorf("GET account %d: status %d, %v; want %v", id, r.Status, got, before)
	}

	status := "archived"
	if before["status"] == status {
		status = "active"
	}
	r = d.Patch(t, id, map[string]any{"status": status, "owner": nil})
	r.JSON(t, &got)
	after, _ := d.Account(t, id)
	if r.Status != http.StatusOK || got["status"] != status || got["owner"] != nil || got["version"] != before["version"].(float64)+1 {
		t.Errorf("PATCH status %q, owner null: status %d, %v; want 200, the new values and version %v+1", status, r.Status, got, before["version"])
	}
	if !reflect.DeepEqual(after, got) || after["updated_at"] == before["updated_at"] {
		t.Errorf("after the PATCH the database holds %v; the answer was %v (want the same, with a new updated_at)", after, got)
	}

	r = d.Patch(t, id, map[string]any{"status": "bogus", "team": "", "owner": before["owner"]})
	var problems map[string][]string
	r.JSON(t, &problems)
	if r.Status != http.StatusBadRequest || len(problems["status"]) != 1 || len(problems["team"]) != 1 || len(problems) != 2 {
		t.Errorf("PATCH a bad status and an empty team: status %d %s; want 400 naming both fields", r.Status, r.Body)
	}
	if now, _ := d.Account(t, id); !reflect.DeepEqual(now, after) {
		t.Errorf("a refused PATCH changed the account: %v, was %v", now, after)
	}

	missing := len(truth) + 1000
	r = d.Patch(t, missing, map[string]any{"status": "active"})
	if r.Status != http.StatusNotFound || !sameJSON(r.Body, `{"detail":"Not found."}`) {
		t.Errorf("PATCH a missing id: status %d %s; want 404 {\"detail\":\"Not found.\"}", r.Status, r.Body)
	}
	if _, ok := d.Account(t, missing); ok {
		t.Errorf("PATCH a missing id created it")
	}

	// The compensation: the before-values back, and the version moves on.
	r = d.Patch(t, id, map[string]any{"status": before["status"], "owner": before["owner"]})
	r.JSON(t, &got)
	restored, _ := d.Account(t, id)
	if r.Status != http.StatusOK || restored["status"] != before["status"] || restored["owner"] != before["owner"] || restored["version"] != before["version"].(float64)+2 {
		t.Errorf("PATCH the before-values back: status %d, database %v; want the values of %v at version %v+2", r.Status, restored, before, before["version"])
	}
}

// checkDRFConcurrentPatches: PATCHes of one account sent at once each
// answer 200 and each count, as a commit's workers need.
func checkDRFConcurrentPatches(t *testing.T, d *upstreams.DRF, truth []upstreams.Record) {
	const n = 16
	id := int(truth[9]["id"].(float64))
	before, _ := d.Account(t, id)
	answers := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Not d.Patch: a goroutine must not end the test.
			body := strings.NewReader(fmt.Sprintf(`{"owner": "owner-%d@example.com"}`, i))
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPatch, fmt.Sprintf("%s/api/page/accounts/%d/", d.URL, id), body)
			if err != nil {
				answers <- err.Error()
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- err.Error()
				return
			}
			resp.Body.Close()
			answers <- resp.Status
		}()
	}
	wg.Wait()
	close(answers)
	for a := range answers {
		if a != "200 OK" {
			t.Errorf("a concurrent PATCH answered %s", a)
		}
	}
	if after, _ := d.Account(t, id); after["version"] != before["version"].(float64)+n {
		t.Errorf("after %d concurrent PATCHes: version %v; want %v+%d", n, after["version"], before["version"], n)
	}
}

func orNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// jsonEqual reports whether the body is the JSON want, whitespace and key
// order aside.
func sameJSON(body []byte, want string) bool {
	var a, b any
	return json.Unmarshal(body, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && reflect.DeepEqual(a, b)
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
