package tools

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
)

// TestExpiredUpstreamCursor_RestartsAndNeverMerges: a Slack-style cursor
// that expires while an agent pages through search_all answers
// CURSOR_EXPIRED with a restart continuation (never a problem that blames
// the request), nothing was delivered twice before it, and the restart
// without a cursor delivers the whole list once.
func TestExpiredUpstreamCursor_RestartsAndNeverMerges(t *testing.T) {
	t.Parallel()
	for _, d := range []string{fixtures.DialectCursorNext, fixtures.DialectNextURL, fixtures.DialectGraphQL, fixtures.DialectPostCursor} {
		t.Run(d, func(t *testing.T) {
			fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: d, Records: declRecords(45)}}
			fl.SetExpireAfter(2)
			ts := httptest.NewServer(fl)
			t.Cleanup(ts.Close)
			pagination := ""
			if d == fixtures.DialectGraphQL {
				pagination = "expiry: {match: expired}"
			}
			h := newDirect(t, fixtures.FaultListConfig(ts.URL, d, 10, pagination, ""))
			args := map[string]any{"resource": "items", "fields": []any{"id"}, "max_items": 10, "max_pages": 1}
			var got []string
			var last *envelope.Envelope
			for hop := 0; hop < 10; hop++ {
				env, data := h.call("search_all", args)
				if env.Problem != nil {
					t.Fatalf("call %d: problem %s; an expired cursor is CURSOR_EXPIRED, not a refusal", hop, env.Problem.Code)
				}
				got = append(got, dataIDs(data)...)
				last = env
				if env.Continuation.Kind != envelope.ContinueNextCursor {
					break
				}
				args["cursor"] = env.Continuation.Cursor
			}
			if last.Complete || last.Continuation.Kind != envelope.ContinueRestart || !hasReasonCode(last, envelope.CursorExpired) {
				t.Fatalf("last answer complete %v, continuation %s, reasons %+v; want CURSOR_EXPIRED with restart", last.Complete, last.Continuation.Kind, last.IncompleteReasons)
			}
			if dup := firstDuplicate(got); dup != "" || len(got) != 20 {
				t.Fatalf("before the expiry: %d ids delivered (duplicate %q); want the two pages read, 20, once each", len(got), dup)
			}
			fl.SetExpireAfter(0)
			restart := map[string]any{"resource": "items", "fields": []any{"id"}, "max_items": 1000}
			env, data := h.call("search_all", restart)
			ids := dataIDs(data)
			sort.Strings(ids)
			var want []string
			for _, r := range fl.Records {
				want = append(want, r.ID())
			}
			if !env.Complete || !slices.Equal(ids, want) {
				t.Fatalf("the restart: complete %v with %d ids; want the whole list of %d, once", env.Complete, len(ids), len(want))
			}
		})
	}
}

// TestNullFilterOverEmptyStrings_WarnsTheAgent: asked for records with
// no owner on an API that writes "" for it, the answer counts only real
// nulls and warns, naming the values and the setting, so that the agent
// does not act on a literally true zero.
func TestNullFilterOverEmptyStrings_WarnsTheAgent(t *testing.T) {
	t.Parallel()
	recs := declRecords(40)
	for i := range recs {
		if i%4 == 0 {
			recs[i]["owner"] = ""
		}
	}
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, Records: recs}}
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	cfg := fixtures.FaultListConfig(ts.URL, fl.Dialect, 20, "", "")
	cfg = []byte(strings.Replace(string(cfg), `null_values: [""]`, "", 1))
	d := newDirect(t, cfg)
	env, data := d.call("search_all", map[string]any{"resource": "items", "max_items": 0, "filter": map[string]any{"owner": nil}})
	if !env.Complete || data["total_matched"] != float64(0) {
		t.Fatalf("complete %v, total %v; want a complete 0 (no owner is null)", env.Complete, data["total_matched"])
	}
	w := warningOf(env, envelope.WarnNullLikeValues)
	if w == nil || fmt.Sprint(w.Values) != `[""]` || w.Count == nil || *w.Count != 10 || !slices.Equal(w.Fields, []string{"owner"}) {
		t.Fatalf("warnings %+v; want NULL_LIKE_VALUES naming owner and \"\" on 10 records", env.Warnings)
	}
}

// TestGraphQLErrorsWithoutData_AreAProblemQuotingTheAPI: a GraphQL answer
// with errors and data null is never read as an empty page: the call ends
// with UPSTREAM_GRAPHQL_ERRORS, quoting the API's words.
func TestGraphQLErrorsWithoutData_AreAProblemQuotingTheAPI(t *testing.T) {
	t.Parallel()
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectGraphQL, Records: declRecords(30), ExpireAfter: 1}}
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	// No expiry declared: the errors of the second page are just errors.
	d := newDirect(t, fixtures.FaultListConfig(ts.URL, fl.Dialect, 10, "", ""))
	env, _ := d.call("search_all", map[string]any{"resource": "items", "max_items": 0})
	if env.Problem == nil || env.Problem.Code != envelope.ProblemUpstreamGraphQL || env.Problem.UpstreamMessage != "cursor expired" || env.Problem.Retryable {
		t.Fatalf("problem %+v; want UPSTREAM_GRAPHQL_ERRORS quoting the API, not retryable", env.Problem)
	}
}
