package tooltest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
)

// TestRecordCodes_ReadsEveryPlaceACodeTravels: the call's problem, its
// reasons and warnings, and an operation's per-target problems each count
// as produced; a code no answer carried, or no registry holds, is
// unproduced.
func TestRecordCodes_ReadsEveryPlaceACodeTravels(t *testing.T) {
	RecordCodes([]byte(`{"problem":{"code":"UPSTREAM_FORBIDDEN"},"incomplete_reasons":[{"code":"STALE_INDEX"}],` +
		`"warnings":[{"code":"VALUE_NORMALIZED"}],"data":{"results":[{"problem":{"code":"UPSTREAM_CONFLICT"}}]}}`))
	for _, c := range []string{"UPSTREAM_FORBIDDEN", "STALE_INDEX", "VALUE_NORMALIZED", "UPSTREAM_CONFLICT"} {
		if !Produced(c) {
			t.Errorf("%s was carried but not recorded", c)
		}
	}
	if got := Unproduced([]string{"STALE_INDEX", "NOT_A_REGISTERED_CODE", "FIELD_DRIFT"}); !slices.Equal(got, []string{"FIELD_DRIFT", "NOT_A_REGISTERED_CODE"}) {
		t.Errorf("unproduced: %v", got)
	}
}

// TestProducedByTools_AreRegisteredCodesOnce: the hand-kept list names
// registered codes, each once.
func TestProducedByTools_AreRegisteredCodesOnce(t *testing.T) {
	registered := map[string]bool{}
	for _, c := range envelope.Codes() {
		registered[c.Code] = true
	}
	seen := map[string]bool{}
	for _, c := range ProducedByTools {
		if !registered[c] || seen[c] {
			t.Errorf("%s: registered %v, listed twice %v", c, registered[c], seen[c])
		}
		seen[c] = true
	}
}

// TestNoRoundedNumbers_FlagsWhatADoubleRounds: 2^53+1 anywhere in a
// document fails; I-JSON's largest integer (2^53-1) and decimals pass.
func TestNoRoundedNumbers_FlagsWhatADoubleRounds(t *testing.T) {
	decode := func(s string) any {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	ok := &recorder{TB: t}
	NoRoundedNumbers(ok, "exact", decode(`{"a":[9007199254740991,0.5,{"b":1}]}`))
	if len(ok.errors) != 0 {
		t.Errorf("numbers a double holds were flagged: %v", ok.errors)
	}
	bad := &recorder{TB: t}
	NoRoundedNumbers(bad, "rounded", decode(`{"a":[{"b":9007199254740993}]}`))
	if len(bad.errors) != 1 || !strings.Contains(bad.errors[0], "9007199254740993") {
		t.Errorf("2^53+1 was not flagged: %v", bad.errors)
	}
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
