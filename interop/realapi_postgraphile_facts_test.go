package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// The facts of PostGraphile 4.14.1 over PostgreSQL, and of the harness's
// fault proxy in front of it, that airlock's GraphQL configurations rely
// on, pinned by calling the server directly, so that a change of
// PostGraphile fails here first.

// TestPostGraphileFacts_TheServerPagesFiltersAndFailsAsConfigurationsAssume
// starts its own server: its later subtests change accounts and knobs.
func TestPostGraphileFacts_TheServerPagesFiltersAndFailsAsConfigurationsAssume(t *testing.T) {
	pg := upstreams.StartPostGraphile(t)
	truth := pg.Accounts(t)
	t.Run("seeded_truth_has_comma_teams_and_two_kinds_of_no_owner", func(t *testing.T) {
		checkSeededAccounts(t, truth, "owner")
	})
	t.Run("connections", func(t *testing.T) { checkPostGraphileConnectionFacts(t, pg, truth) })
	t.Run("conditions", func(t *testing.T) { checkPostGraphileConditionFacts(t, pg, truth) })
	t.Run("errors", func(t *testing.T) { checkPostGraphileErrorFacts(t, pg) })
	t.Run("fault_proxy", func(t *testing.T) { checkGraphQLProxyFaults(t, pg, truth) })
	t.Run("by_id_and_update", func(t *testing.T) { checkPostGraphileWriteFacts(t, pg, truth) })
}

// pglListQuery is a connection query as a user would write it for
// airlock: $first and $after, an optional condition, nodes and edges.
const pglListQuery = `query Accounts($first: Int, $after: Cursor, $condition: AccountCondition, $orderBy: [AccountsOrderBy!]) {
  allAccounts(first: $first, after: $after, condition: $condition, orderBy: $orderBy) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { id name status team owner version updatedAt }
    edges { cursor node { id } }
  }
}`

// pglConnection is allAccounts' answer.
type pglConnection struct {
	TotalCount *int `json:"totalCount"`
	PageInfo   *struct {
		HasNextPage bool    `json:"hasNextPage"`
		EndCursor   *string `json:"endCursor"`
	} `json:"pageInfo"`
	Nodes []upstreams.Record `json:"nodes"`
	Edges []struct {
		Cursor string           `json:"cursor"`
		Node   upstreams.Record `json:"node"`
	} `json:"edges"`
}

// pglResult is a GraphQL answer: HasData tells a "data": null from no
// data member at all.
type pglResult struct {
	Status  int
	HasData bool
	Data    map[string]json.RawMessage
	Errors  []struct {
		Message string `json:"message"`
		Path    []any  `json:"path"`
	}
	Body []byte
}

func decodePGL(t *testing.T, r upstreams.Response) pglResult {
	t.Helper()
	var raw map[string]json.RawMessage
	r.JSON(t, &raw)
	res := pglResult{Status: r.Status, Body: r.Body}
	if d, ok := raw["data"]; ok {
		res.HasData = true
		if err := json.Unmarshal(d, &res.Data); err != nil {
			t.Fatalf("data of %s: %v", clip(r.Body), err)
		}
	}
	if e, ok := raw["errors"]; ok {
		if err := json.Unmarshal(e, &res.Errors); err != nil {
			t.Fatalf("errors of %s: %v", clip(r.Body), err)
		}
	}
	return res
}

// connection decodes data.allAccounts, failing when it is null.
func (res pglResult) connection(t *testing.T) pglConnection {
	t.Helper()
	var c *pglConnection
	if err := json.Unmarshal(res.Data["allAccounts"], &c); err != nil || c == nil {
		t.Fatalf("data.allAccounts of %s: %v", clip(res.Body), err)
	}
	return *c
}

func (res pglResult) messages() []string {
	var out []string
	for _, e := range res.Errors {
		out = append(out, e.Message)
	}
	return out
}

type graphQLSender func(t testing.TB, query string, variables map[string]any) upstreams.Response

// pglWalk follows endCursor from the first page while hasNextPage, with
// pages of first, and returns every node and the pages read. Every page
// must be a 200 without errors.
func pglWalk(t *testing.T, send graphQLSender, first int, condition map[string]any) ([]upstreams.Record, []pglConnection) {
	t.Helper()
	var (
		all   []upstreams.Record
		pages []pglConnection
		after any
	)
	for {
		vars := map[string]any{"first": first, "after": after, "orderBy": []string{"PRIMARY_KEY_ASC"}}
		if condition != nil {
			vars["condition"] = condition
		}
		res := decodePGL(t, send(t, pglListQuery, vars))
		if res.Status != http.StatusOK || len(res.Errors) > 0 {
			t.Fatalf("page %d: status %d, errors %v", len(pages)+1, res.Status, res.messages())
		}
		c := res.connection(t)
		pages = append(pages, c)
		all = append(all, c.Nodes...)
		if c.PageInfo == nil || !c.PageInfo.HasNextPage {
			return all, pages
		}
		if c.PageInfo.EndCursor == nil || len(pages) > 2*upstreams.DefaultAccounts {
			t.Fatalf("page %d: hasNextPage without an endCursor, or no end", len(pages))
		}
		after = *c.PageInfo.EndCursor
	}
}

// checkPostGraphileConnectionFacts pins the Relay connection: totals,
// page info, nodes beside edges, and what first means.
func checkPostGraphileConnectionFacts(t *testing.T, pg *upstreams.PostGraphile, truth []upstreams.Record) {
	t.Run("walk_by_end_cursor_ends_with_has_next_page_false", func(t *testing.T) {
		all, pages := pglWalk(t, pg.QueryDirect, 100, nil)
		if diff := sameRecords(all, truth); diff != "" {
			t.Errorf("walking endCursor with first 100: %s", diff)
		}
		if want := (len(truth) + 99) / 100; len(pages) != want {
			t.Errorf("%d pages; want %d (the last full page says hasNextPage false)", len(pages), want)
		}
		for i, p := range pages {
			if p.TotalCount == nil || *p.TotalCount != len(truth) {
				t.Errorf("page %d: totalCount %v; want %d on every page", i+1, orNil(p.TotalCount), len(truth))
			}
			if len(p.Edges) != len(p.Nodes) || len(p.Edges) == 0 {
				t.Fatalf("page %d: %d edges and %d nodes; want the same, not none", i+1, len(p.Edges), len(p.Nodes))
			}
			for j := range p.Edges {
				if p.Edges[j].Node["id"] != p.Nodes[j]["id"] {
					t.Errorf("page %d: edge %d holds id %v, node %d id %v", i+1, j, p.Edges[j].Node["id"], j, p.Nodes[j]["id"])
				}
			}
			if end := p.PageInfo.EndCursor; end == nil || *end != p.Edges[len(p.Edges)-1].Cursor {
				t.Errorf("page %d: endCursor %v; want the last edge's cursor %q", i+1, orNil(end), p.Edges[len(p.Edges)-1].Cursor)
			}
		}
	})
	t.Run("without_first_or_with_a_large_first_every_row_in_one_answer", func(t *testing.T) {
		for _, vars := range []map[string]any{{}, {"first": 5000}} {
			c := decodePGL(t, pg.QueryDirect(t, pglListQuery, vars)).connection(t)
			if diff := sameRecords(c.Nodes, truth); diff != "" || c.PageInfo.HasNextPage {
				t.Errorf("variables %v: %s, hasNextPage %t; want every account (no maximum page size) and no next page", vars, diff, c.PageInfo.HasNextPage)
			}
		}
	})
	t.Run("first_zero_says_no_next_page", func(t *testing.T) {
		c := decodePGL(t, pg.QueryDirect(t, pglListQuery, map[string]any{"first": 0})).connection(t)
		if len(c.Nodes) != 0 || c.PageInfo.HasNextPage || c.PageInfo.EndCursor != nil || c.TotalCount == nil || *c.TotalCount != len(truth) {
			t.Errorf("first 0: %d nodes, hasNextPage %t, endCursor %v, totalCount %v; want none, false, null and %d",
				len(c.Nodes), c.PageInfo.HasNextPage, orNil(c.PageInfo.EndCursor), orNil(c.TotalCount), len(truth))
		}
	})
	t.Run("a_cursor_of_another_order_answers_an_empty_last_page", func(t *testing.T) {
		desc := decodePGL(t, pg.QueryDirect(t, pglListQuery, map[string]any{"first": 10, "orderBy": []string{"ID_DESC"}})).connection(t)
		if desc.PageInfo.EndCursor == nil {
			t.Fatal("ID_DESC: no endCursor")
		}
		c := decodePGL(t, pg.QueryDirect(t, pglListQuery, map[string]any{"first": 10, "after": *desc.PageInfo.EndCursor, "orderBy": []string{"PRIMARY_KEY_ASC"}})).connection(t)
		if len(c.Nodes) != 0 || c.PageInfo.HasNextPage || c.TotalCount == nil || *c.TotalCount != len(truth) {
			t.Errorf("an ID_DESC cursor under PRIMARY_KEY_ASC: %d nodes, hasNextPage %t, totalCount %v; want an empty page, false, and the whole count %d (only the total disagrees)",
				len(c.Nodes), c.PageInfo.HasNextPage, orNil(c.TotalCount), len(truth))
		}
	})
}

// checkPostGraphileConditionFacts pins condition arguments: exact values,
// null as IS NULL, and no lists.
func checkPostGraphileConditionFacts(t *testing.T, pg *upstreams.PostGraphile, truth []upstreams.Record) {
	cases := []struct {
		name      string
		condition map[string]any
		want      []upstreams.Record
	}{
		{"owner_null_is_only_null", map[string]any{"owner": nil}, recordsWhere(truth, valueIn("owner", nil))},
		{"owner_empty_is_only_empty", map[string]any{"owner": ""}, recordsWhere(truth, valueIn("owner", ""))},
		{"team_keeps_its_comma", map[string]any{"team": upstreams.CommaTeam}, recordsWhere(truth, valueIn("team", upstreams.CommaTeam))},
		{"status_and_team", map[string]any{"status": "disabled", "team": "support"}, recordsWhere(truth, func(r upstreams.Record) bool {
			return valueIn("status", "disabled")(r) && valueIn("team", "support")(r)
		})},
		{"empty_condition_is_every_row", map[string]any{}, truth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			all, pages := pglWalk(t, pg.QueryDirect, 500, c.condition)
			if diff := sameRecords(all, c.want); diff != "" {
				t.Errorf("condition %v: %s", c.condition, diff)
			}
			if tc := pages[0].TotalCount; tc == nil || *tc != len(c.want) {
				t.Errorf("condition %v: totalCount %v; want %d", c.condition, orNil(tc), len(c.want))
			}
		})
	}
	// No any-of: a list is refused, with 200 when it comes in the
	// variables and 400 when it is written in the query.
	t.Run("a_list_is_refused_200_in_variables_400_inline", func(t *testing.T) {
		res := decodePGL(t, pg.QueryDirect(t, pglListQuery, map[string]any{"condition": map[string]any{"team": []string{"payments", "support"}}}))
		if res.Status != http.StatusOK || res.HasData || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, `Variable "$condition" got invalid value`) {
			t.Errorf("a list in the condition variable: status %d, %s; want 200, one error naming the variable, and no data member", res.Status, clip(res.Body))
		}
		res = decodePGL(t, pg.QueryDirect(t, `{ allAccounts(condition: {team: ["payments", "support"]}) { nodes { id } } }`, nil))
		if res.Status != http.StatusBadRequest || res.HasData || len(res.Errors) != 1 {
			t.Errorf("a list in an inline condition: status %d, %s; want 400, one error and no data member", res.Status, clip(res.Body))
		}
	})
}

// checkPostGraphileErrorFacts pins how PostGraphile answers a bad cursor, a
// bad query and a bad argument.
func checkPostGraphileErrorFacts(t *testing.T, pg *upstreams.PostGraphile) {
	res := decodePGL(t, pg.QueryDirect(t, pglListQuery, map[string]any{"first": 10, "after": "not-a-cursor"}))
	if res.Status != http.StatusOK || len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0].Message, "Invalid cursor") ||
		!res.HasData || string(res.Data["allAccounts"]) != "null" || fmt.Sprint(res.Errors[0].Path) != "[allAccounts]" {
		t.Errorf("a malformed after: status %d, %s; want 200, data.allAccounts null and one \"Invalid cursor…\" error at [allAccounts]", res.Status, clip(res.Body))
	}
	res = decodePGL(t, pg.QueryDirect(t, `{ allAccounts { nodes { id colour } } }`, nil))
	if res.Status != http.StatusBadRequest || res.HasData || len(res.Errors) != 1 {
		t.Errorf("an unknown field: status %d, %s; want 400, errors and no data member", res.Status, clip(res.Body))
	}
	res = decodePGL(t, pg.QueryDirect(t, pglListQuery, map[string]any{"first": -1}))
	if res.Status != http.StatusOK || len(res.Errors) != 1 || string(res.Data["allAccounts"]) != "null" {
		t.Errorf("first -1: status %d, %s; want 200 with an error and data.allAccounts null", res.Status, clip(res.Body))
	}
	r := pg.QueryDirect(t, "{", nil)
	if r.Status != http.StatusBadRequest {
		t.Errorf("a query that does not parse: status %d %s; want 400", r.Status, clip(r.Body))
	}
}

// checkGraphQLProxyFaults pins the fault proxy: it forwards unchanged with
// no fault set, and injects each fault only on the pages chosen.
func checkGraphQLProxyFaults(t *testing.T, pg *upstreams.PostGraphile, truth []upstreams.Record) {
	defer pg.SetFaults(upstreams.GraphQLFaults{})
	page1 := map[string]any{"first": 100, "orderBy": []string{"PRIMARY_KEY_ASC"}}
	t.Run("forwards_unchanged", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{})
		via, direct := pg.Query(t, pglListQuery, page1), pg.QueryDirect(t, pglListQuery, page1)
		if via.Status != direct.Status || string(via.Body) != string(direct.Body) {
			t.Errorf("through the proxy: %d %s; directly: %d %s", via.Status, clip(via.Body), direct.Status, clip(direct.Body))
		}
		all, _ := pglWalk(t, pg.Query, 100, nil)
		if diff := sameRecords(all, truth); diff != "" {
			t.Errorf("a walk through the proxy: %s", diff)
		}
	})
	t.Run("expires_every_cursor", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{ExpireCursors: true})
		first := decodePGL(t, pg.Query(t, pglListQuery, page1))
		end := first.connection(t).PageInfo.EndCursor
		if len(first.Errors) != 0 || end == nil {
			t.Fatalf("page 1 under the expiry knob: %s; want it unchanged", clip(first.Body))
		}
		r := pg.Query(t, pglListQuery, map[string]any{"first": 100, "after": *end, "orderBy": []string{"PRIMARY_KEY_ASC"}})
		if r.Status != http.StatusOK || !sameJSON(r.Body, `{"errors":[{"message":"cursor expired"}],"data":null}`) {
			t.Errorf("page 2: status %d %s; want 200 {\"errors\":[{\"message\":\"cursor expired\"}],\"data\":null}", r.Status, clip(r.Body))
		}
		if s := pg.ProxyStats(); s.Requests != 2 || s.Expired != 1 {
			t.Errorf("stats %+v; want 2 requests, 1 expired", s)
		}
	})
	t.Run("expires_the_cursor_of_chosen_pages", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{ExpirePages: []int{3}})
		var after any
		for page := 1; page <= 3; page++ {
			r := pg.Query(t, pglListQuery, map[string]any{"first": 100, "after": after, "orderBy": []string{"PRIMARY_KEY_ASC"}})
			if page == 3 {
				if !sameJSON(r.Body, `{"errors":[{"message":"cursor expired"}],"data":null}`) {
					t.Errorf("page 3: status %d %s; want cursor expired", r.Status, clip(r.Body))
				}
				break
			}
			c := decodePGL(t, r).connection(t)
			if diff := sameRecords(c.Nodes, truth[(page-1)*100:page*100]); diff != "" {
				t.Errorf("page %d: %s; want the page's data", page, diff)
			}
			after = *c.PageInfo.EndCursor
		}
		if s := pg.ProxyStats(); s.Requests != 3 || s.Expired != 1 {
			t.Errorf("stats %+v; want 3 requests, 1 expired", s)
		}
	})
	t.Run("adds_an_error_beside_good_data_on_chosen_pages", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{ErrorPages: []int{2}})
		var after any
		for page := 1; page <= 3; page++ {
			res := decodePGL(t, pg.Query(t, pglListQuery, map[string]any{"first": 100, "after": after, "orderBy": []string{"PRIMARY_KEY_ASC"}}))
			c := res.connection(t)
			if diff := sameRecords(c.Nodes, truth[(page-1)*100:page*100]); diff != "" || res.Status != http.StatusOK {
				t.Errorf("page %d: status %d, %s; want 200 and the page's good data", page, res.Status, diff)
			}
			wantErrors := 0
			if page == 2 {
				wantErrors = 1
			}
			if len(res.Errors) != wantErrors || wantErrors == 1 && (res.Errors[0].Message != upstreams.PartialErrorMessage || fmt.Sprint(res.Errors[0].Path) != "[allAccounts]") {
				t.Errorf("page %d: errors %s; want %d (%q at [allAccounts])", page, clip(res.Body), wantErrors, upstreams.PartialErrorMessage)
			}
			after = *c.PageInfo.EndCursor
		}
		if s := pg.ProxyStats(); s.Errored != 1 {
			t.Errorf("stats %+v; want 1 errored", s)
		}
	})
	t.Run("drops_page_info_on_chosen_pages", func(t *testing.T) {
		pg.SetFaults(upstreams.GraphQLFaults{DropPageInfoPages: []int{1}})
		res := decodePGL(t, pg.Query(t, pglListQuery, page1))
		var conn map[string]json.RawMessage
		if err := json.Unmarshal(res.Data["allAccounts"], &conn); err != nil {
			t.Fatal(err)
		}
		if _, ok := conn["pageInfo"]; ok || len(res.Errors) != 0 {
			t.Errorf("page 1: %s; want no pageInfo and no error", clip(res.Body))
		}
		if diff := sameRecords(res.connection(t).Nodes, truth[:100]); diff != "" {
			t.Errorf("page 1's nodes: %s", diff)
		}
		if s := pg.ProxyStats(); s.DroppedPageInfo != 1 {
			t.Errorf("stats %+v; want 1 dropped pageInfo", s)
		}
	})
}

const pglAccountFields = `id name status team owner version updatedAt`

// checkPostGraphileWriteFacts pins accountById and updateAccountById: the
// version bump, null as a value, and how a missing id and a refused value
// answer. It changes one account and puts it back, as a compensation
// would.
func checkPostGraphileWriteFacts(t *testing.T, pg *upstreams.PostGraphile, truth []upstreams.Record) {
	before := truth[6]
	id := int(before["id"].(float64))
	var byID struct {
		Account *upstreams.Record `json:"accountById"`
		Missing *upstreams.Record `json:"missing"`
	}
	res := decodePGL(t, pg.QueryDirect(t, `query($id: Int!, $missing: Int!) { accountById(id: $id) { `+pglAccountFields+` } missing: accountById(id: $missing) { id } }`,
		map[string]any{"id": id, "missing": len(truth) + 1000}))
	decodeData(t, res, &byID)
	if byID.Account == nil || !reflect.DeepEqual(*byID.Account, before) || byID.Missing != nil || len(res.Errors) != 0 {
		t.Errorf("accountById: %s; want account %d as the database holds it, and null without an error for a missing id", clip(res.Body), id)
	}

	const update = `mutation($id: Int!, $patch: AccountPatch!) { updateAccountById(input: {id: $id, accountPatch: $patch}) { account { ` + pglAccountFields + ` } } }`
	var updated struct {
		Update *struct {
			Account upstreams.Record `json:"account"`
		} `json:"updateAccountById"`
	}
	status := "archived"
	if before["status"] == status {
		status = "active"
	}
	res = decodePGL(t, pg.QueryDirect(t, update, map[string]any{"id": id, "patch": map[string]any{"status": status, "owner": nil}}))
	decodeData(t, res, &updated)
	after, _ := pg.Account(t, id)
	if updated.Update == nil || updated.Update.Account["status"] != status || updated.Update.Account["owner"] != nil ||
		updated.Update.Account["version"] != before["version"].(float64)+1 || !reflect.DeepEqual(updated.Update.Account, after) {
		t.Errorf("update status %q, owner null: %s; want the account with them at version %v+1, as the database then holds it: %v",
			status, clip(res.Body), before["version"], after)
	}

	res = decodePGL(t, pg.QueryDirect(t, update, map[string]any{"id": id, "patch": map[string]any{"status": "bogus"}}))
	if res.Status != http.StatusOK || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "violates check constraint") ||
		string(res.Data["updateAccountById"]) != "null" {
		t.Errorf("update to a status the table refuses: status %d, %s; want 200, data.updateAccountById null, a check-constraint error", res.Status, clip(res.Body))
	}
	if now, _ := pg.Account(t, id); !reflect.DeepEqual(now, after) {
		t.Errorf("a refused update changed the account: %v, was %v", now, after)
	}

	missing := len(truth) + 1000
	res = decodePGL(t, pg.QueryDirect(t, update, map[string]any{"id": missing, "patch": map[string]any{"status": "active"}}))
	if res.Status != http.StatusOK || len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0].Message, "No values were updated") ||
		string(res.Data["updateAccountById"]) != "null" {
		t.Errorf("update of a missing id: status %d, %s; want 200, data.updateAccountById null, a \"No values were updated…\" error", res.Status, clip(res.Body))
	}

	// The compensation: the before-values back, and the version moves on.
	res = decodePGL(t, pg.QueryDirect(t, update, map[string]any{"id": id, "patch": map[string]any{"status": before["status"], "owner": before["owner"]}}))
	restored, _ := pg.Account(t, id)
	if len(res.Errors) != 0 || restored["status"] != before["status"] || restored["owner"] != before["owner"] || restored["version"] != before["version"].(float64)+2 {
		t.Errorf("update the before-values back: %s; the database holds %v; want the values of %v at version %v+2", clip(res.Body), restored, before, before["version"])
	}

	// A change behind PostGraphile's back (the harness's Update) is what
	// PostGraphile then serves.
	pg.Update(t, id, map[string]any{"team": "support"})
	res = decodePGL(t, pg.QueryDirect(t, `query($id: Int!) { accountById(id: $id) { `+pglAccountFields+` } }`, map[string]any{"id": id}))
	decodeData(t, res, &byID)
	if now, _ := pg.Account(t, id); byID.Account == nil || !reflect.DeepEqual(*byID.Account, now) || now["team"] != "support" || now["version"] != before["version"].(float64)+3 {
		t.Errorf("after an update with SQL: PostGraphile serves %s, the database holds %v; want team support at version %v+3 in both", clip(res.Body), now, before["version"])
	}
}

func decodeData(t *testing.T, res pglResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", clip(res.Body), err)
	}
}
