package probe

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/read"
)

// queryTable is a fake DynamoDB answering Query with one partition's
// items, whatever the body asks; it keeps every body it was sent.
type queryTable struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (q *queryTable) serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.Query" {
			t.Errorf("unexpected %s %s %q", r.Method, r.URL.Path, r.Header.Get("X-Amz-Target"))
			http.NotFound(w, r)
			return
		}
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("body %s: %v", raw, err)
		}
		q.mu.Lock()
		q.bodies = append(q.bodies, body)
		q.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_ = json.NewEncoder(w).Encode(map[string]any{"Items": []any{
			map[string]any{"tenant": map[string]any{"S": "acme"}, "id": map[string]any{"S": "a1"}, "status": map[string]any{"S": "active"}},
			map[string]any{"tenant": map[string]any{"S": "acme"}, "id": map[string]any{"S": "a2"}, "status": map[string]any{"S": "closed"}},
		}, "Count": 2})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (q *queryTable) sent() []map[string]any {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]map[string]any(nil), q.bodies...)
}

// queryResource is a DynamoDB table read by Query (tenant the partition,
// id the sort key), with extra lines added to the resource.
func queryResource(t *testing.T, base, extra string) *upstream.Resource {
	t.Helper()
	cfg, err := config.Parse([]byte(`environment: test
upstreams:
  ddb: {base_url: "` + base + `", json_media_types: [application/x-amz-json-1.0]}
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
      expression: {param: FilterExpression, language: dynamodb, key_condition: {partition: tenant, sort: [id_from]}}
    pagination: {dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: 10}
    id_field: id
    fields:
      tenant: {type: string}
      id: {type: string}
      status: {type: string}
    filters:
      tenant: {expression: tenant}
      id_from: {field: id, op: gte, expression: id}
      status: {expression: status}
` + extra))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rt.Resources["ledger"]
}

// pinsAcme says whether a Query body's key condition pins tenant acme.
func pinsAcme(body map[string]any) bool {
	key, _ := body["KeyConditionExpression"].(string)
	names, _ := body["ExpressionAttributeNames"].(map[string]any)
	values, _ := body["ExpressionAttributeValues"].(map[string]any)
	for n, attr := range names {
		if attr != "tenant" || !strings.HasPrefix(key, n+" = :") {
			continue
		}
		ph := strings.Fields(strings.TrimPrefix(key, n+" = "))[0]
		v, _ := values[ph].(map[string]any)
		return v["S"] == "acme"
	}
	return false
}

// TestProbe_AQueryReadsTheDefaultFiltersPartition: probe and contract
// --live send a Query only with its KeyConditionExpression, pinned to
// the partition default_filter names, the filter under test beside it.
func TestProbe_AQueryReadsTheDefaultFiltersPartition(t *testing.T) {
	q := &queryTable{}
	srv := q.serve(t)
	r := queryResource(t, srv.URL, "    default_filter: {tenant: acme}\n")
	rep := CheckAssumptions(t.Context(), r, Options{})
	if status(rep, "list.path") == Unverifiable || status(rep, "list.path") == Wrong {
		t.Errorf("list.path %s: %+v", status(rep, "list.path"), rep.Checks)
	}
	d := read.Probe(t.Context(), r, "t", 1)
	if d.Decision == read.DecideStop {
		t.Errorf("contract --live: %+v", d)
	}
	bodies := q.sent()
	if len(bodies) < 2 {
		t.Fatalf("%d requests; want the probe's and contract's", len(bodies))
	}
	filtered := false
	for _, b := range bodies {
		if !pinsAcme(b) {
			t.Errorf("a Query without default_filter's partition: %v", b)
		}
		filtered = filtered || b["FilterExpression"] != nil
	}
	if !filtered {
		t.Error("no filter under test was sent beside the partition")
	}
}

// TestProbe_AQueryWithoutAPartitionIsNotSentAndSaysWhy: with no
// default_filter, nothing is sent; probe reports the list unverifiable
// saying a Query needs its partition, and contract --live stops, saying
// the same.
func TestProbe_AQueryWithoutAPartitionIsNotSentAndSaysWhy(t *testing.T) {
	q := &queryTable{}
	srv := q.serve(t)
	r := queryResource(t, srv.URL, "")
	rep := CheckAssumptions(t.Context(), r, Options{})
	var list *Check
	for i, c := range rep.Checks {
		if c.Check == "list.path" {
			list = &rep.Checks[i]
		}
	}
	if list == nil || list.Status != Unverifiable || !strings.Contains(list.Evidence, "a Query needs its partition") || !strings.Contains(list.Hint, "default_filter") {
		t.Errorf("list.path %+v; want unverifiable, naming the partition and default_filter", list)
	}
	if rep.Wrong() != 0 {
		t.Errorf("%d checks wrong: %+v", rep.Wrong(), rep.Checks)
	}
	d := read.Probe(t.Context(), r, "t", 1)
	if d.Decision != read.DecideStop || len(d.Details) == 0 || !strings.Contains(d.Details[0], "a Query needs its partition") {
		t.Errorf("contract --live: %+v", d)
	}
	if n := len(q.sent()); n != 0 || rep.Requests != 0 {
		t.Errorf("%d requests sent (%d counted); want none", n, rep.Requests)
	}
}
