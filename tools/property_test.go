package tools

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
)

func dataIDs(data map[string]any) []string {
	var out []string
	items, _ := data["items"].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

var statuses = []string{"active", "past_due", "canceled", "trialing", "paused"}

func genCollection(t *rapid.T, n int) *fixtures.Collection {
	var recs []fixtures.Record
	for i := 1; i <= n; i++ {
		recs = append(recs, fixtures.Record{
			"id": fmt.Sprintf("sub_%05d", i), "customer_id": rapid.SampledFrom([]string{"cus_a", "cus_b"}).Draw(t, "customer"),
			"customer_name": "Orchard Studio SAS", "region": fixtures.Regions[i%3],
			"status": rapid.SampledFrom(statuses).Draw(t, "status"), "amount_due": 100, "currency": "EUR",
			"tags": []any{}, "collection_paused": false, "version": 1, "updated_at": "2026-11-01T00:00:00Z",
		})
	}
	return fixtures.NewCollection(recs)
}

// expected is the fixture's matching set for a filter on status and/or
// customer_id.
func expected(c *fixtures.Collection, filter map[string]any) []string {
	var out []string
	for _, r := range c.All() {
		ok := true
		for k, v := range filter {
			if vs, isList := v.([]any); isList {
				ok = ok && slices.Contains(vs, r[k])
			} else {
				ok = ok && r[k] == v
			}
		}
		if ok {
			out = append(out, r.ID())
		}
	}
	sort.Strings(out)
	return out
}

// TestPropertyCompleteMeansExactlyTheMatchingSet: over every dialect, random
// sizes, page sizes, budgets and faults, an answer that says complete holds
// exactly the fixture's matching set, and an answer that differs from it is
// never complete and always names a reason.
func TestPropertyCompleteMeansExactlyTheMatchingSet(t *testing.T) {
	t.Parallel()
	api := newFixture(t)
	srv := httptest.NewServer(api)
	defer srv.Close()
	checks, throttled := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		checks++
		dialect := rapid.SampledFrom(fixtures.AllDialects).Draw(rt, "dialect")
		n := rapid.IntRange(0, 400).Draw(rt, "records")
		minPage := 1
		if dialect == fixtures.DialectOffset {
			minPage = 2 // the overlap check needs two items per page
		}
		pageSize := rapid.IntRange(minPage, 60).Draw(rt, "page_size")
		conc := rapid.IntRange(1, 4).Draw(rt, "concurrency")
		coll := genCollection(rt, n)
		api.SetCollection(fixtures.DatasetSubscriptions, coll)
		api.ClearFaults()

		extra := "visibility: {header: X-Visibility, restricted_values: [restricted]}\nincomplete: {flags: [incomplete_results]}"
		var f fixtures.Faults
		switch rapid.IntRange(0, 8).Draw(rt, "fault") {
		case 1:
			// A silent cap is only detectable when the API documents it
			// (result_cap) or reports a total; the operator declares it.
			f.ResultCap = rapid.IntRange(1, 300).Draw(rt, "cap")
			extra += fmt.Sprintf("\nresult_cap: %d", f.ResultCap)
		case 2:
			f.FailRequests = map[int]int{rapid.IntRange(1, 6).Draw(rt, "transient_at"): 500}
		case 3:
			f.FailFrom, f.FailStatus = rapid.IntRange(1, 6).Draw(rt, "down_from"), 503
		case 4:
			f.Restricted = true
		case 5:
			f.Incomplete = "incomplete_results"
		case 6:
			f.Throttle = &fixtures.Throttle{After: rapid.IntRange(0, 5).Draw(rt, "throttle_after"), For: time.Minute}
		case 7:
			f.ExpireContinueAfter = rapid.IntRange(1, 4).Draw(rt, "expire_after")
		case 8:
			f.EmptyFirstPage = true
		}
		d := newDirect(rt, fixtures.Config(srv.URL, fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions,
			Dialect: dialect, PageSize: pageSize, Concurrency: conc, Extra: extra}))
		if rapid.Bool().Draw(rt, "slow") {
			f.Latency = time.Duration(rapid.IntRange(1, 4).Draw(rt, "latency_ms")) * time.Millisecond
		}
		api.SetFaults(fixtures.DatasetSubscriptions, f)

		filter := map[string]any{}
		if rapid.Bool().Draw(rt, "by_status") {
			filter["status"] = rapid.SampledFrom(statuses).Draw(rt, "status_filter")
		}
		if rapid.Bool().Draw(rt, "by_customer") {
			filter["customer_id"] = "cus_a"
		}
		want := expected(coll, filter)
		args := map[string]any{"resource": "subs", "filter": filter, "fields": []any{"id"},
			"max_items":   rapid.IntRange(0, 300).Draw(rt, "max_items"),
			"max_pages":   rapid.IntRange(1, 60).Draw(rt, "max_pages"),
			"deadline_ms": rapid.IntRange(100, 3000).Draw(rt, "deadline_ms")}

		// Follow next_cursor as an agent would, collecting every delivered id.
		var got []string
		for hop := 0; ; hop++ {
			env, data := d.call("search_all", args)
			if p := env.Problem; p != nil {
				// A page still in flight when the answer was composed may
				// meet the throttle after it: the next call is then refused
				// from airlock's own state, retryable, with the wait named.
				if f.Throttle != nil && p.Code == envelope.ProblemUpstreamRateLimited && p.Retryable && p.RetryAfterSeconds != nil {
					throttled++
					return
				}
				rt.Fatalf("unexpected problem %+v", p)
			}
			ids := dataIDs(data)
			for _, id := range ids {
				if _, found := slices.BinarySearch(want, id); !found {
					rt.Fatalf("hop %d delivered %s, which does not match the filter", hop, id)
				}
			}
			got = append(got, ids...)
			if env.Complete != (len(env.IncompleteReasons) == 0) {
				rt.Fatalf("complete %v with reasons %v", env.Complete, env.IncompleteReasons)
			}
			if env.Complete {
				if args["max_items"] == 0 {
					if int(data["total_matched"].(float64)) != len(want) || len(got) != 0 {
						rt.Fatalf("counts-only complete answer: total %v, want %d", data["total_matched"], len(want))
					}
				} else {
					sort.Strings(got)
					if !slices.Equal(got, want) {
						rt.Fatalf("complete after %d hop(s) but ids differ: got %d, want %d", hop, len(got), len(want))
					}
				}
				return
			}
			if len(env.IncompleteReasons) == 0 {
				rt.Fatal("incomplete without a reason")
			}
			if env.Continuation.Kind != envelope.ContinueNextCursor || hop > 50 {
				return
			}
			args["cursor"] = env.Continuation.Cursor
		}
	})
	// A throttle is one fault of nine; a call refused after it ends a
	// check early, and must stay the exception.
	if throttled > checks/4 {
		t.Errorf("%d of %d checks ended on a rate-limit refusal", throttled, checks)
	}
	t.Logf("%d property checks, %d ended on a rate-limit refusal", checks, throttled)
}

// TestPropertyFaultyDialects_CompleteMeansTheTrueSet draws random
// collections and random upstream behaviour of every dialect (page sizes
// capped below the size asked for, full last pages without a next signal, no
// next signal at all, negative, missing or lying totals, end flags that say
// "last", ignored page or filter parameters, multi-value parameters in each
// form the API may take, values that hold the list separator, continuations
// that expire, GraphQL errors beside the data): an answer that says
// complete holds exactly the upstream's matching set. Honest upstreams must
// still be read completely.
func TestPropertyFaultyDialects_CompleteMeansTheTrueSet(t *testing.T) {
	t.Parallel()
	dialects := []string{fixtures.DialectCursor, fixtures.DialectCursorNext, fixtures.DialectLink,
		fixtures.DialectOffset, fixtures.DialectPage, fixtures.DialectContinue,
		fixtures.DialectNextURL, fixtures.DialectGraphQL, fixtures.DialectPostCursor, fixtures.DialectSearchAfter,
		fixtures.DialectContinueObject,
		// etcd's range: a key from the last item made exclusive, more
		// omitted when false, a snapshot (the revision) from the first
		// page, a compacted revision as the expiry, keys base64.
		fixtures.DialectKeyRange}
	jsonKind := map[string]bool{fixtures.DialectGraphQL: true, fixtures.DialectPostCursor: true, fixtures.DialectSearchAfter: true, fixtures.DialectKeyRange: true}
	owners := []any{"", "team-a", "team-b", nil}
	var mu sync.Mutex // the rounds run in parallel
	checks, completes := 0, 0
	byDialect := map[string]int{}
	t.Run("rounds", func(t *testing.T) {
		for round := range 10 { // 10 × rapid's 100 checks
			t.Run(strconv.Itoa(round), func(t *testing.T) {
				t.Parallel()
				rapid.Check(t, func(rt *rapid.T) {
					mu.Lock()
					checks++
					mu.Unlock()
					fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: rapid.SampledFrom(dialects).Draw(rt, "dialect")}}
					// The API's filter semantics, and a configuration that either
					// declares the multi-value form the API really takes or none.
					fl.Filter = rapid.SampledFrom([]string{"exact", "comma", "ignore"}).Draw(rt, "api_filter")
					multi := ""
					if rapid.Bool().Draw(rt, "declare_multi") {
						forms := map[string]string{"exact": "repeat", "comma": "comma", "ignore": rapid.SampledFrom([]string{"repeat", "comma"}).Draw(rt, "any_multi")}
						if jsonKind[fl.Dialect] {
							forms["exact"], forms["ignore"] = "array", rapid.SampledFrom([]string{"array", "comma"}).Draw(rt, "any_json_multi")
						}
						multi = forms[fl.Filter]
					}
					// A status holding the separator, whenever the configuration
					// says how the API reads its parameter (an API that splits a
					// parameter declared as taking one value is a wrong
					// declaration only probe can find).
					pool := statuses
					if fl.Filter != "comma" || multi == "comma" {
						pool = append(append([]string(nil), statuses...), "on hold, billing")
					}
					n := rapid.IntRange(0, 80).Draw(rt, "records")
					for i := range n {
						fl.Records = append(fl.Records, fixtures.Record{"id": fmt.Sprintf("r%03d", i),
							"status": rapid.SampledFrom(pool).Draw(rt, "status"), "owner": rapid.SampledFrom(owners).Draw(rt, "owner")})
					}
					minPage := 1
					if fl.Dialect == fixtures.DialectOffset {
						minPage = 2
					}
					pageSize := rapid.IntRange(minPage, 25).Draw(rt, "page_size")
					honest := true
					if rapid.Bool().Draw(rt, "capped") {
						fl.MaxPageSize = rapid.IntRange(minPage, 25).Draw(rt, "max_page_size")
					}
					// Pages of one item are all whole: a list that leaves its signal
					// off the last one, or empties it, cannot be told from one a
					// signal was dropped from, and a page of one cannot be asked
					// for again smaller.
					wholeOnes := (pageSize == 1 || fl.MaxPageSize == 1) && map[string]bool{fixtures.DialectCursorNext: true, fixtures.DialectContinue: true,
						fixtures.DialectContinueObject: true, fixtures.DialectKeyRange: true, fixtures.DialectLink: true, fixtures.DialectNextURL: true}[fl.Dialect]
					var pagination []string
					switch fl.Dialect {
					case fixtures.DialectOffset, fixtures.DialectPage, fixtures.DialectLink, fixtures.DialectNextURL:
						fl.Total = rapid.SampledFrom([]string{"exact", "header", "missing", "negative", "low", "high"}).Draw(rt, "total")
						if fl.Total == "header" {
							pagination = append(pagination, "total_header: X-Total-Count")
						}
						if fl.Dialect == fixtures.DialectLink && fl.Total != "header" {
							fl.Total = ""
						}
						// A total the records exceed (low) or never reach (high)
						// contradicts the list: neither is believed.
						honest = fl.Total != "high" && fl.Total != "low"
					case fixtures.DialectGraphQL, fixtures.DialectSearchAfter:
						fl.Total = rapid.SampledFrom([]string{"exact", "missing", "negative", "low", "high"}).Draw(rt, "total")
						honest = fl.Total != "high" && fl.Total != "low"
					}
					if (fl.Dialect == fixtures.DialectPostCursor || fl.Dialect == fixtures.DialectNextURL) && rapid.Bool().Draw(rt, "end_flag") {
						fl.EndFlag = true
						flag := map[string]string{fixtures.DialectPostCursor: "is_last: isLast", fixtures.DialectNextURL: "is_last: done"}[fl.Dialect]
						pagination = append(pagination, flag)
					}
					honestBefore := honest
					switch rapid.IntRange(0, 5).Draw(rt, "fault") {
					case 1:
						fl.NoNextSignal, honest = true, false
					case 2:
						fl.IgnorePage, honest = true, false
					case 3:
						fl.NoNextSignal, fl.IgnorePage, honest = true, true, false
					case 4:
						fl.NoHasMore = true
					}
					if fl.Dialect == fixtures.DialectKeyRange && fl.NoHasMore {
						// more omitted on every page reads as false: without it
						// ever shown, no end is proven.
						honest = false
					}
					if fl.Dialect == fixtures.DialectCursor && fl.NoNextSignal {
						// has_more: false on every page is an explicit lie no
						// reader can catch; the model leaves it out.
						fl.NoNextSignal, honest = false, honestBefore && !fl.IgnorePage
					}
					if fl.EndFlag && fl.NoNextSignal && fl.Dialect == fixtures.DialectNextURL {
						// done: true on a page that is not the last is the same
						// explicit lie.
						fl.NoNextSignal, honest = false, honestBefore && !fl.IgnorePage
					}
					honest = honest && !wholeOnes
					if rapid.IntRange(0, 4).Draw(rt, "expire") == 0 {
						fl.ExpireAfter, honest = rapid.IntRange(1, 4).Draw(rt, "expire_after"), false
						if fl.Dialect == fixtures.DialectGraphQL {
							pagination = append(pagination, "expiry: {match: expired}")
						}
					}
					if fl.Dialect == fixtures.DialectGraphQL && rapid.IntRange(0, 3).Draw(rt, "graphql_errors") == 0 {
						fl.GraphQLErrorPages, honest = map[int]bool{rapid.IntRange(1, 3).Draw(rt, "error_page"): true}, false
					}
					ts := httptest.NewServer(fl)
					defer ts.Close()
					d := newDirect(rt, fixtures.FaultListConfig(ts.URL, fl.Dialect, pageSize, strings.Join(pagination, ", "), multi))

					filter := map[string]any{}
					switch rapid.IntRange(0, 4).Draw(rt, "filter") {
					case 1:
						filter["status"] = rapid.SampledFrom(pool).Draw(rt, "one_status")
					case 2:
						filter["status"] = []any{pool[0], rapid.SampledFrom(pool[1:]).Draw(rt, "other_status")}
					case 3:
						filter["owner"] = nil
					case 4:
						filter["status"] = pool[len(pool)-1]
					}
					var want []string
					for _, r := range fl.Records {
						ok := true
						switch v := filter["status"].(type) {
						case string:
							ok = r["status"] == v
						case []any:
							ok = slices.Contains(v, r["status"])
						}
						if _, byOwner := filter["owner"]; byOwner {
							ok = ok && (r["owner"] == nil || r["owner"] == "")
						}
						if ok {
							want = append(want, r.ID())
						}
					}
					sort.Strings(want)
					if fl.Filter == "ignore" && len(filter) > 0 && len(want) < n {
						// The upstream returns records for a filter it was sent
						// that the filter rejects: it and airlock disagree on what
						// the filter means, and the answer says so.
						honest = false
					}
					maxItems := rapid.SampledFrom([]int{0, 7, 1000}).Draw(rt, "max_items")
					args := map[string]any{"resource": "items", "filter": filter, "fields": []any{"id"}, "max_items": maxItems,
						"max_pages": 5000, "deadline_ms": 60000}
					var got []string
					for hop := 0; ; hop++ {
						env, data := d.call("search_all", args)
						if env.Problem != nil {
							if honest {
								rt.Fatalf("an honest upstream answered with a problem: %+v", env.Problem)
							}
							return // a refusal claims nothing
						}
						got = append(got, dataIDs(data)...)
						if dup := firstDuplicate(got); dup != "" {
							rt.Fatalf("%s delivered twice across the continuation", dup)
						}
						for _, rs := range env.IncompleteReasons {
							if rs.Code == envelope.CursorExpired && env.Continuation.Kind != envelope.ContinueRestart {
								rt.Fatalf("CURSOR_EXPIRED with continuation %q, want restart", env.Continuation.Kind)
							}
						}
						if env.Complete {
							mu.Lock()
							completes++
							byDialect[fl.Dialect]++
							mu.Unlock()
							if total := int(data["total_matched"].(float64)); total != len(want) {
								rt.Fatalf("complete with total_matched %d, the upstream holds %d matches", total, len(want))
							}
							if maxItems > 0 {
								sort.Strings(got)
								if !slices.Equal(got, want) {
									rt.Fatalf("complete after %d hop(s) with %d ids, the upstream holds %d", hop, len(got), len(want))
								}
							}
							return
						}
						if env.Continuation.Kind != envelope.ContinueNextCursor || hop > 200 {
							break
						}
						args["cursor"] = env.Continuation.Cursor
					}
					if honest && n >= 2 {
						rt.Fatalf("an honest upstream of %d records was not read completely", n)
					}
				})
			})
		}
	})
	t.Logf("%d property checks, %d complete answers (by dialect: %v)", checks, completes, byDialect)
	for _, d := range dialects {
		if byDialect[d] == 0 {
			t.Errorf("no complete answer from the %s dialect: the property checked nothing there", d)
		}
	}
}
