package selection_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/jsonvalue"
	. "github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
)

// TestStreamable_ExactlyTheRecordsThatReadBackUnchanged: a record is
// digested as it arrives only when the store gives back a record with the
// same canonical encoding. Values decoded from JSON do; a float64 or a
// string that is not valid UTF-8 may not, and such records send the
// preview to the store for its digest.
func TestStreamable_ExactlyTheRecordsThatReadBackUnchanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	sel := &Selection{ID: "sel_s", State: StateBuilding, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	dec := json.NewDecoder(bytes.NewReader([]byte(`{"n":1.0,"big":123456789012345678901234567890,"e":1e21,"s":"é \u0001 <>","a":[null,true,{"k":-0}]}`)))
	dec.UseNumber()
	if err := dec.Decode(&decoded); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		rec        Record
		streamable bool
	}{
		{"decoded JSON", Record{ID: "a", Disposition: Member, Version: "1", Review: decoded, Before: map[string]any{"paused": false},
			Restore: map[string]any{"owner": nil}}, true},
		{"ints", Record{ID: "b", Disposition: Member, Review: map[string]any{"n": 7, "m": int64(-3)}}, true},
		{"strings", Record{ID: "c", Disposition: Ambiguous, Note: "field x missing", Review: map[string]any{"tags": []string{"vip"}}}, true},
		{"float64", Record{ID: "d", Disposition: Member, Review: map[string]any{"f": 1e20}}, false},
		{"invalid UTF-8 value", Record{ID: "e", Disposition: Member, Review: map[string]any{"s": "a\xff\xfeb"}}, false},
		{"invalid UTF-8 key", Record{ID: "f", Disposition: Member, Before: map[string]any{"\xff": true}}, false},
		{"invalid UTF-8 note", Record{ID: "g", Disposition: Ambiguous, Note: "\xff"}, false},
		{"other Go value", Record{ID: "h", Disposition: Member, Review: map[string]any{"t": now}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Streamable(&tc.rec); got != tc.streamable {
				t.Fatalf("streamable %v, want %v", got, tc.streamable)
			}
			if err := s.PutRecords(ctx, sel.ID, []Record{tc.rec}); err != nil {
				t.Fatal(err)
			}
			back, err := s.Records(ctx, sel.ID, RecordQuery{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var stored *Record
			for i := range back {
				if back[i].ID == tc.rec.ID {
					stored = &back[i]
				}
			}
			if stored == nil {
				t.Fatal("record not stored")
			}
			now, _ := AppendRecord(nil, &tc.rec)
			later, _ := AppendRecord(nil, stored)
			if tc.streamable && !bytes.Equal(now, later) {
				t.Fatalf("a streamable record encodes as\n%s\nbut reads back as\n%s", now, later)
			}
		})
	}
	// The reasons for the exclusions: these encode differently once stored.
	for _, r := range []Record{{ID: "x", Review: map[string]any{"f": 1e20}}, {ID: "y", Review: map[string]any{"s": "a\xff\xfeb"}}} {
		raw := jsonvalue.Marshal(r.Review)
		var back map[string]any
		_ = jsonvalue.Unmarshal(raw, &back)
		a, _ := jsonvalue.Canonical(r.Review)
		b, _ := jsonvalue.Canonical(back)
		if bytes.Equal(a, b) {
			t.Errorf("%v reads back with the same encoding; the exclusion is not needed", r.Review)
		}
	}
}
