package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// airlock in front of dynalite (testdata/dynalite.yaml, the configuration
// docs/config.md's DynamoDB section describes): every count is compared
// with dynalite's own answer to a raw Scan continued to its end, never
// with a number written here. A proxy in front of dynalite plays the
// network peer where dynalite cannot (a throttle), and another writer
// where the test needs one.

// dynEnv is the credential testdata/dynalite.yaml names: dynalite checks
// the signature's form only, so any key signs.
var dynEnv = map[string]string{"AWS_ACCESS_KEY_ID": "AKIDAIRLOCKTEST", "AWS_SECRET_ACCESS_KEY": "not-a-secret-dynalite-checks"}

// TestDynalite_ScansTypedItemsAndWritesConditionally starts its own
// dynalite: its last subtest writes.
func TestDynalite_ScansTypedItemsAndWritesConditionally(t *testing.T) {
	started := time.Now()
	d := upstreams.StartDynalite(t)
	truth := d.Records(t)
	proxy := startWriteProxy(t, d.URL)
	al := startAirlock(t, "dynalite.yaml", proxy.URL, dynEnv)

	status := func(vs ...any) func(upstreams.Record) bool { return valueIn("status", vs...) }
	cases := []upstreamCase{
		{name: "every_account", resource: "accounts", correct: true},
		{name: "one_status", resource: "accounts", filter: map[string]any{"status": "past_due"}, keep: status("past_due"), correct: true},
		{name: "any_of_statuses", resource: "accounts", filter: map[string]any{"status": []any{"archived", "disabled"}}, keep: status("archived", "disabled"), correct: true},
		{name: "owner_null_or_absent", resource: "accounts", filter: map[string]any{"owner": nil},
			keep: func(r upstreams.Record) bool { return r["owner"] == nil }, correct: true},
		{name: "owner_empty_text", resource: "accounts", filter: map[string]any{"owner": ""}, keep: valueIn("owner", ""), correct: true},
		{name: "hostile_team", resource: "accounts", filter: map[string]any{"team": "R&D, Labs"}, keep: valueIn("team", "R&D, Labs"), correct: true},
		{name: "hostile_owner", resource: "accounts", filter: map[string]any{"owner": []any{`"Quoted" Ltd`, "#status :v", "O'Brien", "bea@example.com"}},
			keep: valueIn("owner", `"Quoted" Ltd`, "#status :v", "O'Brien", "bea@example.com"), correct: true},
	}
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "dynalite 4.0", config: "dynalite.yaml", base: d.URL, env: dynEnv, resource: "accounts",
			filter: map[string]any{"status": "past_due"}})
		checkEvidence(t, evidenceCase{upstream: "dynalite 4.0", config: "dynalite.yaml", base: d.URL, env: dynEnv, resource: "accounts",
			filter: map[string]any{"team": "payments", "owner": nil}})
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "pk", "status") })
	}
	t.Run("null_and_absent_are_both_null", func(t *testing.T) {
		var null, absent int
		for _, r := range truth {
			v, ok := r["owner"]
			switch {
			case !ok:
				absent++
			case v == nil:
				null++
			}
		}
		ans := al.search(t, map[string]any{"resource": "accounts", "filter": map[string]any{"owner": nil}, "max_items": 0, "deadline_ms": deadlineMS})
		if null == 0 || absent == 0 || !ans.Complete || ans.Data.TotalMatched != null+absent {
			t.Errorf("owner null: %s; dynalite holds %d NULL and %d absent", ans, null, absent)
		}
		t.Logf("owner null: %d matched = %d {\"NULL\": true} + %d absent", ans.Data.TotalMatched, null, absent)
	})
	t.Run("numbers_beyond_2^53_intact", func(t *testing.T) { checkDynBig(t, al, truth) })
	t.Run("filtered_pages_empty_but_continuing", func(t *testing.T) { checkDynEmptyPages(t, d, truth) })
	t.Run("throttle_waited_and_retried", func(t *testing.T) { checkDynThrottle(t, proxy, truth) })
	t.Run("conditional_update_conflict", func(t *testing.T) { checkDynConflict(t, d, proxy) })
	t.Run("write_evidence_mutation", func(t *testing.T) {
		pool := upstreams.IDs(d.Records(t), func(r upstreams.Record) bool { return r["status"] == "active" && r["team"] != "support" })
		checkWriteEvidence(t, writeEvidenceCase{upstream: "dynalite 4.0", config: "dynalite.yaml", base: d.URL, env: dynEnv, action: "set_status",
			params: map[string]any{"status": "retired"}, pool: pool, target: dynTarget,
			applied: func(t *testing.T, ids []string) map[string]bool {
				out := map[string]bool{}
				for _, it := range d.Items(t) {
					if pk := upstreams.DynamoString(it["pk"]); slices.Contains(ids, pk) {
						out[pk] = upstreams.DynamoString(it["status"]) == "retired"
					}
				}
				return out
			}})
	})
	t.Logf("dynalite airlock suite: %.1fs", time.Since(started).Seconds())
}

// checkDynBig: every item seeded with big (2^53+1) delivers it exactly, as
// a string (an I-JSON answer), never rounded.
func checkDynBig(t *testing.T, al *airlock, truth []upstreams.Record) {
	want := 0
	for _, r := range truth {
		if r["big"] != nil {
			want++
		}
	}
	args := map[string]any{"resource": "accounts", "max_items": 200, "fields": []string{"pk", "big"}, "deadline_ms": deadlineMS}
	var delivered []map[string]any
	var ans answer
	for range 20 {
		ans = al.search(t, args)
		delivered = append(delivered, ans.Data.Items...)
		if ans.Continuation.Kind != "next_cursor" {
			break
		}
		args = map[string]any{"resource": "accounts", "max_items": 200, "fields": []string{"pk", "big"}, "cursor": ans.Continuation.Cursor, "deadline_ms": deadlineMS}
	}
	got := 0
	for _, it := range delivered {
		f, _ := it["fields"].(map[string]any)
		if f == nil {
			f = it
		}
		switch v := f["big"].(type) {
		case nil:
		case string:
			if v != upstreams.DynaliteBigNumber {
				t.Errorf("%v: big %q; want %s", f["pk"], v, upstreams.DynaliteBigNumber)
			}
			got++
		default:
			t.Errorf("%v: big %#v; want the string %s", f["pk"], v, upstreams.DynaliteBigNumber)
		}
	}
	if !ans.Complete || len(delivered) != len(truth) || want == 0 || got != want {
		t.Errorf("big: %d items delivered it exactly (%d items in all), dynalite holds %d of %d: %s", got, len(delivered), want, len(truth), ans)
	}
	t.Logf("big: %d of %d items carry %s exactly", got, len(delivered), upstreams.DynaliteBigNumber)
}

// checkDynEmptyPages: at ten evaluated items a page, a filter on a rare
// value meets pages with Count 0 and a LastEvaluatedKey; they go on, and
// the count reaches dynalite's, never complete at less.
func checkDynEmptyPages(t *testing.T, d *upstreams.Dynalite, truth []upstreams.Record) {
	want := len(upstreams.IDs(truth, valueIn("status", "past_due")))
	empty := 0
	req := map[string]any{"TableName": upstreams.DynaliteTable, "Limit": 10, "FilterExpression": "#s = :s",
		"ExpressionAttributeNames": map[string]any{"#s": "status"}, "ExpressionAttributeValues": map[string]any{":s": map[string]any{"S": "past_due"}}}
	for {
		var p struct {
			Count            int
			LastEvaluatedKey map[string]any
		}
		r := d.Call(t, "Scan", req)
		r.JSON(t, &p)
		if p.Count == 0 && p.LastEvaluatedKey != nil {
			empty++
		}
		if p.LastEvaluatedKey == nil {
			break
		}
		req["ExclusiveStartKey"] = p.LastEvaluatedKey
	}
	if empty == 0 {
		t.Fatal("no page of ten was empty: the case shows nothing")
	}
	al := startAirlockWith(t, "dynalite.yaml", d.URL, dynEnv, func(c *configpkg.Config) {
		c.Resources["accounts"].Pagination.PageSize = 10
	})
	ans := al.search(t, map[string]any{"resource": "accounts", "filter": map[string]any{"status": "past_due"}, "max_items": 0, "deadline_ms": deadlineMS})
	checkClaim(t, "past_due by tens", ans, want)
	if !ans.Complete || ans.Data.TotalMatched != want {
		t.Errorf("past_due by pages of ten: %s; dynalite holds %d", ans, want)
	}
	t.Logf("past_due by tens: %d matched of dynalite's %d over %d pages, %d of them empty with a LastEvaluatedKey", ans.Data.TotalMatched, want, ans.Coverage.Pages, empty)
}

// checkDynThrottle: the proxy answers one Scan page as DynamoDB throttles
// (400, ProvisionedThroughputExceededException, no Retry-After); airlock
// waits, asks again, and the count is still dynalite's.
func checkDynThrottle(t *testing.T, proxy *writeProxy, truth []upstreams.Record) {
	var scans, throttled atomic.Int32
	proxy.set(func(r proxied) (int, []byte, bool) {
		if !strings.Contains(string(r.Body), `"Limit"`) || scans.Add(1) != 3 {
			return 0, nil, false
		}
		throttled.Add(1)
		return http.StatusBadRequest, []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`), true
	}, nil)
	t.Cleanup(func() { proxy.set(nil, nil) })
	al := startAirlock(t, "dynalite.yaml", proxy.URL, dynEnv)
	want := len(upstreams.IDs(truth, valueIn("status", "active")))
	begun := time.Now()
	ans := al.search(t, map[string]any{"resource": "accounts", "filter": map[string]any{"status": "active"}, "max_items": 0, "deadline_ms": deadlineMS})
	if throttled.Load() != 1 {
		t.Fatalf("the proxy throttled %d requests; want 1", throttled.Load())
	}
	if !ans.Complete || ans.Data.TotalMatched != want {
		t.Errorf("active through one throttle: %s; dynalite holds %d", ans, want)
	}
	t.Logf("one throttle: %d Scan requests, %d matched of %d, %.1fs", scans.Load(), ans.Data.TotalMatched, want, time.Since(begun).Seconds())
}

// checkDynConflict previews set_status on the past_due accounts of one
// team, lets another writer bump one target's version before the commit,
// and checks dynalite: the moved one was skipped (its ConditionExpression
// failed: a conflict) and keeps the other writer's status; every other
// target is retired, its version one more.
func checkDynConflict(t *testing.T, d *upstreams.Dynalite, proxy *writeProxy) {
	proxy.set(nil, nil)
	before := map[string]upstreams.DynamoItem{}
	var targets []string
	for _, it := range d.Items(t) {
		pk := upstreams.DynamoString(it["pk"])
		before[pk] = it
		if upstreams.DynamoString(it["status"]) == "past_due" && upstreams.DynamoString(it["team"]) == "support" {
			targets = append(targets, pk)
		}
	}
	if len(targets) < 5 {
		t.Fatalf("%d support accounts are past_due; the row needs 5 or more", len(targets))
	}
	wa := withStore(t, startAirlock(t, "dynalite.yaml", proxy.URL, dynEnv))
	prev := wa.tool(t, "preview_selection", map[string]any{"resource": "accounts", "filter": map[string]any{"status": "past_due", "team": "support"},
		"action": map[string]any{"type": "set_status", "params": map[string]any{"status": "retired"}}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true || data["counts"].(map[string]any)["members"] != float64(len(targets)) {
		b, _ := json.Marshal(data)
		t.Fatalf("preview: %s; want %d members, committable", truncateStr(string(b), 1500), len(targets))
	}
	moved := targets[len(targets)/2]
	other := d.Call(t, "UpdateItem", map[string]any{"TableName": upstreams.DynaliteTable, "Key": map[string]any{"pk": map[string]any{"S": moved}},
		"UpdateExpression": "SET #s = :s, #v = #v + :one", "ExpressionAttributeNames": map[string]any{"#s": "status", "#v": "version"},
		"ExpressionAttributeValues": map[string]any{":s": map[string]any{"S": "disabled"}, ":one": map[string]any{"N": "1"}}})
	if other.Status != http.StatusOK {
		t.Fatalf("the other writer: %d %s", other.Status, other.Body)
	}

	op, counts := commitCounts(t, wa, data)
	if counts["succeeded"] != float64(len(targets)-1) || counts["skipped"] != float64(1) {
		t.Errorf("operation %s: counts %v; want %d succeeded and %s skipped", op, counts, len(targets)-1, moved)
	}
	skipped := wa.tool(t, "get_operation", map[string]any{"operation_id": op, "outcome": "skipped"})
	items, _ := skipped["data"].(map[string]any)["results"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["id"] != moved {
		t.Errorf("skipped targets: %v; want only %q", skipped["data"], moved)
	} else if b, _ := json.Marshal(items[0]); !strings.Contains(string(b), "UPSTREAM_CONFLICT") {
		t.Errorf("the skipped target: %s; want UPSTREAM_CONFLICT", b)
	}
	var retired int
	for _, it := range d.Items(t) {
		pk := upstreams.DynamoString(it["pk"])
		st := upstreams.DynamoString(it["status"])
		v, _ := upstreams.PlainDynamo(it["version"])
		v0, _ := upstreams.PlainDynamo(before[pk]["version"])
		switch {
		case pk == moved:
			if st != "disabled" {
				t.Errorf("%s: status %q; want the other writer's disabled", pk, st)
			}
		case slices.Contains(targets, pk):
			if st != "retired" || fmt.Sprint(v) != fmt.Sprint(jsonInt(v0)+1) {
				t.Errorf("%s: status %q version %v; want retired at version %d", pk, st, v, jsonInt(v0)+1)
			}
			retired++
		default:
			if st != upstreams.DynamoString(before[pk]["status"]) || fmt.Sprint(v) != fmt.Sprint(v0) {
				t.Errorf("%s moved: status %q version %v", pk, st, v)
			}
		}
	}
	t.Logf("set_status on %d accounts: %d retired, %s skipped by its failed ConditionExpression", len(targets), retired, moved)
}

func jsonInt(v any) int {
	var n int
	_, _ = fmt.Sscan(fmt.Sprint(v), &n)
	return n
}

func truncateStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// dynTarget reads the target of a request to the accounts table from its
// body: the S of Key's pk; an UpdateItem (it holds an UpdateExpression)
// writes, a GetItem reads.
func dynTarget(r proxied) (string, bool) {
	var body struct {
		Key              map[string]map[string]any
		UpdateExpression *string
	}
	if !jsonBody(r, &body) {
		return "", false
	}
	pk, _ := body.Key["pk"]["S"].(string)
	return pk, pk != "" && body.UpdateExpression != nil
}
