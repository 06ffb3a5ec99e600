package write

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestRequest_AnActionsHeaderReplacesTheUpstreamsOfTheSameName: DynamoDB
// names the operation in X-Amz-Target; an upstream whose headers name the
// list's (Scan) and an action whose own names its write (UpdateItem) send
// the write with one X-Amz-Target, the action's, never both for the API
// to choose from. The upstream's other headers still go.
func TestRequest_AnActionsHeaderReplacesTheUpstreamsOfTheSameName(t *testing.T) {
	var mu sync.Mutex
	var seen http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{"Attributes": {"id": {"S": "a-01"}, "status": {"S": "archived"}}}`))
	}))
	t.Cleanup(ts.Close)
	cfg, err := config.Parse([]byte(`environment: test
upstreams:
  dynamodb:
    base_url: "` + ts.URL + `"
    headers: {X-Amz-Target: DynamoDB_20120810.Scan, Content-Type: application/x-amz-json-1.0}
resources:
  accounts:
    upstream: dynamodb
    list: {path: /, method: POST, body: {TableName: accounts}, items: Items}
    pagination: {dialect: cursor, next_cursor: NextToken, cursor_param: NextToken}
    get: {method: POST, path: /, body: {TableName: accounts, Key: {id: {S: "{{id}}"}}}, item: Item}
    id_field: id
    fields:
      id: {type: string, path: id.S}
      status: {type: string, path: status.S}
actions:
  archive:
    resource: accounts
    request:
      method: POST
      path: /
      headers: {X-Amz-Target: DynamoDB_20120810.UpdateItem}
      body:
        TableName: accounts
        Key: {id: {S: "{{id}}"}}
        UpdateExpression: "SET #s = :s"
        ExpressionAttributeNames: {"#s": status}
        ExpressionAttributeValues: {":s": {S: "{{after.status}}"}}
    conditional: reread
    effect: [{field: status, to: archived}]
`))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := rt.Actions["archive"]
	req, err := Request(a, template.Vars{ID: "a-01", Params: map[string]any{}, Before: map[string]any{"status": "active"},
		After: map[string]any{"status": "archived"}, OperationID: "op-1"}, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Resource.Upstream.Do(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := seen.Values("X-Amz-Target"); len(got) != 1 || got[0] != "DynamoDB_20120810.UpdateItem" {
		t.Errorf("X-Amz-Target sent as %q, want the action's alone", got)
	}
	if got := seen.Values("Content-Type"); len(got) != 1 || got[0] != "application/x-amz-json-1.0" {
		t.Errorf("Content-Type sent as %q, want the upstream's", got)
	}
}
