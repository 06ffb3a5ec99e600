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

func warningOf(env *envelope.Envelope, code envelope.WarningCode) *envelope.Warning {
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
	t.Parallel()
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
	t.Parallel()
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

// TestDeclaredExactTotal_CountsFromTheFirstPage: a counts-only query whose
// every filter is sent upstream, on a resource whose total is declared
// exact, costs one request, and coverage says where the count came from.
// A filter airlock applies alone still scans everything.
func TestDeclaredExactTotal_CountsFromTheFirstPage(t *testing.T) {
	t.Parallel()
	recs := declRecords(500)
	for i := range recs {
		if i%3 == 0 {
			recs[i]["status"] = "disabled"
		}
		if i%7 == 0 {
			recs[i]["owner"] = nil
		}
	}
	fl := &fixtures.FaultList{FaultKnobs: fixtures.FaultKnobs{Dialect: fixtures.DialectOffset, Records: recs}}
	ts := httptest.NewServer(fl)
	t.Cleanup(ts.Close)
	d := newDirect(t, fixtures.FaultListConfig(ts.URL, fl.Dialect, 20, "total_exact: true", ""))
	env, data := d.call("search_all", map[string]any{"resource": "items", "max_items": 0, "filter": map[string]any{"status": "disabled"}})
	if !env.Complete || data["total_matched"] != float64(167) || fl.Requests() != 1 {
		t.Fatalf("complete %v, total %v after %d request(s); want 167 from one request", env.Complete, data["total_matched"], fl.Requests())
	}
	if src := env.Coverage.Sources[0]; src.EndSignal != "declared_exact_total" || env.Coverage.ItemsScanned != 20 {
		t.Fatalf("coverage %+v; want the count from the declared total, 20 items read", env.Coverage)
	}
	env, data = d.call("search_all", map[string]any{"resource": "items", "max_items": 0, "filter": map[string]any{"owner": nil}})
	if !env.Complete || data["total_matched"] != float64(72) || env.Coverage.Sources[0].EndSignal == "declared_exact_total" {
		t.Fatalf("owner null (applied by airlock): complete %v, total %v, coverage %+v; want a full scan with 72", env.Complete, data["total_matched"], env.Coverage.Sources)
	}
}
