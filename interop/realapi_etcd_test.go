package interop

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/probe"
)

// TestEtcd_RangesAtOneRevisionAndConditionalWrites runs airlock against
// etcd 3.4's v3 JSON gateway (testdata/etcd.yaml): a range continued after
// the last key made exclusive, more and kvs omitted when false or empty,
// every page at the first page's revision, keys and values base64; a
// compacted revision is CURSOR_EXPIRED with a restart; a txn whose compare
// on mod_revision failed is a conflict, and the compensation puts every
// value back. Every row is compared with etcd's own answer to one unlimited
// range.
func TestEtcd_RangesAtOneRevisionAndConditionalWrites(t *testing.T) {
	started := time.Now()
	e := upstreams.StartEtcd(t)
	t.Run("upstream_facts", func(t *testing.T) { checkEtcdFacts(t, e) })
	truth := e.Records(t, "")
	al := startAirlock(t, "etcd.yaml", e.URL, nil)
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "etcd", config: "etcd.yaml", base: e.URL, resource: "keys", pageSize: 25})
	})
	value := func(vs ...any) func(upstreams.Record) bool { return valueIn("value", vs...) }
	cases := []upstreamCase{
		{name: "every_key", resource: "keys", correct: true},
		{name: "one_value", resource: "keys", filter: map[string]any{"value": "archived"}, keep: value("archived"), correct: true},
		{name: "any_of_values", resource: "keys", filter: map[string]any{"value": []any{"active", "disabled"}}, keep: value("active", "disabled"), correct: true},
		{name: "no_lease_is_null", resource: "keys", filter: map[string]any{"lease": nil},
			keep: func(r upstreams.Record) bool { return r["lease"] == nil }, correct: true},
		{name: "one_lease", resource: "keys", filter: map[string]any{"lease": e.Lease}, keep: valueIn("lease", e.Lease), correct: true},
	}
	for _, v := range slices.Sorted(mapValues(upstreams.EtcdHostileKeys)) {
		cases = append(cases, upstreamCase{name: "hostile_" + safeName(v), resource: "keys", filter: map[string]any{"value": v}, keep: value(v), correct: true})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "key", "value") })
	}
	t.Run("probe_knows_the_forms", func(t *testing.T) { checkEtcdProbe(t, al) })
	t.Run("described_to_the_agent", func(t *testing.T) {
		d := al.tool(t, "describe_resources", map[string]any{"resource": "keys"})
		b, _ := json.Marshal(d["data"])
		for _, want := range []string{`"decoded":"base64"`, `"consistency":"snapshot"`, `first page's header.revision (sent as revision)`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("describe_resources keys: %s; want it to hold %s", b, want)
			}
		}
	})
	t.Run("continued_scan_reads_one_revision", func(t *testing.T) { checkEtcdSnapshot(t, e, al) })
	t.Run("compacted_revision_restarts", func(t *testing.T) { checkEtcdCompacted(t, e, al) })
	t.Run("txn_conflict_and_compensation", func(t *testing.T) { checkEtcdWrites(t, e) })
	t.Run("write_evidence_mutation", func(t *testing.T) {
		var pool []string
		for _, kv := range e.KVs(t, "") {
			if kv.Value == "disabled" {
				pool = append(pool, kv.Key)
			}
		}
		checkWriteEvidence(t, writeEvidenceCase{upstream: "etcd 3.4", config: "etcd.yaml", base: e.URL, action: "set_value",
			params: map[string]any{"value": "retired"}, pool: pool, target: etcdTarget,
			applied: func(t *testing.T, ids []string) map[string]bool {
				out := map[string]bool{}
				for _, kv := range e.KVs(t, "") {
					if slices.Contains(ids, kv.Key) {
						out[kv.Key] = kv.Value == "retired"
					}
				}
				return out
			}})
	})
	t.Logf("etcd suite: %.1fs", time.Since(started).Seconds())
}

func mapValues(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// safeName is a value in a subtest's name.
func safeName(v string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, strings.ToLower(v))
}

// checkEtcdFacts pins what testdata/etcd.yaml assumes of etcd.
func checkEtcdFacts(t *testing.T, e *upstreams.Etcd) {
	type rangeAnswer struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
		KVs  []map[string]any `json:"kvs"`
		More *bool            `json:"more"`
	}
	read := func(body map[string]any) (int, rangeAnswer, string) {
		r := e.RawRange(t, body)
		var a rangeAnswer
		_ = json.Unmarshal(r.Body, &a)
		return r.Status, a, string(r.Body)
	}
	first := map[string]any{"key": upstreams.B64(upstreams.EtcdPrefix), "range_end": upstreams.B64(upstreams.EtcdPrefixEnd), "limit": 100}
	_, a, _ := read(first)
	if len(a.KVs) != 100 || a.More == nil || !*a.More || a.Header.Revision == "" {
		t.Errorf("a first page of 100: %d kvs, more %v, revision %q; want 100, more true and a revision", len(a.KVs), a.More, a.Header.Revision)
	}
	last, _ := a.KVs[99]["key"].(string)
	inclusive := map[string]any{"key": last, "range_end": first["range_end"], "limit": 1}
	if _, b, _ := read(inclusive); len(b.KVs) != 1 || b.KVs[0]["key"] != last {
		t.Errorf("key is inclusive: a range from the last key should start with it, got %v", b.KVs)
	}
	_, tail, raw := read(map[string]any{"key": upstreams.B64(upstreams.EtcdPrefix + "\xff"), "range_end": first["range_end"]})
	if tail.More != nil || tail.KVs != nil {
		t.Errorf("an empty range: %s; want more and kvs omitted (proto3 JSON)", raw)
	}
}

// checkEtcdSnapshot: a scan cut by its page budget and continued after
// another writer changed and added keys still answers what etcd held at the
// first page's revision, no more and no less.
func checkEtcdSnapshot(t *testing.T, e *upstreams.Etcd, al *airlock) {
	rev := e.Revision(t)
	want := upstreams.IDs(e.Records(t, rev), nil)
	args := map[string]any{"resource": "keys", "max_items": 1000, "max_pages": 3, "fields": []string{"key"}, "deadline_ms": deadlineMS}
	first := al.search(t, args)
	if first.Complete || first.Continuation.Kind != envelope.ContinueNextCursor {
		t.Fatalf("three pages of a larger range: %s; want a continuation", first)
	}
	var ids []string
	for _, it := range first.Data.Items {
		ids = append(ids, idOf(it["key"]))
	}
	// Another writer: a changed value past the cut, a new key, a deleted
	// one. None of it is in the revision the scan reads.
	e.Put(t, upstreams.EtcdPrefix+"02000", "changed")
	e.Put(t, upstreams.EtcdPrefix+"00999-new", "active")
	args["cursor"], args["max_pages"] = first.Continuation.Cursor, 500
	last, more := al.walk(t, args, "key")
	ids = append(ids, more...)
	if !last.Complete {
		t.Fatalf("the continued scan: %s; want complete", last)
	}
	checkItems(t, "continued at one revision", last, ids, want)
	t.Logf("continued scan at revision %s: %d keys, %s", rev, len(ids), last)
}

// checkEtcdCompacted: a scan whose revision is compacted away between two
// of its pages is CURSOR_EXPIRED with a restart, and the restart is
// complete and exact.
func checkEtcdCompacted(t *testing.T, e *upstreams.Etcd, al *airlock) {
	args := map[string]any{"resource": "keys", "max_items": 1000, "max_pages": 2, "fields": []string{"key"}, "deadline_ms": deadlineMS}
	first := al.search(t, args)
	if first.Continuation.Kind != envelope.ContinueNextCursor {
		t.Fatalf("two pages: %s; want a continuation", first)
	}
	e.Compact(t, e.Put(t, upstreams.EtcdPrefix+"00001", "active"))
	args["cursor"] = first.Continuation.Cursor
	ans := al.search(t, args)
	expired := false
	for _, r := range ans.IncompleteReasons {
		expired = expired || r.Code == string(envelope.CursorExpired)
	}
	if ans.Complete || !expired || ans.Continuation.Kind != envelope.ContinueRestart {
		t.Fatalf("after compaction: %s; want CURSOR_EXPIRED with a restart", ans)
	}
	delete(args, "cursor")
	args["max_pages"] = 500
	last, ids := al.walk(t, args, "key")
	checkItems(t, "restarted", last, ids, upstreams.IDs(e.Records(t, ""), nil))
	if !last.Complete {
		t.Errorf("the restart: %s; want complete", last)
	}
}

// checkEtcdWrites previews set_value on the keys holding "archived" (a
// third of them with a lease, which the write keeps), lets another writer change one of them before the commit, and
// checks etcd: every other target holds the new value, the changed one the
// other writer's (its txn compare on mod_revision failed: skipped, never
// succeeded), nothing else moved; the compensation puts every value back.
func checkEtcdWrites(t *testing.T, e *upstreams.Etcd) {
	before := map[string]upstreams.EtcdKV{}
	var targets []string
	for _, kv := range e.KVs(t, "") {
		before[kv.Key] = kv
		if kv.Value == "archived" {
			targets = append(targets, kv.Key)
		}
	}
	if len(targets) < 50 {
		t.Fatalf("%d keys hold archived; the row needs 50 or more", len(targets))
	}
	wa := withStore(t, startAirlock(t, "etcd.yaml", e.URL, nil))
	prev := wa.tool(t, "preview_selection", map[string]any{"resource": "keys", "filter": map[string]any{"value": "archived"},
		"action": map[string]any{"type": "set_value", "params": map[string]any{"value": "retired"}}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true || data["counts"].(map[string]any)["members"] != float64(len(targets)) {
		t.Fatalf("preview: committable %v, counts %v; want %d members", data["committable"], data["counts"], len(targets))
	}
	// The manifest shows, and the digest covers, the decoded key and value.
	items, _ := data["manifest"].(map[string]any)["items"].([]any)
	if len(items) == 0 {
		t.Fatal("preview: an empty manifest")
	}
	first := items[0].(map[string]any)
	if id, _ := first["id"].(string); !strings.HasPrefix(id, upstreams.EtcdPrefix) || first["fields"].(map[string]any)["value"] != "archived" {
		t.Errorf("manifest item %v; want the key and value decoded", first)
	}
	moved := targets[len(targets)/2]
	e.Put(t, moved, "taken by another writer")

	op, counts := commitCounts(t, wa, data)
	if counts["succeeded"] != float64(len(targets)-1) || counts["skipped"] != float64(1) {
		t.Errorf("operation %s: counts %v; want %d succeeded and the moved key skipped", op, counts, len(targets)-1)
	}
	skipped := wa.tool(t, "get_operation", map[string]any{"operation_id": op, "outcome": "skipped"})
	if items, _ := skipped["data"].(map[string]any)["results"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != moved {
		t.Errorf("skipped targets: %v; want only %q", skipped["data"], moved)
	}
	for _, kv := range e.KVs(t, "") {
		want := before[kv.Key].Value
		switch {
		case kv.Key == moved:
			want = "taken by another writer"
		case slices.Contains(targets, kv.Key):
			want = "retired"
		}
		if kv.Value != want {
			t.Errorf("%s holds %q after the commit; want %q", kv.Key, kv.Value, want)
		}
		if kv.Lease != before[kv.Key].Lease {
			t.Errorf("%s: lease %q after the commit, had %q", kv.Key, kv.Lease, before[kv.Key].Lease)
		}
	}

	comp := wa.tool(t, "preview_selection", map[string]any{"compensate": op, "deadline_ms": deadlineMS})
	cdata := comp["data"].(map[string]any)
	if cdata["counts"].(map[string]any)["members"] != float64(len(targets)-1) {
		t.Fatalf("compensation preview: counts %v; want %d members", cdata["counts"], len(targets)-1)
	}
	_, ccounts := commitCounts(t, wa, cdata)
	if ccounts["succeeded"] != float64(len(targets)-1) {
		t.Errorf("compensation: counts %v; want %d succeeded", ccounts, len(targets)-1)
	}
	for _, kv := range e.KVs(t, "") {
		want := before[kv.Key].Value
		if kv.Key == moved {
			want = "taken by another writer"
		}
		if kv.Value != want {
			t.Errorf("%s holds %q after the compensation; want %q", kv.Key, kv.Value, want)
		}
	}
	t.Logf("set_value on %d keys: %d succeeded, %s skipped by its failed compare; compensated", len(targets), len(targets)-1, moved)
}

// etcdTarget reads the key a request names: a txn writes the key its
// compare names, a range without range_end reads one key (a list has one).
func etcdTarget(r proxied) (string, bool) {
	var b struct {
		Key      string `json:"key"`
		RangeEnd string `json:"range_end"`
		Compare  []struct {
			Key string `json:"key"`
		} `json:"compare"`
	}
	if !jsonBody(r, &b) {
		return "", false
	}
	key, write := b.Key, false
	switch {
	case r.Path == "/v3/kv/txn" && len(b.Compare) > 0:
		key, write = b.Compare[0].Key, true
	case r.Path != "/v3/kv/range" || b.RangeEnd != "":
		return "", false
	}
	k, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return "", false
	}
	return string(k), write
}

// commitCounts commits a selection and waits for its operation to end; it
// returns the operation and its counts.
func commitCounts(t *testing.T, w *airlock, sel map[string]any) (string, map[string]any) {
	t.Helper()
	res := w.tool(t, "commit_bulk_action", map[string]any{"selection_id": sel["selection_id"], "expected_digest": sel["digest"],
		"action": sel["action"], "mode": "execute", "wait_ms": 60000})
	data := res["data"].(map[string]any)
	op := data["operation_id"].(string)
	for i := 0; data["status"] == "running" && i < 120; i++ {
		time.Sleep(500 * time.Millisecond)
		data = w.tool(t, "get_operation", map[string]any{"operation_id": op})["data"].(map[string]any)
	}
	if data["status"] != "completed" {
		t.Fatalf("operation %s: status %v, counts %v; want completed", op, data["status"], data["counts"])
	}
	counts, _ := data["counts"].(map[string]any)
	return op, counts
}

// checkEtcdProbe: airlock probe checks the snapshot read from the first
// page, the key continued after the last one, and labels the POST list as
// POST; nothing it checks is wrong.
func checkEtcdProbe(t *testing.T, al *airlock) {
	rep := probe.CheckAssumptions(t.Context(), al.runtime.Resources["keys"], probe.Options{MaxRequests: 40, PageSize: 500})
	got := map[string]probe.Check{}
	for _, c := range rep.Checks {
		got[c.Check] = c
		if c.Status == probe.Wrong {
			t.Errorf("probe: %s is wrong: %s (%s)", c.Check, c.Evidence, c.Hint)
		}
	}
	if c := got["pagination.consistency"]; c.Status != probe.OK || !strings.Contains(c.Evidence, "header.revision") || !strings.Contains(c.Evidence, "sent as revision") {
		t.Errorf("pagination.consistency: %+v", c)
	}
	if c := got["pagination.cursor_field"]; c.Status != probe.OK || !strings.Contains(c.Evidence, "NUL byte") {
		t.Errorf("pagination.cursor_field: %+v", c)
	}
	if c := got["list.items"]; !strings.HasPrefix(c.Evidence, "POST /v3/kv/range") {
		t.Errorf("list.items: %+v; want the POST list labelled POST", c)
	}
	if c := got["pagination.end"]; c.Status != probe.OK {
		t.Errorf("pagination.end: %+v", c)
	}
}
