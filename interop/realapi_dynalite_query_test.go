package interop

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/tools"
)

// airlock in front of dynalite's ledger table (testdata/dynalite_query.yaml:
// partition key tenant, sort key id), read by Query: every count is
// compared with dynalite's own answer to a Query written here by hand, with
// its own placeholders, continued to its end; never with a number written
// here.

// dynQueryCase is one search and the Query that is its ground truth.
type dynQueryCase struct {
	name   string
	filter map[string]any
	// key and filterExpr are the truth Query's KeyConditionExpression
	// and FilterExpression; names and values their bindings.
	key, filterExpr string
	names           map[string]any
	values          map[string]any
}

func s(v string) map[string]any { return map[string]any{"S": v} }

// TestDynaliteQuery_ReadsOnePartitionByItsKey seeds the ledger beside the
// accounts and checks each search against dynalite's own Query.
func TestDynaliteQuery_ReadsOnePartitionByItsKey(t *testing.T) {
	started := time.Now()
	d := upstreams.StartDynalite(t)
	d.SeedLedger(t)
	proxy := startWriteProxy(t, d.URL)
	al := startAirlock(t, "dynalite_query.yaml", proxy.URL, dynEnv)
	tn := map[string]any{"#t": "tenant"}
	cases := []dynQueryCase{
		{name: "one_tenant", filter: map[string]any{"tenant": "acme"},
			key: "#t = :t", names: tn, values: map[string]any{":t": s("acme")}},
		{name: "hostile_tenant", filter: map[string]any{"tenant": upstreams.DynaliteHostileTenant},
			key: "#t = :t", names: tn, values: map[string]any{":t": s(upstreams.DynaliteHostileTenant)}},
		{name: "tenant_and_status", filter: map[string]any{"tenant": "acme", "status": "past_due"},
			key: "#t = :t", filterExpr: "#s = :s", names: map[string]any{"#t": "tenant", "#s": "status"},
			values: map[string]any{":t": s("acme"), ":s": s("past_due")}},
		{name: "hostile_tenant_sort_from_and_statuses", filter: map[string]any{"tenant": upstreams.DynaliteHostileTenant, "id_from": "inv-00450", "status": []any{"disabled", "past_due"}},
			key: "#t = :t AND #i >= :i", filterExpr: "#s IN (:a, :b)", names: map[string]any{"#t": "tenant", "#i": "id", "#s": "status"},
			values: map[string]any{":t": s(upstreams.DynaliteHostileTenant), ":i": s("inv-00450"), ":a": s("disabled"), ":b": s("past_due")}},
		{name: "tenant_before_and_hostile_note", filter: map[string]any{"tenant": "globex", "id_before": "inv-00350", "note": `x' OR '1'='1`},
			key: "#t = :t AND #i < :i", filterExpr: "#n = :n", names: map[string]any{"#t": "tenant", "#i": "id", "#n": "note"},
			values: map[string]any{":t": s("globex"), ":i": s("inv-00350"), ":n": s(`x' OR '1'='1`)}},
		{name: "hostile_tenant_id_range_and_status", filter: map[string]any{"tenant": upstreams.DynaliteHostileTenant, "id_from": "inv-00420", "id_through": "inv-00480", "status": "active"},
			key: "#t = :t AND #i BETWEEN :lo AND :hi", filterExpr: "#s = :s", names: map[string]any{"#t": "tenant", "#i": "id", "#s": "status"},
			values: map[string]any{":t": s(upstreams.DynaliteHostileTenant), ":lo": s("inv-00420"), ":hi": s("inv-00480"), ":s": s("active")}},
		{name: "empty_sort_bound_airlocks_alone", filter: map[string]any{"tenant": "initech", "id_from": ""},
			key: "#t = :t", names: tn, values: map[string]any{":t": s("initech")}},
		{name: "tenant_and_one_id", filter: map[string]any{"tenant": "initech", "id": "inv-00590"},
			key: "#t = :t AND #i = :i", names: map[string]any{"#t": "tenant", "#i": "id"},
			values: map[string]any{":t": s("initech"), ":i": s("inv-00590")}},
		{name: "id_of_another_tenant", filter: map[string]any{"tenant": "initech", "id": "inv-00001"},
			key: "#t = :t AND #i = :i", names: map[string]any{"#t": "tenant", "#i": "id"},
			values: map[string]any{":t": s("initech"), ":i": s("inv-00001")}},
		{name: "tenant_of_nothing", filter: map[string]any{"tenant": "acme) OR (#t = :t"},
			key: "#t = :t", names: tn, values: map[string]any{":t": s("acme) OR (#t = :t")}},
	}
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "dynalite 4.0 Query", config: "dynalite_query.yaml", base: d.URL, env: dynEnv, resource: "ledger",
			filter: map[string]any{"tenant": "acme", "status": "active"}})
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runDynQuery(t, d, al, proxy, c) })
	}
	t.Run("global_secondary_index", func(t *testing.T) { checkDynQueryIndex(t, d, al) })
	t.Run("filtered_pages_empty_but_continuing", func(t *testing.T) { checkDynQueryEmptyPages(t, d) })
	t.Run("unpinned_partition_refused_unsent", func(t *testing.T) { checkDynQueryRefusal(t, al, proxy) })
	t.Run("described_keys", func(t *testing.T) { checkDynQueryDescribed(t, al) })
	t.Logf("dynalite Query suite: %.1fs", time.Since(started).Seconds())
}

// truthQuery is c's ground truth: dynalite's Query, continued to its end.
func truthQuery(t *testing.T, d *upstreams.Dynalite, c dynQueryCase, limit int) ([]string, int, int) {
	req := map[string]any{"TableName": upstreams.DynaliteLedger, "ConsistentRead": true, "KeyConditionExpression": c.key,
		"ExpressionAttributeNames": c.names, "ExpressionAttributeValues": c.values}
	if c.filterExpr != "" {
		req["FilterExpression"] = c.filterExpr
	}
	if limit > 0 {
		req["Limit"] = limit
	}
	return d.QueryAll(t, req)
}

// runDynQuery: counts only and a walk of every item both reach dynalite's
// own answer, complete; every request airlock sent was a Query naming the
// tenant in its key condition, never in the FilterExpression.
func runDynQuery(t *testing.T, d *upstreams.Dynalite, al *airlock, proxy *writeProxy, c dynQueryCase) {
	want, _, _ := truthQuery(t, d, c, 0)
	slices.Sort(want)
	before := len(proxy.requests())
	args := map[string]any{"resource": "ledger", "filter": c.filter, "max_items": 0, "deadline_ms": deadlineMS}
	ans := al.search(t, args)
	checkClaim(t, "counts only", ans, len(want))
	if !ans.Complete || ans.Data.TotalMatched != len(want) {
		t.Errorf("counts only: %s; dynalite's Query holds %d", ans, len(want))
	}
	items := clone(args)
	items["max_items"] = 100
	items["fields"] = []string{"id"}
	last, ids := al.walk(t, items, "id")
	checkClaim(t, "walk", last, len(want))
	checkItems(t, "walk", last, ids, want)
	if !last.Complete || len(ids) != len(want) {
		t.Errorf("walk: %d ids, %s; dynalite's Query holds %d", len(ids), last, len(want))
	}
	for _, r := range proxy.requests()[before:] {
		var body map[string]any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("a request body that is not JSON: %s", r.Body)
		}
		key, _ := body["KeyConditionExpression"].(string)
		filter, _ := body["FilterExpression"].(string)
		if key == "" {
			t.Errorf("a request without a key condition: %s", r.Body)
		}
		names, _ := body["ExpressionAttributeNames"].(map[string]any)
		for ph, n := range names {
			if n == "tenant" && strings.Contains(filter, ph) {
				t.Errorf("the partition key in the FilterExpression: %s", r.Body)
			}
		}
	}
	t.Logf("%v: %d matched, dynalite's Query %d, %d pages", c.filter, ans.Data.TotalMatched, len(want), pagesOf(ans))
}

func pagesOf(a answer) int {
	if a.Coverage == nil {
		return 0
	}
	return a.Coverage.Pages
}

// checkDynQueryEmptyPages: at ten entries read a page, a tenant's
// past_due entries meet pages with Count 0 and a LastEvaluatedKey; they go
// on, and the count reaches dynalite's, never complete at less.
func checkDynQueryEmptyPages(t *testing.T, d *upstreams.Dynalite) {
	c := dynQueryCase{key: "#t = :t", filterExpr: "#s = :s", names: map[string]any{"#t": "tenant", "#s": "status"},
		values: map[string]any{":t": s("acme"), ":s": s("past_due")}}
	want, pages, empty := truthQuery(t, d, c, 10)
	if empty == 0 {
		t.Fatal("no page of ten was empty: the case shows nothing")
	}
	al := startAirlockWith(t, "dynalite_query.yaml", d.URL, dynEnv, func(c *configpkg.Config) {
		c.Resources["ledger"].Pagination.PageSize = 10
	})
	ans := al.search(t, map[string]any{"resource": "ledger", "filter": map[string]any{"tenant": "acme", "status": "past_due"}, "max_items": 0, "deadline_ms": deadlineMS})
	checkClaim(t, "past_due by tens", ans, len(want))
	if !ans.Complete || ans.Data.TotalMatched != len(want) || pagesOf(ans) != pages {
		t.Errorf("acme past_due by pages of ten: %s; dynalite's Query holds %d over %d pages", ans, len(want), pages)
	}
	t.Logf("acme past_due by tens: %d matched of dynalite's %d over %d pages (dynalite's %d), %d of them empty with a LastEvaluatedKey", ans.Data.TotalMatched, len(want), pagesOf(ans), pages, empty)
}

// checkDynQueryRefusal: a search that does not pin the tenant (none, two,
// null) is INVALID_ARGUMENTS with partition_required on filter.tenant,
// and nothing reaches dynalite; two sort conditions are one_sort_condition,
// and a range whose lower bound is above its upper one (which DynamoDB
// refuses) out_of_range.
func checkDynQueryRefusal(t *testing.T, al *airlock, proxy *writeProxy) {
	var sent atomic.Int32
	proxy.set(func(proxied) (int, []byte, bool) { sent.Add(1); return 0, nil, false }, nil)
	t.Cleanup(func() { proxy.set(nil, nil) })
	for _, tc := range []struct {
		filter      map[string]any
		field, code string
	}{
		{map[string]any{"status": "past_due"}, "filter.tenant", "partition_required"},
		{nil, "filter.tenant", "partition_required"},
		{map[string]any{"tenant": []any{"acme", "globex"}}, "filter.tenant", "partition_required"},
		{map[string]any{"tenant": ""}, "filter.tenant", "partition_required"},
		{map[string]any{"tenant": "acme", "id_from": "inv-00010", "id_before": "inv-00020"}, "filter.id_before", "one_sort_condition"},
		{map[string]any{"tenant": "acme", "id_from": "inv-00020", "id_through": "inv-00010"}, "filter.id_through", "out_of_range"},
	} {
		args := map[string]any{"resource": "ledger", "max_items": 0, "deadline_ms": deadlineMS}
		if tc.filter != nil {
			args["filter"] = tc.filter
		}
		raw, _ := json.Marshal(args)
		env := al.specs["search_all"].Handler(t.Context(), &tools.Call{RequestID: "interop", Raw: raw})
		env.Finish()
		var got struct {
			Status  string
			Problem struct {
				Code   string
				Detail string
				Errors []struct{ Field, Code, Message string }
			}
		}
		if err := json.Unmarshal(env.Marshal(), &got); err != nil {
			t.Fatal(err)
		}
		ok := got.Problem.Code == "INVALID_ARGUMENTS" && len(got.Problem.Errors) == 1 &&
			got.Problem.Errors[0].Field == tc.field && got.Problem.Errors[0].Code == tc.code
		if !ok {
			t.Errorf("%v: %+v; want INVALID_ARGUMENTS with %s on %s", tc.filter, got.Problem, tc.code, tc.field)
		}
		t.Logf("%v: %s: %s", tc.filter, got.Problem.Code, got.Problem.Detail)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests reached dynalite for refused searches", n)
	}
}

// checkDynQueryDescribed: describe_resources tells the agent, before any
// search, which filter pins the partition and which are the sort key's.
func checkDynQueryDescribed(t *testing.T, al *airlock) {
	env := al.specs["describe_resources"].Handler(t.Context(), &tools.Call{RequestID: "interop", Raw: []byte(`{"resource": "ledger"}`)})
	env.Finish()
	var got struct {
		Data struct {
			Resources []struct {
				Filters []struct{ Name, Key string }
			}
		}
	}
	if err := json.Unmarshal(env.Marshal(), &got); err != nil || len(got.Data.Resources) != 1 {
		t.Fatalf("describe_resources: %v %s", err, env.Marshal())
	}
	keys := map[string]string{}
	for _, f := range got.Data.Resources[0].Filters {
		keys[f.Name] = f.Key
	}
	want := map[string]string{"tenant": "partition", "id": "sort", "id_from": "sort", "id_before": "sort", "id_through": "sort", "status": "", "note": ""}
	if !maps.Equal(keys, want) {
		t.Errorf("filters' keys %v; want %v", keys, want)
	}
}

// checkDynQueryIndex: the same key condition over the ledger's global
// secondary index (IndexName in list.body): one status across every
// tenant, a sort condition beside it, and the hostile tenant in the
// FilterExpression, each as dynalite's own Query on the index answers;
// the index's LastEvaluatedKey (table and index keys) goes back whole.
func checkDynQueryIndex(t *testing.T, d *upstreams.Dynalite, al *airlock) {
	for _, c := range []dynQueryCase{
		{filter: map[string]any{"status": "past_due"}, key: "#s = :s", names: map[string]any{"#s": "status"}, values: map[string]any{":s": s("past_due")}},
		{filter: map[string]any{"status": "active"}, key: "#s = :s", names: map[string]any{"#s": "status"}, values: map[string]any{":s": s("active")}},
		{filter: map[string]any{"status": "disabled", "id_from": "inv-00300", "tenant": upstreams.DynaliteHostileTenant},
			key: "#s = :s AND #i >= :i", filterExpr: "#t = :t", names: map[string]any{"#s": "status", "#i": "id", "#t": "tenant"},
			values: map[string]any{":s": s("disabled"), ":i": s("inv-00300"), ":t": s(upstreams.DynaliteHostileTenant)}},
	} {
		req := map[string]any{"TableName": upstreams.DynaliteLedger, "IndexName": upstreams.DynaliteLedgerByStatus, "KeyConditionExpression": c.key,
			"ExpressionAttributeNames": c.names, "ExpressionAttributeValues": c.values, "Limit": 50}
		if c.filterExpr != "" {
			req["FilterExpression"] = c.filterExpr
		}
		want, pages, _ := d.QueryAll(t, req)
		slices.Sort(want)
		last, ids := al.walk(t, map[string]any{"resource": "ledger_by_status", "filter": c.filter, "max_items": 100, "fields": []string{"id"}, "deadline_ms": deadlineMS}, "id")
		checkClaim(t, "index walk", last, len(want))
		checkItems(t, "index walk", last, ids, want)
		if !last.Complete || len(ids) != len(want) || len(want) == 0 {
			t.Errorf("%v on the index: %d ids, %s; dynalite's Query on the index holds %d", c.filter, len(ids), last, len(want))
		}
		t.Logf("%v on the index: %d delivered, dynalite's Query on the index %d over %d pages", c.filter, len(ids), len(want), pages)
	}
}
