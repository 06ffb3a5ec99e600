package tools

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
)

// claimList serves n records in the offset dialect with a total in the
// body, pages of 20; every third is disabled, every seventh has no owner.
func claimList(t *testing.T, n int, knobs func(*fixtures.FaultKnobs)) (*fixtures.FaultList, *direct) {
	t.Helper()
	recs := declRecords(n)
	for i := range recs {
		if i%3 == 0 {
			recs[i]["status"] = "disabled"
		}
		if i%7 == 0 {
			recs[i]["owner"] = nil
		}
	}
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, Records: recs}}
	if knobs != nil {
		knobs(&fl.FaultKnobs)
	}
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	return fl, newDirect(t, fixtures.FaultListConfig(ts.URL, fl.Dialect, 20, "", ""))
}

func claimArgs(filter map[string]any, extra map[string]any) map[string]any {
	a := map[string]any{"resource": "items", "max_items": 0, "count": "claimed"}
	if filter != nil {
		a["filter"] = filter
	}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

// claimOf is data.upstream_claim, nil when the answer has none.
func claimOf(data map[string]any) map[string]any {
	c, _ := data["upstream_claim"].(map[string]any)
	return c
}

// TestClaimedCount_OneRequestLabeledNeverComplete: count: claimed answers
// from the first page with the upstream's total, says it is the upstream's
// claim (a reason, a relation, the member), estimates the scan that would
// verify it, and is never complete; its cursor verifies it.
func TestClaimedCount_OneRequestLabeledNeverComplete(t *testing.T) {
	t.Parallel()
	fl, d := claimList(t, 500, nil)
	args := claimArgs(map[string]any{"status": "disabled"}, nil)
	env, data := d.call("search_all", args)
	if env.Complete || env.Status != envelope.StatusPartial || fl.Requests() != 1 {
		t.Fatalf("complete %v, status %s after %d request(s); want a partial answer from one request", env.Complete, env.Status, fl.Requests())
	}
	if data["total_matched"] != float64(167) || data["total_relation"] != envelope.RelationClaimed {
		t.Fatalf("data total %v (%v); want 167, claimed", data["total_matched"], data["total_relation"])
	}
	var rs *envelope.Reason
	for i := range env.IncompleteReasons {
		if env.IncompleteReasons[i].Code == envelope.UpstreamClaimUnverified {
			rs = &env.IncompleteReasons[i]
		}
	}
	if rs == nil || rs.Member != "total" {
		t.Fatalf("reasons %+v; want %s naming the member total", env.IncompleteReasons, envelope.UpstreamClaimUnverified)
	}
	if slices.ContainsFunc(env.IncompleteReasons, func(r envelope.Reason) bool { return r.Code == envelope.ResultLimitReached }) {
		t.Fatalf("reasons %+v: the claim's stop is not a budget's cut", env.IncompleteReasons)
	}
	// Coverage keeps what airlock counted: one page, a lower bound.
	if c := env.Coverage; c.Pages != 1 || c.TotalRelation != envelope.RelationGte || c.TotalMatched != 20 ||
		c.Sources[0].Reason != envelope.UpstreamClaimUnverified {
		t.Fatalf("coverage %+v; want one page, 20 counted, gte", c)
	}
	claim := claimOf(data)
	if claim["total"] != float64(167) || claim["member"] != "total" || claim["status"] != "unverified" ||
		claim["verify_pages"] != float64(9) || claim["verify_items"] != float64(167) {
		t.Fatalf("upstream_claim %v; want 167 from total, 9 pages of 20 to verify, unverified", claim)
	}
	if env.Continuation.Kind != envelope.ContinueNextCursor || env.Continuation.Cursor == "" {
		t.Fatalf("continuation %+v; want a cursor that verifies", env.Continuation)
	}

	// The same arguments with the cursor count every record.
	args["cursor"] = env.Continuation.Cursor
	env, data = d.call("search_all", args)
	if !env.Complete || data["total_matched"] != float64(167) || data["total_relation"] != envelope.RelationEq {
		t.Fatalf("verified: complete %v, total %v (%v), reasons %+v; want complete, 167 eq", env.Complete, data["total_matched"], data["total_relation"], env.IncompleteReasons)
	}
	if claim := claimOf(data); claim["total"] != float64(167) || claim["status"] != "confirmed" {
		t.Fatalf("upstream_claim %v; want the claim beside the count, confirmed", claim)
	}
	if env.Coverage.Pages < 9 {
		t.Fatalf("coverage %+v; want the whole list read", env.Coverage)
	}
}

// TestClaimedCount_WrongClaimVerifiesToTheTruth: the upstream says 120 and
// holds 117. The claim is 120, labeled; following its cursor counts 117,
// and the claim's disagreement is in the answer.
func TestClaimedCount_WrongClaimVerifiesToTheTruth(t *testing.T) {
	t.Parallel()
	_, d := claimList(t, 117, func(k *fixtures.FaultKnobs) { k.TotalOver = 3 })
	args := claimArgs(nil, nil)
	env, data := d.call("search_all", args)
	if env.Complete || data["total_matched"] != float64(120) || data["total_relation"] != envelope.RelationClaimed {
		t.Fatalf("claim: complete %v, total %v (%v); want 120 claimed", env.Complete, data["total_matched"], data["total_relation"])
	}
	args["cursor"] = env.Continuation.Cursor
	env, data = d.call("search_all", args)
	if data["total_matched"] != float64(117) || env.Coverage.TotalMatched != 117 {
		t.Fatalf("verified: total %v, coverage %+v; want 117 counted", data["total_matched"], env.Coverage)
	}
	if claim := claimOf(data); claim["total"] != float64(120) || claim["status"] != "contradicted" {
		t.Fatalf("upstream_claim %v; want 120 beside 117, contradicted", claim)
	}
	if env.Complete {
		t.Fatalf("a list short of its own total is not complete: %+v", env.IncompleteReasons)
	}
	if env.Continuation.Kind == envelope.ContinueNextCursor {
		t.Fatalf("continuation %+v; the list's end was reached", env.Continuation)
	}
}

// TestClaimedCount_WithItems: a claim asked beside items delivers the
// first page's matches, and the cursor goes on delivering while it
// verifies.
func TestClaimedCount_WithItems(t *testing.T) {
	t.Parallel()
	_, d := claimList(t, 90, nil)
	args := claimArgs(map[string]any{"status": "disabled"}, map[string]any{"max_items": 100})
	env, data := d.call("search_all", args)
	ids := dataIDs(data)
	if env.Complete || data["total_matched"] != float64(30) || len(ids) != 20 {
		t.Fatalf("complete %v, total %v, %d items; want the claim of 30 and the first page's 20", env.Complete, data["total_matched"], len(ids))
	}
	args["cursor"] = env.Continuation.Cursor
	env, data = d.call("search_all", args)
	ids = append(ids, dataIDs(data)...)
	if !env.Complete || data["total_matched"] != float64(30) || len(ids) != 30 || claimOf(data)["status"] != "confirmed" {
		t.Fatalf("complete %v, total %v, %d items, claim %v; want all 30, confirmed", env.Complete, data["total_matched"], len(ids), claimOf(data))
	}
}

// TestDefaultCount_IsVerifiedAsBefore: without count (or with verified)
// search_all counts every record, with nothing of a claim in the answer.
func TestDefaultCount_IsVerifiedAsBefore(t *testing.T) {
	t.Parallel()
	for _, count := range []any{nil, "verified"} {
		fl, d := claimList(t, 500, nil)
		args := map[string]any{"resource": "items", "max_items": 0, "filter": map[string]any{"status": "disabled"}}
		if count != nil {
			args["count"] = count
		}
		env, data := d.call("search_all", args)
		if !env.Complete || data["total_matched"] != float64(167) || data["total_relation"] != envelope.RelationEq || fl.Requests() < 9 {
			t.Fatalf("count %v: complete %v, total %v (%v) after %d requests; want every page read, 167 eq", count, env.Complete, data["total_matched"], data["total_relation"], fl.Requests())
		}
		if claimOf(data) != nil || warningOf(env, envelope.WarnClaimUnavailable) != nil {
			t.Fatalf("count %v: data %v, warnings %+v; want nothing of a claim", count, data, env.Warnings)
		}
	}
}

// TestClaimedCount_RefusedAndVerified: where the upstream's total cannot
// stand for the query as asked (a filter airlock applies alone, groups, no
// total declared, a first page without a readable total), no number is
// claimed: the answer is the verified count, and CLAIM_UNAVAILABLE says
// why.
func TestClaimedCount_RefusedAndVerified(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		knobs   func(*fixtures.FaultKnobs)
		args    map[string]any
		total   float64
		signal  string
		fields  []string
		member  string
		reasons []envelope.ReasonCode
	}{
		{name: "filter applied by airlock", args: claimArgs(map[string]any{"owner": nil}, nil), total: 72,
			signal: "filter_applied_by_airlock", fields: []string{"filter.owner"}},
		{name: "filter applied by airlock beside one sent", args: claimArgs(map[string]any{"owner": nil, "status": "disabled"}, nil), total: 24,
			signal: "filter_applied_by_airlock", fields: []string{"filter.owner"}},
		{name: "group_by", args: claimArgs(nil, map[string]any{"group_by": []any{"status"}}), total: 500,
			signal: "group_by", fields: []string{"status"}},
		{name: "total missing on the first page", knobs: func(k *fixtures.FaultKnobs) { k.Total = "missing" },
			args: claimArgs(map[string]any{"status": "disabled"}, nil), total: 167, signal: "total_absent", member: "total"},
		{name: "total unreadable on the first page", knobs: func(k *fixtures.FaultKnobs) { k.Total = "text" },
			args: claimArgs(map[string]any{"status": "disabled"}, nil), total: 167, signal: "total_unreadable", member: "total",
			reasons: []envelope.ReasonCode{envelope.SignalUnreadable}},
		{name: "no total declared", knobs: func(k *fixtures.FaultKnobs) { k.Dialect = fixtures.DialectCursor },
			args: claimArgs(map[string]any{"status": "disabled"}, nil), total: 167, signal: "no_declared_total"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, d := claimList(t, 500, tc.knobs)
			env, data := d.call("search_all", tc.args)
			if data["total_matched"] != tc.total || data["total_relation"] == envelope.RelationClaimed || claimOf(data) != nil {
				t.Fatalf("total %v (%v), claim %v; want %v verified and no claim", data["total_matched"], data["total_relation"], claimOf(data), tc.total)
			}
			var codes []envelope.ReasonCode
			for _, rs := range env.IncompleteReasons {
				codes = append(codes, rs.Code)
			}
			if !slices.Equal(codes, tc.reasons) || env.Complete != (len(tc.reasons) == 0) {
				t.Fatalf("complete %v, reasons %v; want %v", env.Complete, codes, tc.reasons)
			}
			w := warningOf(env, envelope.WarnClaimUnavailable)
			if w == nil || w.Signal != tc.signal || !slices.Equal(w.Fields, tc.fields) || w.Member != tc.member {
				t.Fatalf("warnings %+v; want %s with signal %s, fields %v, member %q", env.Warnings, envelope.WarnClaimUnavailable, tc.signal, tc.fields, tc.member)
			}
			if tc.member != "" && (w.Page == nil || *w.Page != 1) {
				t.Fatalf("warning %+v; want page 1 named", w)
			}
		})
	}
}

// TestClaimedCount_OnePageListIsVerified: a list whose first page proves
// its end (no next URL) needs no claim: the answer is the count, complete.
func TestClaimedCount_OnePageListIsVerified(t *testing.T) {
	t.Parallel()
	_, d := claimList(t, 15, func(k *fixtures.FaultKnobs) { k.Dialect = fixtures.DialectNextURL })
	env, data := d.call("search_all", claimArgs(nil, nil))
	if !env.Complete || data["total_matched"] != float64(15) || data["total_relation"] != envelope.RelationEq || claimOf(data) != nil {
		t.Fatalf("complete %v, total %v (%v), claim %v; want 15 eq, no claim", env.Complete, data["total_matched"], data["total_relation"], claimOf(data))
	}
}

// TestClaimedCount_DeclaredExactTotalIsProven: where the total is declared
// exact, a counts-only query is answered from the first page as a proven
// count already; asking for the claim gives that same answer.
func TestClaimedCount_DeclaredExactTotalIsProven(t *testing.T) {
	t.Parallel()
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, Records: declRecords(500)}}
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	d := newDirect(t, fixtures.FaultListConfig(ts.URL, fl.Dialect, 20, "total_exact: true", ""))
	env, data := d.call("search_all", claimArgs(map[string]any{"status": "active"}, nil))
	if !env.Complete || data["total_matched"] != float64(500) || data["total_relation"] != envelope.RelationEq || claimOf(data) != nil || fl.Requests() != 1 {
		t.Fatalf("complete %v, total %v (%v), claim %v after %d requests; want 500 eq from one request", env.Complete, data["total_matched"], data["total_relation"], claimOf(data), fl.Requests())
	}
}
