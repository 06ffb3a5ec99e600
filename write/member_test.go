package write

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// etcdAction is etcd's conditional put: a body-keyed txn whose answer
// says in succeeded (omitted when false) whether its compare held.
func etcdAction(t *testing.T) *upstream.Action {
	t.Helper()
	return etcdActionAt(t, "http://127.0.0.1:2379")
}

func etcdActionAt(t *testing.T, baseURL string) *upstream.Action {
	t.Helper()
	return actionFrom(t, `environment: test
upstreams:
  etcd: {base_url: "`+baseURL+`"}
resources:
  keys:
    upstream: etcd
    list: {path: /v3/kv/range, method: POST, items: kvs, body: {key: YQ==}}
    pagination: {dialect: cursor, has_more: more, cursor_param: key}
    get: {method: POST, path: /v3/kv/range, body: {key: "{{id}}"}, item: kvs, absent: not_found}
    id_field: key
    version_field: mod_revision
    fields:
      key: {type: string, decode: base64}
      value: {type: string, decode: base64}
      mod_revision: {type: string}
actions:
  set_value:
    resource: keys
    request:
      method: POST
      path: /v3/kv/txn
      body:
        compare: [{key: "{{id}}", target: MOD, result: EQUAL, mod_revision: "{{version}}"}]
        success: [{request_put: {key: "{{id}}", value: "{{after.value}}"}}]
      outcome: {path: succeeded, applied: [true], conflict: [false], absent: false}
    idempotency_header: Idempotency-Key
    params: {type: object, required: [value], properties: {value: {type: string}}}
    conditional: version
    effect: [{field: value, to: "{{params.value}}"}]
`, "set_value")
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestBodyKeyedWrite_NamesTheTargetEncodedInItsBody: etcd's txn names the
// key in its body, in base64 as the API holds it, and the new value too;
// a key that is no URL path segment ("." or one with a slash) is written.
func TestBodyKeyedWrite_NamesTheTargetEncodedInItsBody(t *testing.T) {
	a := etcdAction(t)
	for _, id := range []string{"accounts/1", ".", "quote'd \"key\""} {
		req, err := Request(a, template.Vars{ID: id, Version: "7", After: map[string]any{"value": "retired"}, OperationID: "op_1"}, "req")
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		var body struct {
			Compare []map[string]any `json:"compare"`
			Success []struct {
				Put map[string]any `json:"request_put"`
			} `json:"success"`
		}
		if err := json.Unmarshal(req.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Compare[0]["key"] != b64(id) || body.Compare[0]["mod_revision"] != "7" || body.Success[0].Put["key"] != b64(id) || body.Success[0].Put["value"] != b64("retired") {
			t.Errorf("%q: body %s; want the key and value in base64 and the version compared", id, req.Body)
		}
		if req.URL.Path != "/v3/kv/txn" || req.Header.Get("Idempotency-Key") != IdempotencyKey("op_1", id) {
			t.Errorf("%q: %s %s, key %q; want the txn path and a key derived from the decoded id", id, req.Method, req.URL, req.Header.Get("Idempotency-Key"))
		}
	}
	if _, err := Request(a, template.Vars{ID: "", Version: "7"}, "req"); err == nil {
		t.Error("an empty id was written")
	}
}

func TestOutcomeMember_DecidesAppliedConflictOrUnknown(t *testing.T) {
	a := etcdAction(t)
	for _, tc := range []struct {
		body string
		want MemberOutcome
	}{
		{`{"header":{"revision":"9"},"succeeded":true,"responses":[]}`, MemberApplied},
		{`{"header":{"revision":"9"}}`, MemberConflict}, // proto3 omits false
		{`{"header":{"revision":"9"},"succeeded":false}`, MemberConflict},
		{`{"header":{"revision":"9"},"succeeded":"yes"}`, MemberUnknown},
		{``, MemberUnknown},
		{`not json`, MemberUnknown},
		// An absence means false only in an answer that is one.
		{`{}`, MemberUnknown},
		{`null`, MemberUnknown},
		{`[]`, MemberUnknown},
		{`"ok"`, MemberUnknown},
		{`{"error":"etcdserver: request timed out","code":14}`, MemberUnknown},
	} {
		resp := &transport.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(tc.body)}
		if got := MemberVerdict(a, resp); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.body, got, tc.want)
		}
	}
}

// TestReadByPOST_NamesTheKeyEncodedAndAnAbsentItemIsNotFound: etcd reads
// a key back by POST /v3/kv/range {key}; an answer without kvs (proto3
// omits an empty list) is not found, one with the key is the item,
// decoded.
func TestReadByPOST_NamesTheKeyEncodedAndAnAbsentItemIsNotFound(t *testing.T) {
	r := etcdAction(t).Resource
	req, err := read.Request(r, "accounts/1", "req")
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != http.MethodPost || !strings.Contains(string(req.Body), b64("accounts/1")) {
		t.Errorf("%s %s; want a POST naming the key in base64", req.Method, req.Body)
	}
	if m := read.ItemOf(r, map[string]any{"header": map[string]any{}}); m != nil {
		t.Errorf("an answer without kvs read as %v", m)
	}
	m := read.ItemOf(r, map[string]any{"kvs": []any{map[string]any{"key": b64("accounts/1"), "value": b64("active"), "mod_revision": "3"}}})
	if m == nil || m["key"] != "accounts/1" || m["value"] != "active" {
		t.Errorf("item %v; want the key and value decoded", m)
	}
}

// TestReadByPOST_AnotherKeyIsNotTheTarget: a read by POST whose answer
// holds another key than the one asked for (a range the body made by
// mistake) is refused, never taken for the target.
func TestReadByPOST_AnotherKeyIsNotTheTarget(t *testing.T) {
	answer := func(key string) string {
		return `{"header":{"revision":"9"},"kvs":[{"key":"` + b64(key) + `","value":"` + b64("v") + `","mod_revision":"3"}],"count":"1"}`
	}
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	defer srv.Close()
	r := etcdActionAt(t, srv.URL).Resource
	body.Store(answer("asked"))
	if _, _, found, err := read.Item(t.Context(), r, "asked", "req"); !found || err != nil {
		t.Fatalf("the asked key: found %v, %v", found, err)
	}
	body.Store(answer("other"))
	if m, _, found, err := read.Item(t.Context(), r, "asked", "req"); found || err == nil {
		t.Fatalf("another key's answer read as the target: %v, found %v, err %v", m, found, err)
	}
}
