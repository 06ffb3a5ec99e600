package tools

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
)

// queryConfig is a DynamoDB table keyed by tenant and id, listed by Query,
// read by GetItem, written by UpdateItem.
const queryConfig = `environment: test
upstreams:
  ddb:
    base_url: %q
    retries: 0
    json_media_types: [application/x-amz-json-1.0]
resources:
  ledger:
    upstream: ddb
    item_encoding: dynamodb
    list:
      path: /
      method: POST
      headers: {X-Amz-Target: DynamoDB_20120810.Query}
      body: {TableName: ledger}
      items: Items
      expression:
        param: FilterExpression
        language: dynamodb
        key_condition: {partition: tenant, sort: [id_from]}
    pagination: {dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: 10}
    get:
      method: POST
      path: /
      headers: {X-Amz-Target: DynamoDB_20120810.GetItem}
      body: {TableName: ledger, Key: {id: "{{id}}"}, ConsistentRead: true}
      item: Item
      absent: not_found
    id_field: id
    version_field: version
    fields:
      tenant: {type: string}
      id: {type: string}
      status: {type: string}
      version: {type: integer}
    filters:
      tenant: {expression: tenant}
      id_from: {field: id, op: gte, expression: id}
      status: {expression: status}
actions:
  set_status:
    resource: ledger
    description: Set an entry's status where its version is still the one read.
    request:
      method: POST
      path: /
      headers: {X-Amz-Target: DynamoDB_20120810.UpdateItem}
      body:
        TableName: ledger
        Key: {id: "{{id}}"}
        UpdateExpression: "SET #s = :new, #v = #v + :one"
        ConditionExpression: "#v = :expected"
        ExpressionAttributeNames: {"#s": status, "#v": version}
        ExpressionAttributeValues: {":new": "{{after.status}}", ":expected": "{{version}}", ":one": {N: "1"}}
        ReturnValues: ALL_NEW
    response: {item: Attributes}
    params: {type: object, required: [status], properties: {status: {type: string}}, additionalProperties: false}
    conditional: version
    effect: [{field: status, to: "{{params.status}}"}]
    approval: {mode: none}
`

// TestKeyedList_PreviewRefusesAnUnpinnedScopeButReadsNamedIDs: a preview
// over a Query resource's scope must pin the partition, as a search must
// (partition_required, before any request); a preview of named ids reads
// each by GetItem and needs no partition.
func TestKeyedList_PreviewRefusesAnUnpinnedScopeButReadsNamedIDs(t *testing.T) {
	var targets []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targets = append(targets, r.Header.Get("X-Amz-Target"))
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprint(w, `{"Item": {"tenant": {"S": "acme"}, "id": {"S": "inv-1"}, "status": {"S": "active"}, "version": {"N": "3"}}}`)
	}))
	t.Cleanup(srv.Close)
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	d := newDirect(t, fmt.Appendf(nil, queryConfig, srv.URL), func(c *Config) { c.Store = st })
	t.Cleanup(func() { d.deps.Engine.Wait(); st.Close() })
	action := map[string]any{"type": "set_status", "params": map[string]any{"status": "closed"}}

	for _, tool := range []string{"preview_selection", "search_all"} {
		args := map[string]any{"resource": "ledger", "filter": map[string]any{"status": "active"}}
		if tool == "preview_selection" {
			args["action"] = action
		}
		env, _ := d.call(tool, args)
		if p := env.Problem; p == nil || p.Code != envelope.ProblemInvalidArguments || len(p.Errors) != 1 ||
			p.Errors[0].Field != "filter.tenant" || p.Errors[0].Code != envelope.FieldPartitionRequired {
			t.Errorf("%s without the tenant: %+v; want partition_required on filter.tenant", tool, p)
		}
	}
	if len(targets) != 0 {
		t.Fatalf("a refused scope sent %v", targets)
	}
	env, data := d.call("preview_selection", map[string]any{"resource": "ledger", "ids": []string{"inv-1"}, "action": action})
	if env.Problem != nil || data["committable"] != true {
		t.Errorf("named ids: %+v %v; want a committable explicit selection", env.Problem, data["committable_reasons"])
	}
	if len(targets) != 1 || targets[0] != "DynamoDB_20120810.GetItem" {
		t.Errorf("named ids sent %v; want one GetItem", targets)
	}
}
