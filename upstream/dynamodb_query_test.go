package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// queryResource is a DynamoDB table keyed by a partition and a sort key,
// read by Query, whose attribute names are hostile: the names are bound,
// so none of them reaches an expression's text.
func queryResource(t *testing.T, extra string) *Resource {
	t.Helper()
	rt := runtimeFor(t, []byte(`environment: test
upstreams:
  ddb:
    base_url: http://127.0.0.1:1
    json_media_types: [application/x-amz-json-1.0]
resources:
  ledger:
    upstream: ddb
    item_encoding: dynamodb
    list:
      path: /
      method: POST
      headers: {X-Amz-Target: DynamoDB_20120810.Query}
      body: {TableName: ledger, ConsistentRead: true}
      items: Items
      expression:
        param: FilterExpression
        language: dynamodb
        key_condition: {partition: tenant, sort: [id, id_from, id_before, id_through]}
    pagination: {dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: 10}
    id_field: id
    fields:
      tenant: {type: string}
      id: {type: string}
      status: {type: string, nullable: true}
      seats: {type: integer}
    filters:
      tenant: {expression: "te#n:ant) OR (x"}
      id: {expression: "i'd"}
      id_from: {field: id, op: gte, expression: "i'd"}
      id_before: {field: id, op: lt, expression: "i'd"}
      id_through: {field: id, op: lte, expression: "i'd"}
      status: {expression: "#status :v"}
      seats: {expression: seats}
`+extra))
	return rt.Resources["ledger"]
}

// queryBody is the body of the first page's request for filter (a probe
// when probe is set).
func queryBody(t *testing.T, r *Resource, filter map[string]any, probe bool) map[string]any {
	t.Helper()
	req, err := r.PageRequest(r.Sources[0], dialect.State{}, dialect.ListOptions{Filter: filter, Probe: probe})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonvalue.Decode(req.Body)
	if err != nil {
		t.Fatalf("body %s: %v", req.Body, err)
	}
	return doc.(map[string]any)
}

// placeholdersOnly is an expression made of placeholders and operators.
var placeholdersOnly = regexp.MustCompile(`^[()#:a-zA-Z0-9_, =<>]+$`)

// TestDynamoDBQuery_KeyConditionBindsHostileKeysAndTheRestFilter: a
// search that pins the partition (and gives one sort condition) is sent
// as a KeyConditionExpression, partition first, with the other filters in
// the FilterExpression; both texts hold placeholders and operators alone
// whatever the names and values hold, every binding is used, and no key
// attribute is in the FilterExpression.
func TestDynamoDBQuery_KeyConditionBindsHostileKeysAndTheRestFilter(t *testing.T) {
	r := queryResource(t, "")
	hostile := map[string]any{
		"tenant":  `t' OR 1=1 -- #f0 :f0v0`,
		"id_from": `x) OR begins_with(#f1, :z`,
		"status":  []any{`O'Brien "q"`, "#status :v"},
		"seats":   json.Number("20"),
	}
	typed, errs := r.TypedFilter(hostile)
	if len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	body := queryBody(t, r, typed, false)
	key, _ := body["KeyConditionExpression"].(string)
	filter, _ := body["FilterExpression"].(string)
	// Filters sorted: id 0, id_before 1, id_from 2, id_through 3, seats 4, status 5, tenant 6.
	if key != "#f6 = :f6v0 AND #f2 >= :f2v0" {
		t.Errorf("KeyConditionExpression %q; want the partition's equality, then the sort key's condition", key)
	}
	if filter != "(#f4 = :f4v0) AND (#f5 IN (:f5v0, :f5v1))" {
		t.Errorf("FilterExpression %q; want seats and status alone", filter)
	}
	names, _ := body["ExpressionAttributeNames"].(map[string]any)
	values, _ := body["ExpressionAttributeValues"].(map[string]any)
	for _, e := range []string{key, filter} {
		if !placeholdersOnly.MatchString(e) {
			t.Errorf("the expression %q holds more than placeholders and operators", e)
		}
	}
	for ph := range names {
		if !strings.Contains(key, ph+" ") && !strings.Contains(filter, ph+" ") {
			t.Errorf("name %s bound but used in neither expression", ph)
		}
	}
	for ph := range values {
		if !regexp.MustCompile(regexp.QuoteMeta(ph) + `\b`).MatchString(key + " " + filter) {
			t.Errorf("value %s bound but used in neither expression", ph)
		}
	}
	want := map[string]any{
		"names": map[string]any{"#f6": "te#n:ant) OR (x", "#f2": "i'd", "#f4": "seats", "#f5": "#status :v"},
		"values": map[string]any{
			":f6v0": map[string]any{"S": hostile["tenant"]}, ":f2v0": map[string]any{"S": hostile["id_from"]},
			":f4v0": map[string]any{"N": "20"}, ":f5v0": map[string]any{"S": `O'Brien "q"`}, ":f5v1": map[string]any{"S": "#status :v"},
		},
	}
	if !jsonvalue.Equal(map[string]any{"names": names, "values": values}, want) {
		got, _ := json.Marshal(map[string]any{"names": names, "values": values})
		t.Errorf("bindings %s", got)
	}
	if body["TableName"] != "ledger" || body["ConsistentRead"] != true {
		t.Errorf("the list's own body lost: %v", body)
	}
}

// TestDynamoDBQuery_WhatAKeyConditionCannotCarryIsAirlocksAlone: a sort
// filter given a list of values is not in the key condition (DynamoDB's
// takes one value), and is applied by airlock, saying why; the partition
// alone is a key condition without a FilterExpression.
func TestDynamoDBQuery_WhatAKeyConditionCannotCarryIsAirlocksAlone(t *testing.T) {
	r := queryResource(t, "")
	body := queryBody(t, r, map[string]any{"tenant": "acme", "id": []any{"a", "b"}}, false)
	if body["KeyConditionExpression"] != "#f6 = :f6v0" || body["FilterExpression"] != nil {
		t.Errorf("body %v; want the partition's condition alone", body)
	}
	if names := body["ExpressionAttributeNames"].(map[string]any); len(names) != 1 {
		t.Errorf("names %v; want the partition key's alone", names)
	}
	if body := queryBody(t, r, map[string]any{"tenant": "acme", "id_from": ""}, false); body["KeyConditionExpression"] != "#f6 = :f6v0" {
		t.Errorf("an empty sort key value sent: %v", body)
	}
	if _, why := r.SentFilter(map[string]any{"tenant": "acme", "id": []any{"a", "b"}}); !strings.Contains(why, "one value") {
		t.Errorf("why = %q; want the key condition's one value named", why)
	}
	if got := r.LocalFilters(map[string]any{"tenant": "acme", "id": []any{"a", "b"}}); len(got) != 1 || got[0] != "filter.id" {
		t.Errorf("local filters %v; want filter.id", got)
	}
}

// TestDynamoDBQuery_AProbeKeepsThePartition: a probe (the first page at
// size 1, without the filters) still reads the one partition the search
// names, since a Query cannot be asked without it; the other filters are
// left out.
func TestDynamoDBQuery_AProbeKeepsThePartition(t *testing.T) {
	r := queryResource(t, "")
	body := queryBody(t, r, map[string]any{"tenant": "acme", "status": "x", "id_before": "m"}, true)
	if body["KeyConditionExpression"] != "#f6 = :f6v0 AND #f1 < :f1v0" || body["FilterExpression"] != nil || body["Limit"] != json.Number("1") {
		t.Errorf("probe body %v", body)
	}
}

// TestDynamoDBQuery_RefusesASearchThatPinsNoPartition: a search without
// the partition filter, or giving it several values or null, is refused
// with partition_required naming the filter; two sort conditions with
// one_sort_condition naming the second; the resource's default_filter
// pins the partition for a caller who does not.
func TestDynamoDBQuery_RefusesASearchThatPinsNoPartition(t *testing.T) {
	r := queryResource(t, "")
	for _, tc := range []struct {
		filter map[string]any
		field  string
		code   envelope.FieldCode
	}{
		{map[string]any{"status": "active"}, "filter.tenant", envelope.FieldPartitionRequired},
		{nil, "filter.tenant", envelope.FieldPartitionRequired},
		{map[string]any{"tenant": []any{"a", "b"}}, "filter.tenant", envelope.FieldPartitionRequired},
		{map[string]any{"tenant": nil}, "filter.tenant", envelope.FieldPartitionRequired},
		{map[string]any{"tenant": ""}, "filter.tenant", envelope.FieldPartitionRequired},
		{map[string]any{"tenant": "a", "id_from": "b", "id_before": "c"}, "filter.id_before", envelope.FieldOneSortCondition},
		{map[string]any{"tenant": "a", "id": "b", "id_through": "c"}, "filter.id_through", envelope.FieldOneSortCondition},
		{map[string]any{"tenant": "a", "id_from": "b", "id_through": "a"}, "filter.id_through", envelope.FieldOutOfRange},
	} {
		typed, errs := r.TypedFilter(tc.filter)
		errs = append(errs, r.CheckListFilter(typed)...)
		found := false
		for _, e := range errs {
			found = found || (e.Field == tc.field && e.Code == tc.code)
		}
		if !found {
			t.Errorf("%v: errors %v; want %s on %s", tc.filter, errs, tc.code, tc.field)
		}
	}
	if typed, errs := r.TypedFilter(map[string]any{"tenant": []any{"a"}, "id": "x"}); len(errs)+len(r.CheckListFilter(typed)) > 0 {
		t.Errorf("a list of one pins the partition: %v", errs)
	}
	d := queryResource(t, "    default_filter: {tenant: acme}\n")
	if typed, errs := d.TypedFilter(map[string]any{"status": "active"}); len(errs)+len(d.CheckListFilter(typed)) > 0 {
		t.Errorf("the default filter pins the partition: %v", errs)
	}
}

// TestDynamoDBQuery_AGteAndAnLteAreOneBetween: a lower and an upper bound
// on the sort key are its one condition, BETWEEN, with the lower bound's
// name alone bound (DynamoDB refuses an unused placeholder); equal bounds
// are a range of one.
func TestDynamoDBQuery_AGteAndAnLteAreOneBetween(t *testing.T) {
	r := queryResource(t, "")
	filter := map[string]any{"tenant": "acme", "id_from": "inv-1", "id_through": "inv-1"}
	if typed, errs := r.TypedFilter(filter); len(errs)+len(r.CheckListFilter(typed)) > 0 {
		t.Fatalf("refused: %v %v", errs, r.CheckListFilter(typed))
	}
	body := queryBody(t, r, filter, false)
	if body["KeyConditionExpression"] != "#f6 = :f6v0 AND #f2 BETWEEN :f2v0 AND :f3v0" {
		t.Errorf("KeyConditionExpression %v", body["KeyConditionExpression"])
	}
	names := body["ExpressionAttributeNames"].(map[string]any)
	values := body["ExpressionAttributeValues"].(map[string]any)
	if len(names) != 2 || names["#f2"] != "i'd" || len(values) != 3 {
		t.Errorf("names %v values %v; want the tenant's and the lower bound's names, three values", names, values)
	}
}

// TestDynamoDBQuery_APartitionTheSenderWouldDropIsRefusedNeverSentBare:
// were a partition field normalized or given null stand-ins (check
// refuses both; the configuration is altered after it, as a defence in
// depth), its value would not be sent as the key condition: the check
// answers partition_required, as the sender decides, and the page request
// is an invalid-arguments problem, never a Query without its partition.
func TestDynamoDBQuery_APartitionTheSenderWouldDropIsRefusedNeverSentBare(t *testing.T) {
	for name, alter := range map[string]func(*config.FieldConfig){
		"normalize":   func(f *config.FieldConfig) { f.Normalize = "lower" },
		"null_values": func(f *config.FieldConfig) { f.NullValues = []any{"acme"} },
	} {
		t.Run(name, func(t *testing.T) {
			r := queryResource(t, "")
			alter(r.Config.Fields["tenant"])
			typed, errs := r.TypedFilter(map[string]any{"tenant": "acme"})
			errs = append(errs, r.CheckListFilter(typed)...)
			if len(errs) != 1 || errs[0].Field != "filter.tenant" || errs[0].Code != envelope.FieldPartitionRequired {
				t.Errorf("check: %v; want partition_required on filter.tenant", errs)
			}
			req, err := r.PageRequest(r.Sources[0], dialect.State{}, dialect.ListOptions{Filter: map[string]any{"tenant": "acme"}})
			if err == nil {
				t.Fatalf("a Query without its partition was built: %s", req.Body)
			}
			p := transport.ProblemFor(err, nil)
			if p.Code != envelope.ProblemInvalidArguments || len(p.Errors) != 1 || p.Errors[0].Code != envelope.FieldPartitionRequired {
				t.Errorf("problem %+v; want invalid arguments naming partition_required", p)
			}
			if _, err := r.PageRequest(r.Sources[0], dialect.State{}, dialect.ListOptions{Filter: map[string]any{"tenant": "acme"}, Probe: true}); err == nil {
				t.Error("a probe without its partition was built")
			}
		})
	}
}

// TestDynamoDBQuery_ReadsOutsideAScanTakeTheDefaultFiltersPartition: the
// first page a probe reads, and its raw walks with the filter under test,
// pin the partition default_filter names; without one, nothing is built
// or sent and the error is ErrPartitionNeeded.
func TestDynamoDBQuery_ReadsOutsideAScanTakeTheDefaultFiltersPartition(t *testing.T) {
	d := queryResource(t, "    default_filter: {tenant: acme, status: active}\n")
	req, err := d.FirstPageRequest("t")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := jsonvalue.Decode(req.Body)
	if b := body.(map[string]any); b["KeyConditionExpression"] != "#f6 = :f6v0" || b["FilterExpression"] != nil {
		t.Errorf("first page %v; want default_filter's partition alone", b)
	}
	scope, err := d.ListScope(map[string]any{"seats": json.Number("2")})
	if err != nil || scope["tenant"] != "acme" || scope["seats"] != json.Number("2") || len(scope) != 2 {
		t.Errorf("scope %v, %v; want the filter under test and the partition", scope, err)
	}
	r := queryResource(t, "")
	if _, err := r.FirstPageRequest("t"); !errors.Is(err, ErrPartitionNeeded) {
		t.Errorf("first page without a partition: %v", err)
	}
	sent := 0
	_, err = r.WalkRaw(t.Context(), RawWalkSpec{Filter: map[string]any{"seats": json.Number("2")}, MaxPages: 3,
		Send: func(context.Context, transport.Request) (*transport.Response, error) {
			sent++
			return nil, errors.New("sent")
		}})
	if !errors.Is(err, ErrPartitionNeeded) || sent != 0 {
		t.Errorf("raw walk without a partition: %v, %d sent", err, sent)
	}
}
