package tools

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
)

func declRecords(n int) []fixtures.Record {
	out := make([]fixtures.Record, n)
	for i := range out {
		out[i] = fixtures.Record{"id": fmt.Sprintf("r%04d", i), "status": "active", "owner": "team-a"}
	}
	return out
}

func warningOf(env *envelope.Envelope, code string) *envelope.Warning {
	for i := range env.Warnings {
		if env.Warnings[i].Code == code {
			return &env.Warnings[i]
		}
	}
	return nil
}

// TestDeclaredResultCapExceeded_WarnsAndStaysComplete: an upstream that
// returns more than the declared result_cap shows the declaration is wrong;
// the answer stays complete on the dialect's proven end and says so.
func TestDeclaredResultCapExceeded_WarnsAndStaysComplete(t *testing.T) {
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, Records: declRecords(60)}}
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	cfg := string(fixtures.FaultListConfig(ts.URL, fl.Dialect, 20, "", "")) + "    result_cap: 50\n"
	d := newDirect(t, []byte(cfg))
	env, data := d.call("search_all", map[string]any{"resource": "items", "max_items": 0})
	if !env.Complete || data["total_matched"] != float64(60) {
		t.Fatalf("complete %v, total %v, reasons %+v; want complete with 60", env.Complete, data["total_matched"], env.IncompleteReasons)
	}
	w := warningOf(env, envelope.WarnDeclarationContradicted)
	if w == nil || len(w.Fields) != 1 || w.Fields[0] != "result_cap" {
		t.Fatalf("warnings = %+v, want %s naming result_cap", env.Warnings, envelope.WarnDeclarationContradicted)
	}
}

// TestNonDecisionFieldDrift_IsAWarningNotAWithholding: a field no decision
// rests on that arrives with another type than declared is reported, and
// the records are still counted.
func TestNonDecisionFieldDrift_IsAWarningNotAWithholding(t *testing.T) {
	recs := declRecords(30)
	for i := 0; i < len(recs); i += 3 {
		recs[i]["owner"] = 42 // declared a string
	}
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectCursor, Records: recs}}
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	d := newDirect(t, fixtures.FaultListConfig(ts.URL, fl.Dialect, 10, "", ""))
	env, data := d.call("search_all", map[string]any{"resource": "items", "max_items": 0, "filter": map[string]any{"status": "active"}})
	if !env.Complete || data["total_matched"] != float64(30) {
		t.Fatalf("complete %v, total %v, reasons %+v; want complete with 30", env.Complete, data["total_matched"], env.IncompleteReasons)
	}
	if w := warningOf(env, envelope.WarnFieldDrift); w == nil || len(w.Fields) != 1 || w.Fields[0] != "owner" {
		t.Fatalf("warnings = %+v, want %s naming owner", env.Warnings, envelope.WarnFieldDrift)
	}
}
