package probe

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

func probeYAML(t *testing.T, yaml []byte, resource string) *Report {
	t.Helper()
	cfg, err := config.Parse(yaml)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return CheckAssumptions(t.Context(), rt.Resources[resource], Options{})
}

func check(rep *Report, name string) Check {
	for _, c := range rep.Checks {
		if c.Check == name {
			return c
		}
	}
	return Check{Status: "absent"}
}

// TestProbe_ContradictionsAreWrongWithTheirEvidence: an end flag that says
// last beside a continuation, and a page count one short of the pages, are
// each pagination.end wrong, the evidence naming the contradiction and the
// hint the declaration to fix.
func TestProbe_ContradictionsAreWrongWithTheirEvidence(t *testing.T) {
	for _, tc := range []struct {
		name       string
		knobs      fixtures.FaultKnobs
		pagination string
		signal     string
		hint       string
	}{
		{"end flag beside a continuation", fixtures.FaultKnobs{Dialect: fixtures.DialectPostCursor, EndFlag: true, LyingEndFlag: true}, "is_last: isLast",
			dialect.SignalFlagVsContinuation, "isLast"},
		{"a page count one too low", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, TotalPages: "low", PastEndStatus: 400}, "total_pages_header: X-Total-Pages",
			dialect.SignalTotalVsPages, "total_pages"},
		{"a page past the end refused, no page count", fixtures.FaultKnobs{Dialect: fixtures.DialectPage, Total: "high", PastEndStatus: 400}, "",
			dialect.SignalPageRefused, "total_pages_header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := &fixtures.FaultList{FaultKnobs: tc.knobs}
			for i := range 45 {
				fl.Records = append(fl.Records, fixtures.Record{"id": fmt.Sprintf("r%03d", i), "status": "active", "owner": "team"})
			}
			ts := httptest.NewServer(fl)
			t.Cleanup(ts.Close)
			rep := probeYAML(t, fixtures.FaultListConfig(ts.URL, tc.knobs.Dialect, 10, tc.pagination, ""), "items")
			c := check(rep, "pagination.end")
			if c.Status != Wrong || !strings.Contains(c.Evidence, tc.signal) || !strings.Contains(c.Hint, tc.hint) {
				t.Fatalf("pagination.end: %+v; want wrong naming %s with a hint on %s", c, tc.signal, tc.hint)
			}
		})
	}
}

// TestProbe_NamesTheElementTypeOfAnArray: an array field of integers
// declared without an element type is unverifiable with the type to
// declare; declared as strings it is wrong; declared as integers, ok.
func TestProbe_NamesTheElementTypeOfAnArray(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"items": []any{
			map[string]any{"id": "p1", "categories": []any{4, 9}}, map[string]any{"id": "p2", "categories": []any{1}}}, "total": 2})
	}))
	t.Cleanup(ts.Close)
	for _, tc := range []struct{ decl, status, hint string }{
		{"{type: array}", Unverifiable, "elements: integer"},
		{"{type: array, elements: string}", Wrong, ""},
		{"{type: array, elements: integer}", OK, ""},
	} {
		rep := probeOf(t, ts.URL, "      id: {type: string}\n      categories: "+tc.decl, "{}")
		c := check(rep, "fields.categories.elements")
		if c.Status != tc.status || !strings.Contains(c.Hint, tc.hint) {
			t.Errorf("%s: %+v, want %s", tc.decl, c, tc.status)
		}
	}
}

// TestProbe_WalksTheNewContinuationForms: a continuation object (MediaWiki)
// and a key from the last item with a snapshot from the first page (etcd's
// range) are walked to a proven end, the end verified by the probe's one
// request where the signal is absent on the last page.
func TestProbe_WalksTheNewContinuationForms(t *testing.T) {
	for _, dialect := range []string{fixtures.DialectContinueObject, fixtures.DialectKeyRange} {
		t.Run(dialect, func(t *testing.T) {
			fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: dialect}}
			for i := range 45 {
				fl.Records = append(fl.Records, fixtures.Record{"id": fmt.Sprintf("r%03d", i), "status": "active", "owner": "team"})
			}
			ts := httptest.NewServer(fl)
			t.Cleanup(ts.Close)
			rep := probeYAML(t, fixtures.FaultListConfig(ts.URL, dialect, 10, "", ""), "items")
			if c := check(rep, "pagination.end"); c.Status != OK {
				t.Fatalf("pagination.end: %+v; report %+v", c, rep.Checks)
			}
		})
	}
}
