package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// fakeDynamo is a peer that answers DynamoDB's Scan and GetItem over typed
// items, keyed by pk (S), in pk order. It names its operation by
// X-Amz-Target, as DynamoDB does, and fails the test on another. It does
// not evaluate FilterExpression (airlock re-checks every item); it keeps
// every request's body for the test to read. lastKey, when set, replaces
// the LastEvaluatedKey of its first answer (a malformed continuation).
type fakeDynamo struct {
	t       *testing.T
	items   []map[string]any
	lastKey string
	mu      sync.Mutex
	bodies  []map[string]any
	targets []string
}

func (f *fakeDynamo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	doc, err := jsonvalue.Decode(b)
	body, _ := doc.(map[string]any)
	if err != nil || body == nil {
		f.t.Errorf("a request body that is not a JSON object: %s", b)
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.targets = append(f.targets, target)
	first := len(f.bodies) == 1
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch target {
	case "DynamoDB_20120810.Scan":
		limit, _ := jsonvalue.Int(body["Limit"])
		start := ""
		if k, ok := body["ExclusiveStartKey"].(map[string]any); ok {
			start = k["pk"].(map[string]any)["S"].(string)
		}
		var page []any
		var last string
		for _, it := range f.items {
			pk := it["pk"].(map[string]any)["S"].(string)
			if pk <= start {
				continue
			}
			if len(page) == limit {
				break
			}
			page, last = append(page, it), pk
		}
		out := map[string]any{"Items": page, "Count": len(page), "ScannedCount": len(page)}
		if len(page) == limit && last != f.items[len(f.items)-1]["pk"].(map[string]any)["S"] {
			out["LastEvaluatedKey"] = map[string]any{"pk": map[string]any{"S": last}}
		}
		enc, _ := json.Marshal(out)
		if first && f.lastKey != "" {
			enc = []byte(fmt.Sprintf(`{"Items":[],"Count":0,"ScannedCount":%d,"LastEvaluatedKey":%s}`, limit, f.lastKey))
		}
		_, _ = w.Write(enc)
	case "DynamoDB_20120810.GetItem":
		want := body["Key"].(map[string]any)["pk"]
		for _, it := range f.items {
			if jsonvalue.Equal(it["pk"], want) {
				enc, _ := json.Marshal(map[string]any{"Item": it})
				_, _ = w.Write(enc)
				return
			}
		}
		_, _ = w.Write([]byte(`{}`))
	default:
		f.t.Errorf("an operation the list and the read do not name: %q", target)
		http.Error(w, "unknown operation", http.StatusBadRequest)
	}
}

// typedItem is one DynamoDB item as the API writes it.
func typedItem(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

// dynamoResource is a resource over a fakeDynamo, described as the docs
// describe a DynamoDB table.
func dynamoResource(t *testing.T, f *fakeDynamo, pageSize int) *Resource {
	t.Helper()
	f.t = t
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	rt := runtimeFor(t, []byte(fmt.Sprintf(`environment: test
upstreams:
  ddb:
    base_url: %q
    retries: 0
    timeout: 5s
    json_media_types: [application/x-amz-json-1.0]
    headers: {X-Amz-Target: DynamoDB_20120810.Unset}
resources:
  accounts:
    upstream: ddb
    item_encoding: dynamodb
    list:
      path: /
      method: POST
      headers: {X-Amz-Target: DynamoDB_20120810.Scan}
      body: {TableName: accounts}
      items: Items
      expression: {param: FilterExpression, language: dynamodb}
    pagination: {dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: %d}
    get:
      method: POST
      path: /
      headers: {X-Amz-Target: DynamoDB_20120810.GetItem}
      body: {TableName: accounts, Key: {pk: "{{id}}"}, ConsistentRead: true}
      item: Item
      absent: not_found
    id_field: pk
    fields:
      pk: {type: string}
      status: {type: string}
      owner: {type: string, nullable: true}
      n: {type: integer}
      tags: {type: array, elements: string, set: SS}
    filters:
      status: {expression: status}
      owner: {expression: "o#w:n er \"x\""}
`, ts.URL, pageSize)))
	return rt.Resources["accounts"]
}

// TestDynamoDBScan_SendsTheObjectBackWholeAndReadsTypedValuesExactly: a
// Scan's LastEvaluatedKey goes back whole as ExclusiveStartKey under the
// list's own X-Amz-Target; values read through their type tags, a number
// beyond 2^53 exactly, NULL and an absent attribute both null, a set as
// a list. (A read by id: package read's
// TestDynamoDBRead_GoesOutAsGetItemWithTheIdTyped.)
func TestDynamoDBScan_SendsTheObjectBackWholeAndReadsTypedValuesExactly(t *testing.T) {
	f := &fakeDynamo{}
	for i := range 7 {
		s := fmt.Sprintf(`{"pk":{"S":"acct#%02d"},"status":{"S":"active"},"n":{"N":"9007199254740993"},"tags":{"SS":["a","b"]}}`, i)
		switch i {
		case 2:
			s = fmt.Sprintf(`{"pk":{"S":"acct#%02d"},"status":{"S":"active"},"owner":{"NULL":true},"n":{"N":"1"}}`, i)
		case 3:
			s = fmt.Sprintf(`{"pk":{"S":"acct#%02d"},"status":{"S":"closed"},"owner":{"S":"ann"},"n":{"N":"2"}}`, i)
		}
		f.items = append(f.items, typedItem(t, s))
	}
	r := dynamoResource(t, f, 3)
	sink := &itemSink{}
	s := r.NewScan(ScanSpec{Sink: sink, RequestID: "t"})
	if err := s.Run(context.Background(), Budget{Deadline: 30e9, MaxPages: 100, PagesLimitSource: "airlock"}); err != nil {
		t.Fatal(err)
	}
	out := s.Outcome()
	if !out.ScanComplete || out.Matched != 7 {
		t.Fatalf("complete %v, matched %d (reasons %+v); want complete with 7", out.ScanComplete, out.Matched, out.Reasons)
	}
	for _, it := range sink.items {
		if n := it.Doc["n"]; it.ID != "acct#02" && it.ID != "acct#03" && n != json.Number("9007199254740993") {
			t.Errorf("%s: n = %#v; want 9007199254740993 exactly", it.ID, n)
		}
		if v, ok := it.Doc["owner"]; ok && v != nil && it.ID != "acct#03" {
			t.Errorf("%s: owner = %#v; want null", it.ID, v)
		}
	}
	for i, tg := range f.targets {
		if tg != "DynamoDB_20120810.Scan" {
			t.Errorf("request %d went out as %q", i, tg)
		}
	}
	second := f.bodies[1]
	if k, _ := jsonvalue.Canonical(second["ExclusiveStartKey"]); string(k) != `{"pk":{"S":"acct#02"}}` {
		t.Errorf("second page's ExclusiveStartKey %s; want the first page's LastEvaluatedKey whole", k)
	}

	if got := r.Encode("tags", []any{"a", "c"}); !jsonvalue.Equal(got, map[string]any{"SS": []any{"a", "c"}}) {
		t.Errorf("tags written back as %v; want the declared set type", got)
	}
	if got := r.Encode("n", json.Number("9007199254740995")); !jsonvalue.Equal(got, map[string]any{"N": "9007199254740995"}) {
		t.Errorf("n written back as %v; want its exact text as N", got)
	}
}

// TestDynamoDBScan_AnUnreadableLastEvaluatedKeyIsDoubt: a continuation
// sent whole that is a string, null or {} on a page with no item is not
// the end (DynamoDB leaves it out on the last page): the scan is not
// complete and names the member.
func TestDynamoDBScan_AnUnreadableLastEvaluatedKeyIsDoubt(t *testing.T) {
	for _, key := range []string{`"acct#03"`, `null`, `{}`} {
		t.Run(key, func(t *testing.T) {
			f := &fakeDynamo{lastKey: key, items: []map[string]any{typedItem(t, `{"pk":{"S":"a"},"status":{"S":"active"}}`)}}
			r := dynamoResource(t, f, 3)
			_, out, err := scanAll(t, r, nil, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if out.ScanComplete {
				t.Fatalf("complete over a LastEvaluatedKey of %s", key)
			}
			if rs := reasonOf(out, envelope.SignalUnreadable); rs == nil || rs.Member != "LastEvaluatedKey" {
				t.Fatalf("reasons %+v; want SIGNAL_UNREADABLE naming LastEvaluatedKey", out.Reasons)
			}
		})
	}
}

// TestDynamoDBFilter_BindsEveryNameAndValue: a filter sent in a DynamoDB
// FilterExpression names its attribute and its values only through
// ExpressionAttributeNames and ExpressionAttributeValues: the expression's
// text holds placeholders and operators alone, whatever the name and the
// values hold (quotes, #, :, spaces, unicode); null is an absent
// attribute or one of type NULL.
func TestDynamoDBFilter_BindsEveryNameAndValue(t *testing.T) {
	hostile := []any{`a' OR 1=1 --`, `#f0`, `:f1v0`, `x) OR (attribute_exists(pk)`, "ünï cødé \"q\""}
	f := &fakeDynamo{items: []map[string]any{typedItem(t, `{"pk":{"S":"a"},"status":{"S":"active"}}`)}}
	r := dynamoResource(t, f, 3)
	for _, filter := range []map[string]any{
		{"status": hostile, "owner": `o'"#:v`},
		{"owner": nil},
	} {
		f.bodies = nil
		if _, _, err := scanAll(t, r, filter, Budget{}); err != nil {
			t.Fatal(err)
		}
		body := f.bodies[0]
		expr, _ := body["FilterExpression"].(string)
		if expr == "" {
			t.Fatalf("no FilterExpression sent for %v: %v", filter, body)
		}
		if !regexp.MustCompile(`^[()#:a-zA-Z0-9_, =]+$`).MatchString(expr) {
			t.Errorf("the expression %q holds more than placeholders and operators", expr)
		}
		names, _ := body["ExpressionAttributeNames"].(map[string]any)
		values, _ := body["ExpressionAttributeValues"].(map[string]any)
		for ph := range names {
			if !strings.Contains(expr, ph) {
				t.Errorf("name %s bound but not used in %q", ph, expr)
			}
		}
		for ph := range values {
			if !strings.Contains(expr, ph) {
				t.Errorf("value %s bound but not used in %q", ph, expr)
			}
		}
		if v, ok := filter["status"].([]any); ok {
			var got []string
			for _, av := range values {
				if s, ok := av.(map[string]any)["S"].(string); ok {
					got = append(got, s)
				}
			}
			for _, h := range v {
				if !slices.Contains(got, h.(string)) {
					t.Errorf("value %q not bound as S: %v", h, values)
				}
			}
			if !slices.Contains(mapValues(names), `o#w:n er "x"`) || !strings.Contains(expr, " IN (") {
				t.Errorf("names %v, expression %q; want the hostile attribute name bound and IN", names, expr)
			}
		} else if !strings.Contains(expr, "attribute_not_exists(") || !strings.Contains(expr, "attribute_type(") {
			t.Errorf("null sent as %q; want absent or of type NULL", expr)
		}
	}
}

func mapValues(m map[string]any) []any {
	var out []any
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// itemSink keeps the items a scan delivers.
type itemSink struct{ items []*Item }

func (s *itemSink) Add(it *Item) error { s.items = append(s.items, it); return nil }

// TestDynamoDBScanState_SealsTheWholeObjectAndResumesFromIt: a scan saved
// after one page keeps LastEvaluatedKey only sealed, and resumed (as
// another process would) sends it back whole, typed, as
// ExclusiveStartKey.
func TestDynamoDBScanState_SealsTheWholeObjectAndResumesFromIt(t *testing.T) {
	f := &fakeDynamo{}
	for i := range 5 {
		f.items = append(f.items, typedItem(t, fmt.Sprintf(`{"pk":{"S":"secret-key-%02d"},"status":{"S":"active"}}`, i)))
	}
	r := dynamoResource(t, f, 2)
	sink := &collect{}
	scan := r.NewScan(ScanSpec{Sink: sink, RequestID: "t"})
	if err := scan.Run(context.Background(), Budget{MaxPages: 1, PagesLimitSource: "caller", Deadline: 60e9}); err != nil {
		t.Fatal(err)
	}
	state, err := scan.State(xorSealer(0x5a))
	if err != nil {
		t.Fatal(err)
	}
	// The last id is kept in clear, as for every dialect; the object is
	// not.
	if strings.Contains(string(state), `"pk"`) || strings.Contains(string(state), `{\"S\"`) {
		t.Fatalf("the state shows the continuation object: %s", state)
	}
	resumed, err := r.ResumeScan(ScanSpec{Sink: sink, RequestID: "t"}, state, xorSealer(0x5a))
	if err != nil {
		t.Fatal(err)
	}
	if err := resumed.Run(context.Background(), Budget{MaxPages: 10, PagesLimitSource: "caller", Deadline: 60e9}); err != nil {
		t.Fatal(err)
	}
	if !resumed.Outcome().ScanComplete || len(sink.ids) != 5 {
		t.Fatalf("resumed: complete %v, ids %v", resumed.Outcome().ScanComplete, sink.ids)
	}
	if k, _ := jsonvalue.Canonical(f.bodies[1]["ExclusiveStartKey"]); string(k) != `{"pk":{"S":"secret-key-01"}}` {
		t.Errorf("the resumed scan sent ExclusiveStartKey %s; want the saved object whole", k)
	}
}

// TestDeclaredConflict_IsAnUpstreamConflict: a 400 whose __type the
// upstream's conflicts declare (DynamoDB's ConditionalCheckFailedException)
// is UPSTREAM_CONFLICT; another 400 stays a rejection.
func TestDeclaredConflict_IsAnUpstreamConflict(t *testing.T) {
	ts := awsRefusals(t, func(r *http.Request) (string, string) {
		if r.URL.Path == "/cond" {
			return "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "The conditional request failed"
		}
		return "com.amazon.coral.validate#ValidationException", "bad"
	})
	rt := runtimeFor(t, []byte(fmt.Sprintf(`environment: test
upstreams:
  ddb:
    base_url: %q
    retries: 0
    json_media_types: [application/x-amz-json-1.0]
    conflicts: [{status: 400, member: __type, match: ConditionalCheckFailedException}]
resources:
  a:
    upstream: ddb
    list: {path: /, items: Items}
    pagination: {dialect: cursor, has_more: more}
    id_field: id
    fields: {id: {type: string}}
`, ts.URL)))
	c := rt.Resources["a"].Upstream
	for path, want := range map[string]envelope.ProblemCode{"/cond": envelope.ProblemUpstreamConflict, "/other": envelope.ProblemUpstreamRejected} {
		u, _ := url.Parse(ts.URL + path)
		_, err := c.Do(context.Background(), transport.Request{Method: http.MethodPost, URL: u, Body: []byte(`{}`)})
		if p := transport.ProblemFor(err, nil); p.Code != want {
			t.Errorf("%s: %v -> %s; want %s", path, err, p.Code, want)
		}
	}
}

// TestDynamoDBScan_AFilteredPageWithoutTheKeyEndsOnlyWhenItReadLess: Limit
// counts the items a Scan reads before its FilterExpression, so a filtered
// page holds fewer items than earlier ones and goes on. A page without
// LastEvaluatedKey that read the whole Limit (ScannedCount, declared as
// evaluated) stopped at it: its key may have been dropped, and the scan
// is not complete; one that read less is the end.
func TestDynamoDBScan_AFilteredPageWithoutTheKeyEndsOnlyWhenItReadLess(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scanned  int
		complete bool
	}{
		{"the whole limit read", 10, false},
		{"less than the limit read", 6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := func(pk string) string { return `{"pk":{"S":"` + pk + `"},"status":{"S":"active"}}` }
			pages := []string{
				`{"Items":[` + item("a1") + `,` + item("a2") + `,` + item("a3") + `],"Count":3,"ScannedCount":10,"LastEvaluatedKey":{"pk":{"S":"a9"}}}`,
				fmt.Sprintf(`{"Items":[%s],"Count":1,"ScannedCount":%d}`, item("b1"), tc.scanned),
			}
			var n int
			var mu sync.Mutex
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				mu.Lock()
				i := min(n, len(pages)-1)
				n++
				mu.Unlock()
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				_, _ = w.Write([]byte(pages[i]))
			}))
			t.Cleanup(ts.Close)
			rt := runtimeFor(t, []byte(fmt.Sprintf(`environment: test
upstreams:
  ddb:
    base_url: %q
    retries: 0
    json_media_types: [application/x-amz-json-1.0]
resources:
  accounts:
    upstream: ddb
    item_encoding: dynamodb
    list: {path: /, method: POST, headers: {X-Amz-Target: DynamoDB_20120810.Scan}, body: {TableName: accounts}, items: Items,
      expression: {param: FilterExpression, language: dynamodb}}
    pagination: {dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: 10, evaluated: ScannedCount}
    id_field: pk
    fields:
      pk: {type: string}
      status: {type: string}
    filters:
      status: {expression: status}
`, ts.URL)))
			c, out, err := scanAll(t, rt.Resources["accounts"], map[string]any{"status": "active"}, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if out.ScanComplete != tc.complete || len(c.ids) != 4 {
				t.Fatalf("complete %v with %v (reasons %+v); want complete %v with the 4 items read", out.ScanComplete, c.ids, out.Reasons, tc.complete)
			}
			if !tc.complete && reasonOf(out, envelope.EndNotProven) == nil {
				t.Errorf("reasons %+v; want END_NOT_PROVEN", out.Reasons)
			}
		})
	}
}
