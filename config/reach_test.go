package config

import (
	"strings"
	"testing"
)

// etcdResource is etcd's range as testdata/etcd.yaml declares it, with
// extra lines appended to the resource.
func etcdResource(pagination, extra string) []byte {
	return []byte(`environment: test
upstreams:
  etcd: {base_url: "http://127.0.0.1:2379"}
resources:
  keys:
    upstream: etcd
    list: {path: /v3/kv/range, method: POST, items: kvs, body: {key: YQ==}}
    pagination: {dialect: cursor, has_more: more, cursor_param: key, page_size_param: limit` + pagination + `}
    id_field: key
    version_field: mod_revision
    fields:
      key: {type: string, decode: base64}
      value: {type: string, decode: base64}
      mod_revision: {type: string}
` + extra)
}

func TestReachForms_AValidDeclarationParses(t *testing.T) {
	_, err := Parse(etcdResource(`, absent_means_zero: [more, kvs], cursor_field: key, cursor_exclusive: nul_suffix,
      snapshot: {from: header.revision, param: revision}, expiry: {status: [400], match: compacted}`,
		`    get: {method: POST, path: /v3/kv/range, body: {key: "{{id}}"}, item: kvs, absent: not_found}
actions:
  set_value:
    resource: keys
    request:
      method: POST
      path: /v3/kv/txn
      body: {compare: [{key: "{{id}}", mod_revision: "{{version}}"}], success: [{request_put: {key: "{{id}}", value: "{{after.value}}"}}]}
      outcome: {path: succeeded, applied: [true], conflict: [false], absent: false}
    conditional: version
    effect: [{field: value, to: archived}]
`))
	if err != nil {
		t.Fatal(err)
	}
}

func TestReachForms_EveryWrongDeclarationAtOnceWithItsLine(t *testing.T) {
	_, err := Parse(etcdResource(`, absent_means_zero: [count], cursor_field: nope, cursor_exclusive: plus_one,
      snapshot: {param: revision}`,
		`      lease: {type: integer, decode: hex}
    get: {method: POST, path: /v3/kv/range, body: {key: fixed}, item: kvs, absent: empty}
actions:
  set_value:
    resource: keys
    request:
      method: POST
      path: /v3/kv/txn
      body: {success: []}
      outcome: {path: succeeded, applied: [true], conflict: [true]}
    effect: [{field: value, to: archived}]
    outcomes: {path: x}
`))
	if err == nil {
		t.Fatal("parsed")
	}
	for _, want := range []string{
		`absent_means_zero.0: a member whose absence means its zero value`,
		`cursor_field: field "nope" is not declared`,
		`cursor_exclusive: use nul_suffix`,
		`snapshot.from: required`,
		`fields.lease.decode: use base64`,
		`get.body: a POST read names the item in its body`,
		`get.absent: use not_found`,
		`request.path: must name the target`,
		`outcome.conflict: true says both applied and conflict`,
		`outcomes: unknown key`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors:\n%v\nwant one holding %s", err, want)
		}
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, "line ") {
			t.Errorf("an error without its line: %q", line)
		}
	}
}
