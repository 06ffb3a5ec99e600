package upstream

import (
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// TestNullValues_ThroughAnArrayIndexReadNullInItemsAsInFilters: Redmine
// writes a custom field without a value as "" inside its custom_fields
// array; declared null_values: [""] at custom_fields.1.value, every item
// delivered holds null there, as the null filter counts it, and
// VALUE_NORMALIZED names the field only because the items show it.
func TestNullValues_ThroughAnArrayIndexReadNullInItemsAsInFilters(t *testing.T) {
	f := newFakeRedmine(60)
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	r := runtimeFor(t, redmineConfig(ts.URL, true)).Resources["issues"]
	empty := 0
	for _, is := range f.issues {
		if v, _ := jsonvalue.Get(is, "custom_fields.1.value"); v == "" {
			empty++
		}
	}
	if empty == 0 {
		t.Fatal("the fake holds no team written \"\": the case needs some")
	}
	for _, filter := range []map[string]any{nil, {"team": nil}} {
		var nulls, blanks int
		s := r.NewScan(ScanSpec{Filter: filter, RequestID: "test", Sink: sinkFunc(func(it *Item) error {
			switch v, _ := jsonvalue.Get(it.Doc, "custom_fields.1.value"); v {
			case nil:
				nulls++
			case "":
				blanks++
			}
			return nil
		})})
		if err := s.Run(t.Context(), Budget{MaxPages: 100, PagesLimitSource: "airlock", Deadline: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		out := s.Outcome()
		if blanks > 0 || nulls < empty || !out.ScanComplete {
			t.Errorf("filter %v: %d items delivered with \"\" and %d with null (complete %t); want none with \"\", and the %d written \"\" read as null",
				filter, blanks, nulls, out.ScanComplete, empty)
		}
		var normalized []string
		for _, w := range out.Warnings {
			switch w.Code {
			case envelope.WarnValueNormalized:
				normalized = w.Fields
			case envelope.WarnFieldDrift:
				t.Errorf("filter %v: FIELD_DRIFT on %v: the items are as declared", filter, w.Fields)
			}
		}
		if !slices.Equal(normalized, []string{"team"}) {
			t.Errorf("filter %v: VALUE_NORMALIZED names %v; want [team]", filter, normalized)
		}
	}
}
