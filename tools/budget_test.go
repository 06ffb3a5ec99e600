package tools

import (
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
)

// TestUnboundedParts_AreBoundedAndSaySo: group counts over every id of a
// large resource, a manifest page of 500 and an operation page of 500 stay
// within the result budget (the harness checks every result's size), and
// each says what the bound cut.
func TestUnboundedParts_AreBoundedAndSaySo(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.call("search_all", map[string]any{"resource": "subscriptions", "group_by": []any{"id", "region"}, "max_items": 0, "max_pages": 5000, "deadline_ms": 60000})
	rs := r.reason(envelope.ResultLimitReached)
	if r.env.Complete || rs.Field != "group_by.id" || rs.LimitSource != envelope.LimitAirlock || rs.Limit == nil {
		t.Fatalf("group_by id: complete %v, reasons %+v; want RESULT_LIMIT_REACHED on group_by.id from airlock", r.env.Complete, r.env.IncompleteReasons)
	}
	if r.env.Continuation.Kind != envelope.ContinueNarrowQuery {
		t.Errorf("continuation %q, want narrow_query", r.env.Continuation.Kind)
	}
	ids := r.data["groups"].(map[string]any)["id"].([]any)
	sum, kept := 0, 0
	for _, g := range ids {
		gm := g.(map[string]any)
		sum += int(gm["count"].(float64))
		if v, ok := gm["value"].(map[string]any); ok && v["other_values"] != nil {
			if int(v["other_values"].(float64))+kept != r.totalMatched() {
				t.Errorf("other_values %v + %d kept, want %d distinct ids", v["other_values"], kept, r.totalMatched())
			}
			continue
		}
		kept++
	}
	if kept != *rs.Limit || sum != r.totalMatched() {
		t.Errorf("kept %d groups (reason says %d), counts add up to %d of %d", kept, *rs.Limit, sum, r.totalMatched())
	}
	if regions := r.data["groups"].(map[string]any)["region"].([]any); len(regions) != 3 {
		t.Errorf("region groups %v: a small field is not cut", regions)
	}

	p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due"},
		"action": pauseAction, "page_size": 200})
	if p.env.Problem != nil {
		t.Fatalf("preview: %+v", p.env.Problem)
	}
	g := h.call("get_selection", map[string]any{"selection_id": p.data["selection_id"], "page_size": 500})
	items := g.data["items"].([]any)
	members := int(g.data["counts"].(map[string]any)["members"].(float64))
	if members <= len(items) {
		t.Fatalf("the demo selection has %d members; the case needs more than one page", members)
	}
	if rs := g.reason(envelope.ResultLimitReached); rs.LimitSource != envelope.LimitAirlock || g.env.Continuation.Cursor == "" {
		t.Fatalf("get_selection page_size 500: %d items, reasons %+v, continuation %+v; want a budget cut with a cursor", len(items), g.env.IncompleteReasons, g.env.Continuation)
	}
	// Walking the cursor still reaches every member exactly once.
	seen := map[string]bool{}
	for hop := 0; ; hop++ {
		for _, it := range g.data["items"].([]any) {
			id := it.(map[string]any)["id"].(string)
			if seen[id] {
				t.Fatalf("member %s delivered twice", id)
			}
			seen[id] = true
		}
		if g.env.Continuation.Cursor == "" || hop > 100 {
			break
		}
		g = h.call("get_selection", map[string]any{"selection_id": p.data["selection_id"], "page_size": 500, "cursor": g.env.Continuation.Cursor})
	}
	if len(seen) != members || !g.env.Complete {
		t.Fatalf("walked %d of %d members, last page complete %v", len(seen), members, g.env.Complete)
	}
}
