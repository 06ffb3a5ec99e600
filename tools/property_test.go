package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream"
)

// direct calls tool handlers in process, validating every result against
// the tool's output schema. It is for tests that make many calls.
type direct struct {
	t       fataler
	deps    *Deps
	specs   map[string]Spec
	schemas map[string]*envelope.Validator
}

// fataler is what both *testing.T and *rapid.T offer.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newDirect(t fataler, yaml []byte) *direct {
	t.Helper()
	cfg, err := upstream.ParseConfig(yaml)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	rt, err := cfg.Initialize(context.Background(), upstream.Options{Getenv: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rt.Upstreams {
		c.SetMaxRetryWait(50 * time.Millisecond)
	}
	d := &direct{t: t, deps: NewDeps(rt, nil), specs: map[string]Spec{}, schemas: map[string]*envelope.Validator{}}
	for _, s := range d.deps.Specs() {
		d.specs[s.Name] = s
		v, err := envelope.CompileSchema(s.Name, s.Tool().RawOutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		d.schemas[s.Name] = v
	}
	return d
}

func (d *direct) call(tool string, args map[string]any) (*envelope.Envelope, map[string]any) {
	d.t.Helper()
	raw, _ := json.Marshal(args)
	env := d.specs[tool].Handler(context.Background(), &Call{RequestID: "test", Raw: raw})
	env.Finish()
	b := env.Marshal()
	recordProblems(b)
	if err := d.schemas[tool].Validate(b); err != nil {
		d.t.Fatalf("%s result breaks its output schema: %v\n%s", tool, err, b)
	}
	var m struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(b, &m)
	return env, m.Data
}

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
	api := newFixture(t)
	srv := httptest.NewServer(api)
	defer srv.Close()
	checks := 0
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
			if env.Problem != nil {
				rt.Fatalf("unexpected problem %+v", env.Problem)
			}
			ids := dataIDs(data)
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
	t.Logf("%d property checks", checks)
}
