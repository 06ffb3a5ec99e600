package write

import (
	"net/http"
	"testing"

	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/read"
)

// couchAction is a bulk action on CouchDB's _bulk_docs, whose answer is a
// bare list of results: results: . reads the answer itself.
func couchAction(t *testing.T) *upstream.Action {
	t.Helper()
	return actionFrom(t, `environment: test
upstreams:
  couch: {base_url: "http://127.0.0.1:5984"}
resources:
  accounts:
    upstream: couch
    list: {path: /accounts/_all_docs, items: rows}
    pagination: {dialect: link}
    get: {path: "/accounts/{{id}}"}
    id_field: _id
    version_field: _rev
    fields:
      _id: {type: string}
      _rev: {type: string}
      status: {type: string}
actions:
  archive:
    resource: accounts
    bulk:
      method: POST
      path: /accounts/_bulk_docs
      body: {docs: "{{each}}"}
      each: {_id: "{{id}}", _rev: "{{version}}", status: "{{after.status}}"}
      max_batch: 50
      results: .
      result_id: id
      result_status: ok
      applied: [true]
    conditional: version
    effect: [{field: status, to: archived}]
`, "archive")
}

// TestParseBulk_ResultsDotReadsABareListAnswer: CouchDB answers
// _bulk_docs with 201 and a bare JSON list, one result per document; with
// results: . each target is read from it (applied, or not applied when
// CouchDB says conflict), never the whole batch an unreadable answer that
// leaves every target unknown though it applied.
func TestParseBulk_ResultsDotReadsABareListAnswer(t *testing.T) {
	a := couchAction(t)
	body := `[{"ok":true,"id":"a-01","rev":"2-7051cbe5c8faecd085a3fa619e6e6337"},` +
		`{"ok":true,"id":"a-02","rev":"3-825cb35de44c433bfb2df415563a19de"},` +
		`{"id":"a-03","error":"conflict","reason":"Document update conflict."}]`
	resp := read.RecordedResponse(http.StatusCreated, map[string]string{"Content-Type": "application/json"}, []byte(body))
	got, err := ParseBulk(a, resp, []string{"a-01", "a-02", "a-03"})
	if err != nil {
		t.Fatalf("CouchDB's bare-list answer is unreadable: %v", err)
	}
	if got["a-01"].Outcome != BulkApplied || got["a-02"].Outcome != BulkApplied {
		t.Errorf("a-01 and a-02 answered ok: true, read as %d and %d", got["a-01"].Outcome, got["a-02"].Outcome)
	}
	if got["a-03"].Outcome == BulkApplied {
		t.Error("a-03 answered a conflict and was read as applied")
	}
}
