package upstreams

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// EtcdKeys is how many keys StartEtcd seeds under EtcdPrefix: many pages of
// 100, the last one short.
const EtcdKeys = 2345

// EtcdPrefix is the prefix of every seeded key; EtcdPrefixEnd is the end of
// its range (the prefix with its last byte plus one).
const (
	EtcdPrefix    = "accounts/"
	EtcdPrefixEnd = "accounts0"
)

// EtcdHostileKeys are keys and values a filter or a write must carry as one
// literal: quotes, an expression injection, parentheses, unicode, a NUL
// byte's neighbour.
var EtcdHostileKeys = map[string]string{
	EtcdPrefix + `quote'd"key`:      `it's "quoted"`,
	EtcdPrefix + "' or 1 eq 1":      "' or 1 eq 1",
	EtcdPrefix + "paren) or (1":     "(archived)",
	EtcdPrefix + "ünïcödé/Ωmega":    "zoë",
	EtcdPrefix + "space and\\slash": `back\slash`,
}

// EtcdStatuses are the seeded values, about 60% active, 25% disabled and
// 15% archived.
var EtcdStatuses = []string{"active", "disabled", "archived"}

// Etcd is a running etcd (Debian's etcd-server, the v3 API over its JSON
// gateway) on loopback ports with its data in the test's temp dir. It has
// no credential.
type Etcd struct {
	URL string
	// Lease is the lease attached to about a third of the keys.
	Lease string
}

// EtcdKV is one key as the harness reads it: key and value decoded.
type EtcdKV struct {
	Key, Value  string
	ModRevision string
	Lease       string // "" when the key has none
}

// StartEtcd starts etcd on free loopback ports, seeds EtcdKeys keys and the
// hostile ones, and stops it when the test ends. It skips when
// /usr/bin/etcd is missing (see package doc).
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	Enabled(t)
	bin, err := exec.LookPath("etcd")
	if err != nil {
		missing(t, "etcd is not installed (Debian's etcd-server)")
	}
	started := time.Now()
	dir := t.TempDir()
	base, _ := startProcess(t, "etcd", dir, func(port int) []string {
		peer := freePort(t)
		client := "http://127.0.0.1:" + strconv.Itoa(port)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
		return []string{bin, "--name", "airlock", "--data-dir", filepath.Join(dir, fmt.Sprintf("data-%d", port)),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "airlock=" + peerURL, "--log-level", "warn"}
	}, answersOK("/health"))
	e := &Etcd{URL: base}
	var lease struct {
		ID string `json:"ID"`
	}
	e.post(t, "/v3/lease/grant", map[string]any{"TTL": "86400"}, &lease)
	e.Lease = lease.ID
	rng := rand.New(rand.NewPCG(DefaultSeed, 7))
	type kv struct{ k, v string }
	var all []kv
	for i := range EtcdKeys {
		status := EtcdStatuses[0]
		switch r := rng.IntN(100); {
		case r >= 85:
			status = EtcdStatuses[2]
		case r >= 60:
			status = EtcdStatuses[1]
		}
		all = append(all, kv{fmt.Sprintf("%s%05d", EtcdPrefix, i), status})
	}
	for k, v := range EtcdHostileKeys {
		all = append(all, kv{k, v})
	}
	// One transaction per 100 puts (etcd takes at most 128 operations in
	// one): the seed costs a few dozen requests.
	for start := 0; start < len(all); start += 100 {
		var ops []any
		for i, p := range all[start:min(start+100, len(all))] {
			put := map[string]any{"key": b64(p.k), "value": b64(p.v)}
			if (start+i)%3 == 0 {
				put["lease"] = e.Lease
			}
			ops = append(ops, map[string]any{"request_put": put})
		}
		e.post(t, "/v3/kv/txn", map[string]any{"success": ops}, nil)
	}
	if n := len(e.KVs(t, "")); n != len(all) {
		t.Fatalf("etcd holds %d keys under %s, seeded %d", n, EtcdPrefix, len(all))
	}
	t.Logf("etcd: started and seeded %d keys in %.1fs at %s", len(all), time.Since(started).Seconds(), base)
	return e
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// post sends a JSON request to etcd's gateway and decodes the answer into
// out (when not nil).
func (e *Etcd) post(t testing.TB, path string, body, out any) {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodPost, e.URL+path, nil, body, http.StatusOK)
	if err != nil {
		t.Fatalf("etcd %s: %v", path, err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("etcd %s: decode %q: %v", path, truncate(b, 200), err)
		}
	}
}

// Range is the raw answer of one range request.
type etcdRange struct {
	Header struct {
		Revision string `json:"revision"`
	} `json:"header"`
	KVs []struct {
		Key         string `json:"key"`
		Value       string `json:"value"`
		ModRevision string `json:"mod_revision"`
		Lease       string `json:"lease"`
	} `json:"kvs"`
	More  bool   `json:"more"`
	Count string `json:"count"`
}

// KVs reads every key under EtcdPrefix in one unlimited range, at revision
// ("" for the current one), decoded.
func (e *Etcd) KVs(t testing.TB, revision string) []EtcdKV {
	t.Helper()
	req := map[string]any{"key": b64(EtcdPrefix), "range_end": b64(EtcdPrefixEnd)}
	if revision != "" {
		req["revision"] = revision
	}
	var r etcdRange
	e.post(t, "/v3/kv/range", req, &r)
	if r.More {
		t.Fatal("etcd: an unlimited range says more follows")
	}
	out := make([]EtcdKV, 0, len(r.KVs))
	for _, kv := range r.KVs {
		k, err1 := base64.StdEncoding.DecodeString(kv.Key)
		v, err2 := base64.StdEncoding.DecodeString(kv.Value)
		if err1 != nil || err2 != nil {
			t.Fatalf("etcd: a key or value is not base64: %q %q", kv.Key, kv.Value)
		}
		out = append(out, EtcdKV{Key: string(k), Value: string(v), ModRevision: kv.ModRevision, Lease: kv.Lease})
	}
	return out
}

// Records are the keys as records of the configuration's fields (key,
// value, lease: null when the key has none), for the suite's tables.
func (e *Etcd) Records(t testing.TB, revision string) []Record {
	t.Helper()
	var out []Record
	for _, kv := range e.KVs(t, revision) {
		r := Record{"id": kv.Key, "key": kv.Key, "value": kv.Value, "lease": nil}
		if kv.Lease != "" {
			r["lease"] = kv.Lease
		}
		out = append(out, r)
	}
	return out
}

// Revision is etcd's current revision.
func (e *Etcd) Revision(t testing.TB) string {
	t.Helper()
	var r etcdRange
	e.post(t, "/v3/kv/range", map[string]any{"key": b64(EtcdPrefix), "limit": "1"}, &r)
	return r.Header.Revision
}

// Put writes one key's value, as another writer would; it returns the
// revision the write made.
func (e *Etcd) Put(t testing.TB, key, value string) string {
	t.Helper()
	var r struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	e.post(t, "/v3/kv/put", map[string]any{"key": b64(key), "value": b64(value)}, &r)
	return r.Header.Revision
}

// Compact compacts etcd's history up to revision: ranges at an earlier
// revision are then refused.
func (e *Etcd) Compact(t testing.TB, revision string) {
	t.Helper()
	e.post(t, "/v3/kv/compaction", map[string]any{"revision": revision, "physical": true}, nil)
}

// RawRange sends one range request as given and returns the status and
// body, for the facts the configuration rests on.
func (e *Etcd) RawRange(t testing.TB, body map[string]any) Response {
	t.Helper()
	hdr, b, err := call(t.Context(), http.MethodPost, e.URL+"/v3/kv/range", nil, body, http.StatusOK)
	if he, ok := err.(*httpError); ok {
		return Response{Status: he.status, Header: hdr, Body: b}
	}
	if err != nil {
		t.Fatalf("etcd range: %v", err)
	}
	return Response{Status: http.StatusOK, Header: hdr, Body: b}
}

// B64 is s in base64, as etcd's JSON gateway writes keys and values.
func B64(s string) string { return b64(s) }
