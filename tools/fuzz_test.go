package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream"
)

// fuzzDeps is the demo configuration pointed at a closed port, without
// retries: a call that passes validation fails fast at the first request.
func fuzzDeps(f *testing.F) *Deps {
	f.Helper()
	y := strings.Replace(string(fixtures.DemoConfig("http://127.0.0.1:1")), "retries: 2", "retries: 0", -1)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		f.Fatal(err)
	}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: func(string) string { return canaryToken }})
	if err != nil {
		f.Fatal(err)
	}
	d, err := New(context.Background(), Config{Runtime: rt})
	if err != nil {
		f.Fatal(err)
	}
	return d
}

// FuzzToolArguments: any arguments to search_all are answered with an
// envelope that satisfies the tool's output schema (an INVALID_ARGUMENTS
// problem lists at most 20 fields); the argument checks of
// preview_selection and get_selection never panic and produce a problem
// that satisfies the envelope schema.
func FuzzToolArguments(f *testing.F) {
	d := fuzzDeps(f)
	spec := SearchAll(d)
	out, err := envelope.CompileSchema("fuzz-search_all-output", envelope.OutputSchema(spec.Data, spec.AllProblems()...))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"resource":"subscriptions","filter":{"status":"past_due","region":["eu","us"]},"max_items":0}`,
		`{"resource":"service_accounts","filter":{"owner":null},"group_by":["email"],"max_items":1e21,"max_pages":9223372036854775808}`,
		`{"resource":"projects","fields":["id","nope"],"cursor":"e30.AAAA","deadline_ms":-1}`,
		`{"resource":"subscriptions","exclude":[{"field":"email","op":"lt","value":"m","reason":"probe"}],"action":{"type":"pause_collection"}}`,
		`{"selection_id":"sel_x","group":{"region":"eu","email":"x"},"page_size":1e3,"fields":["email"]}`,
		`[]`, `{"resource":{}}`, `{"filter":{"a":{"b":1}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || len(raw) > 4096 {
			t.Skip()
		}
		env := d.searchAll(context.Background(), &Call{RequestID: "fuzz", Raw: raw})
		env.Finish()
		if err := out.Validate(env.Marshal()); err != nil {
			t.Fatalf("search_all answered outside its schema: %v\n%s", err, env.Marshal())
		}
		r := d.Runtime.Resources["service_accounts"]
		var pa previewArgs
		errs, bad := decodeArgs("preview_selection", previewInput, raw, &pa)
		if !bad["filter"] {
			errs = append(errs, r.CheckFilter(pa.Filter)...)
			errs = append(errs, checkSensitive(r, filterUses(r, pa.Filter))...)
		}
		if !bad["exclude"] {
			errs = append(errs, checkRules(r, pa.Exclude)...)
			errs = append(errs, checkSensitive(r, ruleUses("exclude", pa.Exclude))...)
		}
		if !bad["action"] && pa.Action != nil {
			_, aerrs := checkAction(r, d.Runtime, pa.Action, "action")
			errs = append(errs, aerrs...)
		}
		if !bad["fields"] {
			errs = append(errs, checkReviewFields(r, pa.Fields)...)
		}
		_, berrs := checkBudget(r, nil, pa.MaxPages, pa.DeadlineMS, bad)
		errs = append(errs, berrs...)
		var ga getSelectionArgs
		gerrs, _ := decodeArgs("get_selection", getSelectionInput, raw, &ga)
		errs = append(errs, gerrs...)
		if len(errs) > 0 {
			if err := envelope.ValidateEnvelope(invalid(errs).Marshal()); err != nil {
				t.Fatalf("the argument problem breaks the schema: %v", err)
			}
		}
	})
}

// FuzzCursor: any string given as a cursor decodes without a panic; only
// what the key signed is accepted, and what it signs reads back equal.
func FuzzCursor(f *testing.F) {
	key := cursorKeyFrom([]byte("fuzz-cursor-key-0123456789abcdef"))
	other := cursorKeyFrom([]byte("another-key"))
	valid := key.encode(cursorPayload{Scan: "scan-1", Offset: 50, Fingerprint: "f00d"})
	f.Add(valid, "scan-1", 50, "", "f00d")
	f.Add(other.encode(cursorPayload{Scan: "s", After: "sa_00002", Fingerprint: "x"}), "s", 0, "sa_00002", "x")
	f.Add("e30.AAAA", "", -1, "\x00", "")
	f.Add(strings.Repeat("A", 300)+"."+strings.Repeat("_", 22), "scan", 1<<40, "id", "fp")
	f.Fuzz(func(t *testing.T, s, scan string, offset int, after, fp string) {
		p, state := key.decode(s)
		if state == cursorOK && p.Key != key.ID {
			t.Fatalf("accepted a cursor of another key: %+v", p)
		}
		if state == cursorOK && s != valid && key.encode(p) != s {
			// A cursor the key accepts must be one it signed.
			if _, st := key.decode(key.encode(p)); st != cursorOK {
				t.Fatalf("accepted %q, which the key did not sign", s)
			}
		}
		if !utf8.ValidString(scan) || !utf8.ValidString(after) || !utf8.ValidString(fp) {
			return // ids and fingerprints come from JSON: always UTF-8
		}
		want := cursorPayload{Scan: scan, Offset: offset, After: after, Fingerprint: fp}
		got, st := key.decode(key.encode(want))
		want.Key = key.ID
		if st != cursorOK || got != want {
			t.Fatalf("round trip: %+v (%v), want %+v", got, st, want)
		}
		if _, st := other.decode(key.encode(want)); st == cursorOK {
			t.Fatal("another key accepted the cursor")
		}
	})
}
