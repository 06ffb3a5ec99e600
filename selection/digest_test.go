package selection

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// digestVector is one golden vector: a selection header, its records in an
// arbitrary order, and the digests every airlock must compute for them.
type digestVector struct {
	Name         string          `json:"name"`
	Selection    json.RawMessage `json:"selection"`
	Records      json.RawMessage `json:"records"`
	Action       json.RawMessage `json:"action"`
	Digest       string          `json:"digest"`
	ActionDigest string          `json:"action_digest"`
}

func decodeUseNumber(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	dec := json.NewDecoder(bytesReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatal(err)
	}
}

func computeDigest(t *testing.T, sel *Selection, recs []Record) string {
	t.Helper()
	sorted := append([]Record(nil), recs...)
	sortRecords(sorted)
	d, err := NewDigester(sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sorted {
		if err := d.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := d.Sum()
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestDigestGoldenVectors pins the canonical encoding: the same inputs give
// the same digests in any process, on any machine, whatever the order of
// map keys or records. Changing the encoding breaks these on purpose.
func TestDigestGoldenVectors(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/digest_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []digestVector
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) < 4 {
		t.Fatalf("want at least 4 vectors, got %d", len(vectors))
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			var sel Selection
			var recs []Record
			var act Action
			decodeUseNumber(t, v.Selection, &sel)
			decodeUseNumber(t, v.Records, &recs)
			decodeUseNumber(t, v.Action, &act)
			ad, err := ActionDigest(act)
			if err != nil {
				t.Fatal(err)
			}
			if ad != v.ActionDigest {
				t.Fatalf("action digest %s, golden %s", ad, v.ActionDigest)
			}
			sel.ActionDigest = ad
			// Shuffle the records and rebuild every map: neither order may
			// matter.
			rng := rand.New(rand.NewPCG(7, 7))
			for trial := 0; trial < 5; trial++ {
				rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
				for i := range recs {
					recs[i].Review = remap(recs[i].Review)
				}
				if got := computeDigest(t, &sel, recs); got != v.Digest {
					t.Fatalf("trial %d: digest %s, golden %s", trial, got, v.Digest)
				}
			}
		})
	}
}

func remap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestCanonicalEncoding(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want string
	}{
		{`{"b":1,"a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{`{"n":1.0,"m":1e2,"k":-0,"big":123456789012345678901234567890,"f":0.1}`, `{"big":123456789012345678901234567890,"f":0.1,"k":0,"m":100,"n":1}`},
		{`{"s":"line\nbreak \"q\" \\ <html> é"}`, `{"s":"line\u000abreak \"q\" \\ <html> é"}`},
		{`{"é":1,"z":2,"A":3}`, `{"A":3,"z":2,"é":1}`},
	}
	for _, c := range cases {
		var v any
		dec := json.NewDecoder(bytesReader([]byte(c.in)))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		got, err := jsonvalue.Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("canonical(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestDigestRefusesRecordsOutOfOrder(t *testing.T) {
	t.Parallel()
	d, _ := NewDigester(&Selection{})
	_ = d.Add(Record{ID: "b"})
	if err := d.Add(Record{ID: "a"}); err == nil {
		t.Fatal("records out of order must be refused: the order is part of the digest")
	}
}

// TestDigestChangesWithAnythingReviewed: every part a reviewer saw is
// bound by the digest.
func TestDigestChangesWithAnythingReviewed(t *testing.T) {
	t.Parallel()
	base := func() (*Selection, []Record) {
		sel := &Selection{Resource: "subscriptions", Environment: "prod", Upstream: "billing.example.com", Kind: KindScope,
			Selector: Selector{Filter: map[string]any{"status": "past_due"}}, ActionDigest: "sha256:x", ActionSpecDigest: "sha256:y"}
		recs := []Record{{ID: "a", Disposition: Member, Version: "1", Review: map[string]any{"name": "A"}, Before: map[string]any{"paused": false}},
			{ID: "b", Disposition: Excluded, Rule: 0, Review: map[string]any{"name": "B"}}}
		return sel, recs
	}
	sel, recs := base()
	ref := computeDigest(t, sel, recs)
	mutations := map[string]func(*Selection, []Record) []Record{
		"environment":  func(s *Selection, r []Record) []Record { s.Environment = "staging"; return r },
		"upstream":     func(s *Selection, r []Record) []Record { s.Upstream = "billing.staging.example.com"; return r },
		"filter":       func(s *Selection, r []Record) []Record { s.Selector.Filter["status"] = "active"; return r },
		"action":       func(s *Selection, r []Record) []Record { s.ActionDigest = "sha256:z"; return r },
		"version":      func(s *Selection, r []Record) []Record { r[0].Version = "2"; return r },
		"review field": func(s *Selection, r []Record) []Record { r[0].Review["name"] = "A2"; return r },
		"before value": func(s *Selection, r []Record) []Record { r[0].Before["paused"] = true; return r },
		"disposition":  func(s *Selection, r []Record) []Record { r[1].Disposition = Member; return r },
		"member added": func(s *Selection, r []Record) []Record { return append(r, Record{ID: "c", Disposition: Member}) },
		"exclusion": func(s *Selection, r []Record) []Record {
			s.Selector.Exclude = append(s.Selector.Exclude, ruleFor("tags"))
			return r
		},
	}
	for name, m := range mutations {
		sel, recs := base()
		recs = m(sel, recs)
		if computeDigest(t, sel, recs) == ref {
			t.Errorf("changing the %s did not change the digest", name)
		}
	}
}
