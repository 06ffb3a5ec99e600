package dialect

import (
	"net/http"
	"slices"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// A DynamoDB Scan with a FilterExpression: Limit counts the items read
// before the filter, so a page holds fewer items than the size, or none,
// and goes on. A page without LastEvaluatedKey ends the list only when it
// read fewer items than the size (ScannedCount); one that read as many
// stopped at the size, and the key left out there may have been dropped.
func TestContinueObject_EvaluatedCountJudgesTheEnd(t *testing.T) {
	p := config.PaginationConfig{Dialect: config.DialectContinueObject, PageSize: 100, PageSizeParam: "Limit",
		ContinuePath: "LastEvaluatedKey", ContinueParam: "ExclusiveStartKey"}
	p.Evaluated = "ScannedCount"
	d := newObjectDialect(p, "")
	// Earlier pages carried the key and held at most 30 items.
	st := State{Started: true, SignalSeen: true, MaxPage: 30, Cursor: `{"pk":{"S":"acct-00100"}}`}
	for _, tc := range []struct {
		name   string
		body   string
		items  int
		end    string
		signal string
		doubt  bool
	}{
		{"a few items, the whole size read, no key", `{"Count":4,"ScannedCount":100}`, 4, envelope.EndUnproven, SignalMissingOnFull, false},
		{"no item, the whole size read, no key", `{"Count":0,"ScannedCount":100}`, 0, envelope.EndUnproven, SignalMissingOnFull, false},
		{"a few items, fewer read than the size, no key", `{"Count":4,"ScannedCount":37}`, 4, envelope.EndProven, SignalContinuationNone, false},
		{"no item, nothing read, no key", `{"Count":0,"ScannedCount":0}`, 0, envelope.EndProven, SignalEmptyPage, false},
		{"no count read, no key", `{"Count":4}`, 4, envelope.EndUnproven, SignalMissingOnFull, false},
		{"the count a string, no key", `{"Count":4,"ScannedCount":"37"}`, 4, envelope.EndUnproven, SignalUnreadable, true},
		{"the count negative, no key", `{"Count":4,"ScannedCount":-1}`, 4, envelope.EndUnproven, SignalUnreadable, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := parseObjectPage(t, d, tc.body, tc.items, st)
			if !pg.Next.Done || pg.Next.End != tc.end || pg.Next.EndSignal != tc.signal {
				t.Errorf("done %v, end %q by %q; want %q by %q", pg.Next.Done, pg.Next.End, pg.Next.EndSignal, tc.end, tc.signal)
			}
			if got := slices.Contains(pg.Doubts, "ScannedCount"); got != tc.doubt {
				t.Errorf("doubts %v; ScannedCount among them: %v, want %v", pg.Doubts, got, tc.doubt)
			}
		})
	}
	// DynamoDB also stops a page at 1 MB read, short of Limit, and hands
	// the key back: pages of large items each read 2.
	capped := st
	capped.MaxEvaluated = 2
	for _, tc := range []struct {
		name   string
		body   string
		end    string
		signal string
	}{
		{"as many read as the upstream's own cut, no key", `{"Count":2,"ScannedCount":2}`, envelope.EndUnproven, SignalMissingOnFull},
		{"fewer read than the upstream's own cut, no key", `{"Count":1,"ScannedCount":1}`, envelope.EndProven, SignalContinuationNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := parseObjectPage(t, d, tc.body, 1, capped)
			if !pg.Next.Done || pg.Next.End != tc.end || pg.Next.EndSignal != tc.signal {
				t.Errorf("done %v, end %q by %q; want %q by %q", pg.Next.Done, pg.Next.End, pg.Next.EndSignal, tc.end, tc.signal)
			}
		})
	}
	t.Run("the most read on one page is kept", func(t *testing.T) {
		pg := parseObjectPage(t, d, `{"Count":2,"ScannedCount":3,"LastEvaluatedKey":{"pk":{"S":"acct-00200"}}}`, 2, capped)
		if pg.Next.MaxEvaluated != 3 {
			t.Errorf("MaxEvaluated %d after a page that read 3, want 3", pg.Next.MaxEvaluated)
		}
		pg = parseObjectPage(t, d, `{"Count":1,"ScannedCount":1,"LastEvaluatedKey":{"pk":{"S":"acct-00300"}}}`, 1, pg.Next)
		if pg.Next.MaxEvaluated != 3 {
			t.Errorf("MaxEvaluated %d after a page that read 1, want 3 kept", pg.Next.MaxEvaluated)
		}
	})
	t.Run("an unreadable count beside the key is doubt", func(t *testing.T) {
		pg := parseObjectPage(t, d, `{"Count":4,"ScannedCount":null,"LastEvaluatedKey":{"pk":{"S":"acct-00200"}}}`, 4, st)
		if pg.Next.Done || pg.Next.Cursor == "" || !slices.Contains(pg.Doubts, "ScannedCount") {
			t.Errorf("done %v, cursor %q, doubts %v; want the scan to go on, ScannedCount doubted", pg.Next.Done, pg.Next.Cursor, pg.Doubts)
		}
	})
}

func parseObjectPage(t *testing.T, d Dialect, body string, n int, st State) Page {
	t.Helper()
	doc, err := jsonvalue.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{}
	}
	pg, err := d.Parse(&transport.Response{Status: http.StatusOK, Header: http.Header{}}, doc, items, st)
	if err != nil {
		t.Fatal(err)
	}
	return pg
}
