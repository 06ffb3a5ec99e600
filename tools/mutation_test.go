package tools

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"sort"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
)

// TestMutationBetweenPages_ClaimMatchesDeclaredConsistency inserts, deletes
// and reorders records while a scan is between pages, in every dialect, and
// checks that what airlock claims is what the dialect's consistency allows:
//   - snapshot (continue): complete, exactly the records of the snapshot;
//   - keyset (cursor): complete, no duplicate, every record that existed
//     throughout, nothing that never existed;
//   - none (offset, page, link): INCONSISTENT_SNAPSHOT whenever the change
//     can hide a record and the dialect lets airlock see it; the one change
//     a page-number dialect without totals cannot see (a delete behind the
//     read position) leaves complete true only beside NO_SNAPSHOT.
func TestMutationBetweenPages_ClaimMatchesDeclaredConsistency(t *testing.T) {
	t.Parallel()
	mutations := map[string]func(c *fixtures.Collection){
		"insert":  func(c *fixtures.Collection) { c.Insert(0, rec("sub_00000a")) },
		"delete":  func(c *fixtures.Collection) { c.Delete("sub_00005") },
		"reorder": func(c *fixtures.Collection) { c.Move("sub_00003", 1000) },
	}
	type dialectCase struct {
		dialect string
		conc    int
		claim   string // snapshot, keyset, detects, or link
	}
	cases := []dialectCase{
		{fixtures.DialectContinue, 1, "snapshot"},
		{fixtures.DialectCursor, 1, "keyset"},
		{fixtures.DialectCursorNext, 1, "keyset"},
		{fixtures.DialectOffset, 1, "detects"},
		{fixtures.DialectOffset, 3, "detects"},
		{fixtures.DialectPage, 1, "detects"},
		{fixtures.DialectPage, 3, "detects"},
		{fixtures.DialectLink, 1, "link"},
	}
	api := newFixture(t)
	srv := httptest.NewServer(api)
	defer srv.Close()
	for _, dc := range cases {
		for _, mname := range []string{"insert", "delete", "reorder"} {
			t.Run(fmt.Sprintf("%s-c%d/%s", dc.dialect, dc.conc, mname), func(t *testing.T) {
				coll := seq(120)
				initial := coll.IDs()
				api.SetCollection(fixtures.DatasetSubscriptions, coll)
				mutate := mutations[mname]
				api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{Mutate: func(n int, c *fixtures.Collection) {
					if n == 3 {
						mutate(c)
					}
				}})
				d := newDirect(t, fixtures.Config(srv.URL, fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions,
					Dialect: dc.dialect, PageSize: 10, Concurrency: dc.conc}))
				env, data := d.call("search_all", map[string]any{"resource": "subs", "fields": []any{"id"}, "max_items": 1000})
				final := coll.IDs()
				got := dataIDs(data)
				if dup := firstDuplicate(got); dup != "" && env.Complete {
					t.Fatalf("complete with %s returned twice", dup)
				}
				switch dc.claim {
				case "snapshot":
					if !env.Complete || !sameSet(got, initial) {
						t.Fatalf("a snapshot scan must be complete and hold exactly the snapshot: complete %v, %d ids", env.Complete, len(got))
					}
				case "keyset":
					if !env.Complete {
						t.Fatalf("a keyset scan stays complete under change: %v", env.IncompleteReasons)
					}
					for _, id := range intersect(initial, final) {
						if !slices.Contains(got, id) {
							t.Fatalf("%s existed throughout the scan but is missing", id)
						}
					}
					for _, id := range got {
						if !slices.Contains(initial, id) && !slices.Contains(final, id) {
							t.Fatalf("%s never existed", id)
						}
					}
					if !env.HasWarning(envelope.WarnNoSnapshot) {
						t.Fatal("a keyset scan has no snapshot and must say so")
					}
				case "detects":
					if env.Complete || !env.HasReason(envelope.InconsistentSnapshot) || env.Continuation.Kind != envelope.ContinueRestart {
						t.Fatalf("want INCONSISTENT_SNAPSHOT and restart, got complete %v %v %+v", env.Complete, env.IncompleteReasons, env.Continuation)
					}
				case "link":
					if mname == "delete" {
						if env.Complete && !env.HasWarning(envelope.WarnNoSnapshot) {
							t.Fatal("complete without NO_SNAPSHOT on a page-number dialect")
						}
						return
					}
					if env.Complete || !env.HasReason(envelope.InconsistentSnapshot) {
						t.Fatalf("a record read twice must be detected: complete %v %v", env.Complete, env.IncompleteReasons)
					}
				}
			})
		}
	}
}

func rec(id string) fixtures.Record {
	return fixtures.Record{"id": id, "customer_id": "cus_a", "customer_name": "Harbor Media BV", "region": "eu", "status": "active",
		"amount_due": 0, "currency": "EUR", "tags": []any{}, "collection_paused": false, "version": 1, "updated_at": "2026-11-01T00:00:00Z"}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
