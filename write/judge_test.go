package write

import (
	"testing"

	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// couchAction is CouchDB's archive: a PUT of the whole document, at its
// _rev.
func couchPutAction(t *testing.T) *upstream.Action {
	t.Helper()
	return actionFrom(t, `environment: test
upstreams:
  couch: {base_url: "http://127.0.0.1:5984"}
resources:
  accounts:
    upstream: couch
    list: {path: /accounts/_find, method: POST, body: {selector: {}}, items: docs}
    pagination: {dialect: offset, offset_param: skip, page_size_param: limit, total: none}
    get: {path: "/accounts/{{id}}"}
    id_field: _id
    version_field: _rev
    fields:
      _id: {type: string}
      _rev: {type: string}
      status: {type: string}
      name: {type: string}
actions:
  archive:
    resource: accounts
    request: {method: PUT, path: "/accounts/{{id}}", body: "{{after}}"}
    conditional: version
    effect: [{field: status, to: archived}]
`, "archive")
}

// TestJudgeAnswer_AVersionedRecordWithoutItsVersionProvesNothing: the
// answer of a write to a resource with a version is the record after the
// write only with the version the write gave it. One that shows the
// effect without any version is not the whole record: a re-read decides.
func TestJudgeAnswer_AVersionedRecordWithoutItsVersionProvesNothing(t *testing.T) {
	a := couchPutAction(t)
	target := Target{ID: "acct-1", Version: "1-a", Before: map[string]any{"status": "active"}, After: map[string]any{"status": "archived"},
		Frame: FrameOf(a, map[string]any{"_id": "acct-1", "_rev": "1-a", "status": "active", "name": "ada"})}
	answer := func(body string) *transport.Response {
		return read.RecordedResponse(200, map[string]string{"Content-Type": "application/json"}, []byte(body))
	}
	if j := JudgeAnswer(a, answer(`{"_id": "acct-1", "_rev": "2-b", "status": "archived", "name": "ada"}`), target); j.Verdict != Proven {
		t.Fatalf("the target's record at a new _rev, archived: %v (%s); want proven", j.Verdict, j.Note)
	}
	if j := JudgeAnswer(a, answer(`{"_id": "acct-1", "status": "archived", "name": "ada"}`), target); j.Verdict != Unproven || j.Problem == nil {
		t.Fatalf("the target's record without its _rev: %v (%s); want unproven, for a re-read to decide", j.Verdict, j.Note)
	}
}

// TestJudgeAnswer_AnEchoOfAWholeRecordRequestProvesNothing: a request that
// sends the whole record ({{after}}) carries the target's id, the effect,
// every other field and the version it was sent at; an answer that only
// echoes it back looks like the record in every field but the version,
// which a write moves. It is no proof: a re-read decides.
func TestJudgeAnswer_AnEchoOfAWholeRecordRequestProvesNothing(t *testing.T) {
	a := couchPutAction(t)
	target := Target{ID: "acct-1", Version: "1-a", Before: map[string]any{"status": "active"}, After: map[string]any{"status": "archived"},
		Frame: FrameOf(a, map[string]any{"_id": "acct-1", "_rev": "1-a", "status": "active", "name": "ada"})}
	echo := read.RecordedResponse(200, map[string]string{"Content-Type": "application/json"},
		[]byte(`{"_id": "acct-1", "_rev": "1-a", "status": "archived", "name": "ada"}`))
	if j := JudgeAnswer(a, echo, target); j.Verdict != Unproven || j.Problem == nil {
		t.Fatalf("an echo of the whole-record request: %v (%s); want unproven, for a re-read to decide", j.Verdict, j.Note)
	}
}
