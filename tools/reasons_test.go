package tools

import (
	"fmt"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

const visibilityYAML = "visibility: {header: X-Visibility, restricted_values: [restricted]}"

// small returns a collection of n records shaped like subscriptions, where
// the records for which match returns true are past_due with customer_id
// cus_match, and the others active. Filtering on customer_id happens only in
// airlock (the filter is not sent upstream), so the upstream serves every
// record.
func small(n int, match func(i int) bool) *fixtures.Collection {
	var recs []fixtures.Record
	for i := 1; i <= n; i++ {
		status, customer := "active", "cus_other"
		if match(i) {
			status, customer = "past_due", "cus_match"
		}
		recs = append(recs, fixtures.Record{"id": fmt.Sprintf("sub_%05d", i), "customer_id": customer, "customer_name": "Northwind Parts Ltd",
			"region": fixtures.Regions[i%3], "status": status, "amount_due": 100, "currency": "EUR", "tags": []any{},
			"collection_paused": false, "version": 1, "updated_at": "2026-11-01T00:00:00Z"})
	}
	return fixtures.NewCollection(recs)
}

func res(dialect string, extra string) fixtures.Resource {
	return fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: dialect, PageSize: 20, Extra: extra}
}

// reasonCase is one real condition that must produce one reason code, in
// a populated and an empty variant.
type reasonCase struct {
	name     string
	code     envelope.ReasonCode
	resource fixtures.Resource
	setup    func(h *harness)
	args     map[string]any
	empty    bool   // the answer must carry no items
	cont     string // continuation kind
	check    func(t *testing.T, r result)
}

func pastDue(extra map[string]any) map[string]any {
	a := map[string]any{"resource": "subs", "filter": map[string]any{"status": "past_due"}, "max_items": 1000}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

// local filters on a field airlock filters itself, so that the upstream
// serves every record and early pages can hold no match.
func local(extra map[string]any) map[string]any {
	a := pastDue(extra)
	a["filter"] = map[string]any{"customer_id": "cus_match"}
	return a
}

func reasonCases() []reasonCase {
	everyThird := func(i int) bool { return i%3 == 0 }
	none := func(int) bool { return false }
	lateOnly := func(i int) bool { return i > 150 }
	return []reasonCase{
		{name: "more pages, populated", code: envelope.MorePagesAvailable, resource: res(fixtures.DialectCursor, ""),
			setup: func(h *harness) { h.api.SetCollection(fixtures.DatasetSubscriptions, small(100, everyThird)) },
			args:  pastDue(map[string]any{"max_items": 5}), cont: envelope.ContinueNextCursor,
			check: func(t *testing.T, r result) {
				if len(r.ids()) != 5 || r.totalMatched() != 33 || r.data["total_relation"] != "eq" {
					t.Fatalf("want 5 of exactly 33, got %d of %v (%v)", len(r.ids()), r.totalMatched(), r.data["total_relation"])
				}
			}},
		{name: "more pages, empty first page", code: envelope.MorePagesAvailable, resource: res(fixtures.DialectCursorNext, ""), empty: true,
			setup: func(h *harness) {
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{EmptyFirstPage: true})
			},
			args: pastDue(map[string]any{"max_pages": 1}), cont: envelope.ContinueNextCursor},
		{name: "caller page limit, populated", code: envelope.ResultLimitReached, resource: res(fixtures.DialectOffset, ""),
			args: pastDue(map[string]any{"max_pages": 2}), cont: envelope.ContinueNextCursor,
			check: func(t *testing.T, r result) {
				if rs := r.reason(envelope.ResultLimitReached); rs.LimitSource != envelope.LimitCaller || *rs.Limit != 2 {
					t.Fatalf("want caller limit 2, got %+v", rs)
				}
				if r.data["total_relation"] != "gte" {
					t.Fatal("a cut scan's total must be a lower bound")
				}
			}},
		{name: "caller page limit, empty", code: envelope.ResultLimitReached, resource: res(fixtures.DialectOffset, ""), empty: true,
			setup: func(h *harness) { h.api.SetCollection(fixtures.DatasetSubscriptions, small(200, lateOnly)) },
			args:  local(map[string]any{"max_pages": 2}), cont: envelope.ContinueNextCursor},
		{name: "airlock's default item limit, populated", code: envelope.ResultLimitReached, resource: res(fixtures.DialectOffset, ""),
			setup: func(h *harness) { h.api.SetCollection(fixtures.DatasetSubscriptions, small(2400, everyThird)) },
			args:  map[string]any{"resource": "subs", "filter": map[string]any{"status": "past_due"}, "fields": []any{"id"}}, cont: envelope.ContinueNextCursor,
			check: func(t *testing.T, r result) {
				// The caller set no max_items: the answer holds what the
				// response budget takes, and says the budget is airlock's.
				rs := r.reason(envelope.ResultLimitReached)
				if rs.LimitSource != envelope.LimitAirlock || *rs.Limit != config.DefaultResponseBytes || len(r.ids()) <= config.DefaultMaxItems || len(r.ids()) >= 800 {
					t.Fatalf("want the response budget %d as the limit, got %+v and %d items", config.DefaultResponseBytes, rs, len(r.ids()))
				}
			}},
		{name: "caller item limit, populated", code: envelope.ResultLimitReached, resource: res(fixtures.DialectOffset, ""),
			setup: func(h *harness) { h.api.SetCollection(fixtures.DatasetSubscriptions, small(300, everyThird)) },
			args:  pastDue(map[string]any{"max_items": 10, "fields": []any{"id"}}), cont: envelope.ContinueNextCursor,
			check: func(t *testing.T, r result) {
				if rs := r.reason(envelope.ResultLimitReached); rs.LimitSource != envelope.LimitCaller || *rs.Limit != 10 || len(r.ids()) != 10 {
					t.Fatalf("want the caller's limit 10, got %+v and %d items", rs, len(r.ids()))
				}
			}},
		{name: "upstream's claim, populated", code: envelope.UpstreamClaimUnverified, resource: res(fixtures.DialectOffset, ""),
			setup: func(h *harness) { h.api.SetCollection(fixtures.DatasetSubscriptions, small(300, everyThird)) },
			args:  pastDue(map[string]any{"count": "claimed", "max_items": 5}), cont: envelope.ContinueNextCursor,
			check: func(t *testing.T, r result) {
				if r.totalMatched() != 100 || r.data["total_relation"] != "claimed" || r.env.Coverage.Pages != 1 {
					t.Fatalf("want the claim of 100 from one page, got %v (%v) after %d pages", r.totalMatched(), r.data["total_relation"], r.env.Coverage.Pages)
				}
			}},
		{name: "upstream's claim, counts only", code: envelope.UpstreamClaimUnverified, resource: res(fixtures.DialectOffset, ""), empty: true,
			setup: func(h *harness) { h.api.SetCollection(fixtures.DatasetSubscriptions, small(300, everyThird)) },
			args:  pastDue(map[string]any{"count": "claimed", "max_items": 0}), cont: envelope.ContinueNextCursor},
		{name: "upstream cap, populated", code: envelope.ResultLimitReached, resource: res(fixtures.DialectCursor, "result_cap: 100"),
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(300, everyThird))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{ResultCap: 100})
			},
			args: map[string]any{"resource": "subs", "max_items": 1000, "fields": []any{"id"}}, cont: envelope.ContinueNarrowQuery,
			check: func(t *testing.T, r result) {
				if rs := r.reason(envelope.ResultLimitReached); rs.LimitSource != envelope.LimitUpstream || *rs.Limit != 100 {
					t.Fatalf("want upstream limit 100, got %+v", rs)
				}
				if len(r.ids()) != 100 {
					t.Fatalf("want the 100 items the upstream served, got %d", len(r.ids()))
				}
			}},
		{name: "upstream stops short of its own total, empty", code: envelope.ResultLimitReached, resource: res(fixtures.DialectOffset, ""), empty: true,
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(200, lateOnly))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{ResultCap: 100})
			},
			args: local(nil), cont: envelope.ContinueNarrowQuery,
			check: func(t *testing.T, r result) {
				if rs := r.reason(envelope.ResultLimitReached); rs.LimitSource != envelope.LimitUpstream {
					t.Fatalf("want an upstream limit, got %+v", rs)
				}
			}},
		{name: "signal unreadable, populated", code: envelope.SignalUnreadable, resource: res(fixtures.DialectCursorNext, ""),
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(100, everyThird))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{ObjectCursor: true})
			},
			args: pastDue(nil), cont: envelope.ContinueNone,
			check: func(t *testing.T, r result) {
				rs := r.reason(envelope.SignalUnreadable)
				if rs.Member != "response_metadata.next_cursor" || rs.Page == nil || *rs.Page != 1 || r.data["total_relation"] != "gte" {
					t.Fatalf("want the member and page 1 named and a lower bound; got %+v, %v", rs, r.data["total_relation"])
				}
				if src := r.env.Coverage.Sources[0]; src.End != envelope.EndUnproven || src.EndSignal != dialect.SignalUnreadable {
					t.Fatalf("coverage must say the end is unproven: %+v", src)
				}
			}},
		{name: "signal unreadable, empty first page", code: envelope.SignalUnreadable, resource: res(fixtures.DialectCursorNext, ""), empty: true,
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(100, everyThird))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{ObjectCursor: true, EmptyFirstPage: true})
			},
			args: pastDue(nil), cont: envelope.ContinueNone,
			check: func(t *testing.T, r result) {
				if r.env.Coverage.TotalMatched != 0 || r.data["total_relation"] != "gte" {
					t.Fatalf("an empty page beside an unreadable cursor must not count 0 as a total: %+v", r.env.Coverage)
				}
			}},
		{name: "end not proven, populated", code: envelope.EndNotProven, resource: res(fixtures.DialectLink, ""),
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(100, everyThird))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{OmitNextSignal: true})
			},
			args: pastDue(nil), cont: envelope.ContinueNone,
			check: func(t *testing.T, r result) {
				// A whole first page without a Link header, asked for again
				// one item smaller, still without one.
				rs := r.reason(envelope.EndNotProven)
				if rs.Signal != dialect.SignalMissingOnFull || len(r.ids()) == 0 || r.data["total_relation"] != "gte" {
					t.Fatalf("want items from the first page, a lower bound and signal %s; got %+v, %d items, %v", dialect.SignalMissingOnFull, rs, len(r.ids()), r.data["total_relation"])
				}
				if src := r.env.Coverage.Sources[0]; src.End != envelope.EndUnproven || src.EndSignal != dialect.SignalMissingOnFull {
					t.Fatalf("coverage must say the end is unproven: %+v", src)
				}
			}},
		{name: "end not proven, empty", code: envelope.EndNotProven, resource: res(fixtures.DialectLink, ""), empty: true,
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(200, lateOnly))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{OmitNextSignal: true})
			},
			args: local(nil), cont: envelope.ContinueNone},
		{name: "conflicting evidence, populated", code: envelope.ConflictingEvidence, resource: res(fixtures.DialectOffset, ""),
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(60, everyThird))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{IgnoreFilters: true})
			},
			args: pastDue(nil), cont: envelope.ContinueNone,
			check: func(t *testing.T, r result) {
				rs := r.reason(envelope.ConflictingEvidence)
				if rs.Signal != dialect.SignalFilterConflict || rs.Filter != "status" || rs.Sent != "past_due" || rs.Seen != "active" || *rs.Count != 40 || len(r.ids()) != 20 {
					t.Fatalf("want the 20 past_due records and the filter's two sides named, got %+v and %d items", rs, len(r.ids()))
				}
			}},
		{name: "conflicting evidence, empty", code: envelope.ConflictingEvidence, resource: res(fixtures.DialectOffset, ""), empty: true,
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(60, none))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{IgnoreFilters: true})
			},
			args: pastDue(nil), cont: envelope.ContinueNone},
		{name: "response budget, populated", code: envelope.ResultLimitReached, resource: res(fixtures.DialectOffset, ""),
			args: map[string]any{"resource": "subs", "max_items": 1000, "fields": []any{"id", "customer_name", "tags", "updated_at"}},
			cont: envelope.ContinueNextCursor,
			check: func(t *testing.T, r result) {
				rs := r.reason(envelope.ResultLimitReached)
				if rs.LimitSource != envelope.LimitAirlock || len(r.ids()) >= 1000 || len(r.raw) > 32<<10 {
					t.Fatalf("want an airlock response budget under 32 KB, got %+v, %d items, %d bytes", rs, len(r.ids()), len(r.raw))
				}
			}},
		{name: "deadline, populated", code: envelope.TimeBudgetExceeded, resource: res(fixtures.DialectCursor, ""),
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(200, everyThird))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{SlowRequests: map[int]time.Duration{3: 3 * time.Second}})
			},
			args: pastDue(map[string]any{"deadline_ms": 700}), cont: envelope.ContinueNextCursor,
			check: func(t *testing.T, r result) {
				if len(r.ids()) == 0 || r.env.Coverage.Pages != 2 {
					t.Fatalf("want the two pages read before the deadline, got %d pages", r.env.Coverage.Pages)
				}
			}},
		{name: "deadline, empty", code: envelope.TimeBudgetExceeded, resource: res(fixtures.DialectCursor, ""), empty: true,
			setup: func(h *harness) {
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{SlowRequests: map[int]time.Duration{1: 3 * time.Second}})
			},
			args: pastDue(map[string]any{"deadline_ms": 300}), cont: envelope.ContinueNextCursor,
			check: func(t *testing.T, r result) {
				if s := r.env.Coverage.Sources[0]; s.Status != envelope.SourceNotStarted {
					t.Fatalf("a source with no page read is not_started, got %q", s.Status)
				}
			}},
		{name: "partition down, populated", code: envelope.SourceUnavailable,
			resource: res(fixtures.DialectOffset, "sources:\n  - {name: eu, params: {region: eu}, match: {region: eu}}\n  - {name: us, params: {region: us}, match: {region: us}}\n  - {name: apac, params: {region: apac}, match: {region: apac}}"),
			setup: func(h *harness) {
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{DownPartitions: map[string]bool{"apac": true}, RetryAfter: "20"})
			},
			args: pastDue(nil), cont: envelope.ContinueRetryAfter,
			check: func(t *testing.T, r result) {
				if rs := r.reason(envelope.SourceUnavailable); rs.Source != "apac" || *rs.RetryAfterSeconds != 20 {
					t.Fatalf("want apac down for 20 s, got %+v", rs)
				}
				for _, it := range r.items() {
					if it["region"] == "apac" {
						t.Fatal("an item from the down partition")
					}
				}
				if r.env.Continuation.Cursor == "" {
					t.Fatal("retry_after must carry the cursor that retries the down source")
				}
			}},
		{name: "partition down, empty", code: envelope.SourceUnavailable,
			resource: res(fixtures.DialectOffset, "sources:\n  - {name: eu, params: {region: eu}, match: {region: eu}}\n  - {name: apac, params: {region: apac}, match: {region: apac}}"),
			setup: func(h *harness) {
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{DownPartitions: map[string]bool{"apac": true}})
			},
			args: pastDue(map[string]any{"filter": map[string]any{"status": "past_due", "region": "apac"}}), empty: true, cont: envelope.ContinueRetryAfter,
			check: func(t *testing.T, r result) {
				if len(r.env.Coverage.Sources) != 1 {
					t.Fatalf("the eu source is out of the filter's scope and must not be scanned: %+v", r.env.Coverage.Sources)
				}
			}},
		{name: "restricted view, populated", code: envelope.VisibilityRestricted, resource: res(fixtures.DialectCursor, visibilityYAML),
			setup: func(h *harness) { h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Restricted: true}) },
			args:  pastDue(map[string]any{"fields": []any{"id"}}), cont: envelope.ContinueNone},
		{name: "restricted view, empty", code: envelope.VisibilityRestricted, resource: res(fixtures.DialectCursor, visibilityYAML), empty: true,
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(50, none))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Restricted: true})
			},
			args: pastDue(nil), cont: envelope.ContinueNone},
		{name: "upstream cursor expired, populated", code: envelope.CursorExpired, resource: res(fixtures.DialectContinue, ""),
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(100, everyThird))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{ExpireContinueAfter: 2})
			},
			args: local(nil), cont: envelope.ContinueRestart,
			check: func(t *testing.T, r result) {
				if len(r.ids()) != 13 {
					t.Fatalf("want the 13 matches of the two pages read before expiry, got %d", len(r.ids()))
				}
				if r.env.Continuation.Cursor != "" {
					t.Fatal("an expired scan must never offer a cursor that would merge it with a new one")
				}
			}},
		{name: "upstream cursor expired, empty", code: envelope.CursorExpired, resource: res(fixtures.DialectContinue, ""), empty: true,
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(200, lateOnly))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{ExpireContinueAfter: 1})
			},
			args: local(nil), cont: envelope.ContinueRestart},
		{name: "rate limited, populated", code: envelope.RateLimited, resource: res(fixtures.DialectCursor, ""),
			setup: func(h *harness) {
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Throttle: &fixtures.Throttle{After: 2, For: 40 * time.Second}})
			},
			args: pastDue(nil), cont: envelope.ContinueRetryAfter,
			check: func(t *testing.T, r result) {
				if rs := r.reason(envelope.RateLimited); *rs.RetryAfterSeconds < 39 {
					t.Fatalf("want the upstream's wait, got %+v", rs)
				}
				if *r.env.Continuation.RetryAfterSeconds < 39 || r.env.Continuation.Cursor == "" {
					t.Fatalf("want retry_after with a cursor, got %+v", r.env.Continuation)
				}
			}},
		{name: "rate limited, empty", code: envelope.RateLimited, resource: res(fixtures.DialectCursor, ""), empty: true,
			setup: func(h *harness) {
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Throttle: &fixtures.Throttle{After: 0, For: 40 * time.Second}})
			},
			args: pastDue(nil), cont: envelope.ContinueRetryAfter},
		{name: "upstream says incomplete, populated", code: envelope.UpstreamReportedIncomplete, resource: res(fixtures.DialectOffset, "incomplete: {flags: [incomplete_results]}"),
			setup: func(h *harness) {
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Incomplete: "incomplete_results"})
			},
			args: pastDue(map[string]any{"fields": []any{"id"}}), cont: envelope.ContinueNarrowQuery,
			check: func(t *testing.T, r result) {
				if rs := r.reason(envelope.UpstreamReportedIncomplete); rs.Signal != "incomplete_results" {
					t.Fatalf("want the signal named, got %+v", rs)
				}
			}},
		{name: "upstream total is a lower bound, empty", code: envelope.UpstreamReportedIncomplete, resource: res(fixtures.DialectOffset, "incomplete: {total_relation: total_relation}"), empty: true,
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(50, none))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{TotalRelation: "gte"})
			},
			args: pastDue(nil), cont: envelope.ContinueNarrowQuery,
			check: func(t *testing.T, r result) {
				if rs := r.reason(envelope.UpstreamReportedIncomplete); rs.Signal != "total_gte" {
					t.Fatalf("want total_gte, got %+v", rs)
				}
			}},
		{name: "collection shrank between pages, populated", code: envelope.InconsistentSnapshot, resource: res(fixtures.DialectOffset, ""),
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(100, everyThird))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Mutate: func(n int, c *fixtures.Collection) {
					if n == 2 {
						c.Delete("sub_00003")
					}
				}})
			},
			args: pastDue(nil), cont: envelope.ContinueRestart},
		{name: "collection shrank between pages, empty", code: envelope.InconsistentSnapshot, resource: res(fixtures.DialectPage, ""), empty: true,
			setup: func(h *harness) {
				h.api.SetCollection(fixtures.DatasetSubscriptions, small(100, none))
				h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Mutate: func(n int, c *fixtures.Collection) {
					if n == 2 {
						c.Delete("sub_00004")
					}
				}})
			},
			args: local(nil), cont: envelope.ContinueRestart},
		{name: "records without id withheld, populated", code: envelope.ContractViolation, resource: res(fixtures.DialectOffset, ""),
			setup: func(h *harness) {
				c := small(60, everyThird)
				c.Update("sub_00009", func(r fixtures.Record) { delete(r, "id") })
				h.api.SetCollection(fixtures.DatasetSubscriptions, c)
			},
			args: pastDue(nil), cont: envelope.ContinueNone,
			check: func(t *testing.T, r result) {
				rs := r.reason(envelope.ContractViolation)
				if rs.Field != "id" || rs.Rule != "required" || *rs.Count != 1 || len(r.ids()) != 19 {
					t.Fatalf("want one withheld record and 19 returned, got %+v and %d", rs, len(r.ids()))
				}
			}},
		{name: "records without id withheld, empty", code: envelope.ContractViolation, resource: res(fixtures.DialectCursorNext, ""), empty: true,
			setup: func(h *harness) {
				c := small(3, func(i int) bool { return i == 2 })
				c.Update("sub_00002", func(r fixtures.Record) { delete(r, "id") })
				h.api.SetCollection(fixtures.DatasetSubscriptions, c)
			},
			args: pastDue(nil), cont: envelope.ContinueNone},
		// A search the upstream judges (here one that matches the status
		// exactly, as the demo API does): what it returns is its claim, and
		// neither the rest nor nothing at all proves an absence.
		{name: "upstream search, populated", code: envelope.SearchMatchesUnverified, resource: searchRes(),
			setup: func(h *harness) { h.api.SetCollection(fixtures.DatasetSubscriptions, small(40, everyThird)) },
			args:  map[string]any{"resource": "subs", "filter": map[string]any{"find": "past_due"}, "max_items": 1000}, cont: envelope.ContinueNone,
			check: func(t *testing.T, r result) {
				if len(r.ids()) != 13 || r.reason(envelope.SearchMatchesUnverified).Signal != dialect.SignalSearch {
					t.Fatalf("want the 13 records the search returned and the search's reason, got %d and %+v", len(r.ids()), r.env.IncompleteReasons)
				}
				if s := r.env.Scope.Search; s == nil || s.Filters[0] != "find" || s.Params[0] != "status" || s.MatchedBy != "upstream" {
					t.Fatalf("scope.search = %+v, want it to name the search", s)
				}
			}},
		{name: "upstream search, empty", code: envelope.SearchMatchesUnverified, resource: searchRes(), empty: true,
			setup: func(h *harness) { h.api.SetCollection(fixtures.DatasetSubscriptions, small(40, everyThird)) },
			args:  map[string]any{"resource": "subs", "filter": map[string]any{"find": "no such words"}, "max_items": 0}, cont: envelope.ContinueNone,
			check: func(t *testing.T, r result) {
				// Counts only, and the scan reached a proven end: still
				// not proof that nothing matches.
				if r.totalMatched() != 0 || r.env.Coverage.Sources[0].End != envelope.EndProven {
					t.Fatalf("want 0 matched over a proven end, got %v and %+v", r.totalMatched(), r.env.Coverage.Sources)
				}
			}},
	}
}

// searchRes is the subscriptions resource with find, a search carried by
// the status parameter (the demo API matches it exactly).
func searchRes() fixtures.Resource {
	r := res(fixtures.DialectCursor, "")
	r.ExtraFilters = []string{"find: {param: status, search: true, description: the upstream's own search}"}
	return r
}

// TestEveryReadReason_PopulatedAndEmpty makes every read-side reason appear
// from a real upstream condition, with and without items, and checks the
// decision fields an agent relies on.
func TestEveryReadReason_PopulatedAndEmpty(t *testing.T) {
	t.Parallel()
	covered := map[envelope.ReasonCode][2]bool{}
	for _, tc := range reasonCases() {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withResources(tc.resource), withEnv(testEnv))
			if tc.setup != nil {
				tc.setup(h)
			}
			r := h.call("search_all", tc.args)
			if r.env.Problem != nil {
				t.Fatalf("unexpected problem %+v", r.env.Problem)
			}
			if r.env.Status != envelope.StatusPartial || r.env.Complete {
				t.Fatalf("want partial and not complete, got %q %v", r.env.Status, r.env.Complete)
			}
			if !r.env.HasReason(tc.code) {
				t.Fatalf("want reason %s, got %v", tc.code, r.reasonCodes())
			}
			if r.env.Continuation.Kind != tc.cont {
				t.Fatalf("want continuation %s, got %+v", tc.cont, r.env.Continuation)
			}
			if got := len(r.ids()); (got == 0) != tc.empty {
				t.Fatalf("empty variant %v, got %d items", tc.empty, got)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
			v := covered[tc.code]
			v[boolIndex(tc.empty)] = true
			covered[tc.code] = v
		})
	}
	for _, c := range envelope.Codes() {
		switch envelope.ReasonCode(c.Code) {
		case envelope.OperationRunning:
			continue // a write-side reason: TestCommit_WaitBudgetAnswersRunningThenPolls
		case envelope.TargetsUnsettled:
			continue // a write-side reason: the write fault tests
		}
		if c.Kind == envelope.KindReason && covered[envelope.ReasonCode(c.Code)] != [2]bool{true, true} {
			t.Errorf("reason %s lacks a populated or an empty case: %v", c.Code, covered[envelope.ReasonCode(c.Code)])
		}
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestEmptyFirstPageWithMorePages_IsNotComplete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withResources(res(fixtures.DialectCursorNext, "")), withEnv(testEnv))
	h.api.SetCollection(fixtures.DatasetSubscriptions, small(30, func(i int) bool { return i == 30 }))
	h.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{EmptyFirstPage: true})

	first := h.call("search_all", pastDue(map[string]any{"max_pages": 1}))
	if first.env.Complete || len(first.ids()) != 0 || first.env.Continuation.Kind != envelope.ContinueNextCursor {
		t.Fatalf("an empty first page that continues must not be complete: %+v", first.env)
	}
	// Continuing reads the rest and finds the one match the first page hid.
	next := h.call("search_all", pastDue(map[string]any{"cursor": first.env.Continuation.Cursor}))
	if !next.env.Complete || len(next.ids()) != 1 || next.ids()[0] != "sub_00030" {
		t.Fatalf("continuing must find the record: complete %v ids %v reasons %v", next.env.Complete, next.ids(), next.reasonCodes())
	}
	// Without a page limit the same scan continues past the empty page in one call.
	whole := h.call("search_all", pastDue(nil))
	if !whole.env.Complete || len(whole.ids()) != 1 {
		t.Fatalf("the whole scan must continue past the empty page: %v %v", whole.env.Complete, whole.ids())
	}
}
