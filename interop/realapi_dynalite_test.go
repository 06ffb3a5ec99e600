package interop

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// The facts of dynalite 4.0.0 (DynamoDB's JSON API in Node.js, in memory)
// that a configuration for DynamoDB will rely on, pinned by calling the
// server directly, so that a change of dynalite fails here first. Where
// dynalite is not DynamoDB (it verifies no signature and never throttles),
// the test says so.

// The seeded counts, measured once and pinned, and the filtered walk that
// meets empty pages before its end: status past_due by pages of ten
// scanned items.
const (
	dynNullOwners    = 112
	dynMissingOwners = 101
	dynEmptyOwners   = 67
	dynPastDue       = 125
	dynWalkLimit     = 10
	dynWalkPages     = upstreams.DynaliteItems/dynWalkLimit + 1 // and the empty one after the last full page
	dynWalkEmpty     = 34                                       // pages with Count 0 and a LastEvaluatedKey
)

// TestDynaliteFacts_FilteredScansConditionalWritesAndErrorShapes starts
// its own server: its later subtests write items.
func TestDynaliteFacts_FilteredScansConditionalWritesAndErrorShapes(t *testing.T) {
	d := upstreams.StartDynalite(t)
	truth := d.Records(t)
	t.Run("seeded_truth", func(t *testing.T) { checkDynSeed(t, d, truth) })
	t.Run("answers_are_amz_json", func(t *testing.T) { checkDynContentType(t, d) })
	t.Run("filtered_scan_pages_empty_before_its_end", func(t *testing.T) { checkDynFilteredWalk(t, d, truth) })
	t.Run("start_key_of_no_item_continues", func(t *testing.T) { checkDynMissingStartKey(t, d) })
	t.Run("null_is_not_missing", func(t *testing.T) { checkDynNullFilters(t, d) })
	t.Run("signature_is_checked_for_form_only", func(t *testing.T) { checkDynSignature(t, d) })
	t.Run("error_shapes", func(t *testing.T) { checkDynErrors(t, d) })
	t.Run("never_throttles", func(t *testing.T) { checkDynNoThrottling(t, d) })
	t.Run("conditional_update_on_version", func(t *testing.T) { checkDynConditionalUpdate(t, d) })
	t.Run("numbers_are_normalized", func(t *testing.T) { checkDynNumbers(t, d) })
}

// dynScanPage is one Scan answer, with the members it had.
type dynScanPage struct {
	Count, ScannedCount *int
	Items               []upstreams.DynamoItem
	LastEvaluatedKey    map[string]any
	members             []string
}

func dynScan(t *testing.T, d *upstreams.Dynalite, req map[string]any) (upstreams.Response, dynScanPage) {
	t.Helper()
	r := d.Call(t, "Scan", req)
	var p dynScanPage
	if r.Status != http.StatusOK {
		t.Fatalf("Scan %v: status %d %s", req, r.Status, r.Body)
	}
	r.JSON(t, &p)
	var m map[string]json.RawMessage
	r.JSON(t, &m)
	p.members = slices.Sorted(maps.Keys(m))
	return r, p
}

func dynFilter(status string) map[string]any {
	return map[string]any{
		"TableName":                 upstreams.DynaliteTable,
		"FilterExpression":          "#s = :s",
		"ProjectionExpression":      "pk, #s",
		"ExpressionAttributeNames":  map[string]any{"#s": "status"},
		"ExpressionAttributeValues": map[string]any{":s": map[string]any{"S": status}},
	}
}

func checkDynSeed(t *testing.T, d *upstreams.Dynalite, truth []upstreams.Record) {
	owners, statuses, types := map[string]int{}, map[string]int{}, map[string]bool{}
	for _, it := range d.Items(t) {
		switch v, ok := it["owner"]; {
		case !ok:
			owners["missing"]++
		case upstreams.DynamoType(v) == "NULL":
			owners["null"]++
		case upstreams.DynamoString(v) == "":
			owners["empty"]++
		}
		statuses[upstreams.DynamoString(it["status"])]++
		for _, v := range it {
			types[upstreams.DynamoType(v)] = true
		}
	}
	t.Logf("seeded: %d items, owners %v, statuses %v, types %v", len(truth), owners, statuses, slices.Sorted(maps.Keys(types)))
	if len(truth) != upstreams.DynaliteItems || owners["null"] != dynNullOwners || owners["missing"] != dynMissingOwners ||
		owners["empty"] != dynEmptyOwners || statuses["past_due"] != dynPastDue {
		t.Errorf("seeded %d items, owners %v, past_due %d; want %d, null %d, missing %d, empty %d, past_due %d",
			len(truth), owners, statuses["past_due"], upstreams.DynaliteItems, dynNullOwners, dynMissingOwners, dynEmptyOwners, dynPastDue)
	}
	if got := slices.Sorted(maps.Keys(types)); !slices.Equal(got, []string{"BOOL", "M", "N", "NULL", "S", "SS"}) {
		t.Errorf("top-level types %v; want BOOL, M, N, NULL, S and SS (L inside M)", got)
	}
	// N is a decimal string: 2^53+1 comes back exact, and the plain
	// record keeps it exact.
	it := d.Item(t, "acct-00100")
	if b, _ := json.Marshal(it["big"]); string(b) != `{"N":"`+upstreams.DynaliteBigNumber+`"}` {
		t.Errorf("acct-00100's big: %s; want N %q exactly", b, upstreams.DynaliteBigNumber)
	}
	for _, r := range truth {
		if r.ID() == "acct-00100" && r["big"] != json.Number(upstreams.DynaliteBigNumber) {
			t.Errorf("the plain record's big: %#v; want json.Number %q", r["big"], upstreams.DynaliteBigNumber)
		}
	}
}

func checkDynContentType(t *testing.T, d *upstreams.Dynalite) {
	body := []byte(`{"TableName":"accounts","Limit":1}`)
	for _, ct := range []string{upstreams.DynamoContentType, "application/json"} {
		h := upstreams.DynamoHeader("Scan")
		h.Set("Content-Type", ct)
		r := d.Raw(t, h, body)
		// The answer's type is the request's; x-amz-crc32 is the body's
		// CRC-32 (what AWS SDKs check).
		if r.Status != http.StatusOK || r.Header.Get("Content-Type") != ct ||
			r.Header.Get("X-Amz-Crc32") != strconv.FormatUint(uint64(crc32.ChecksumIEEE(r.Body)), 10) || r.Header.Get("X-Amzn-Requestid") == "" {
			t.Errorf("a request of %s: status %d, Content-Type %q, x-amz-crc32 %q, x-amzn-RequestId %q; want 200, %s, the body's CRC-32 and an id",
				ct, r.Status, r.Header.Get("Content-Type"), r.Header.Get("X-Amz-Crc32"), r.Header.Get("X-Amzn-Requestid"), ct)
		}
	}
	h := upstreams.DynamoHeader("Scan")
	h.Set("Content-Type", "text/plain")
	if r := d.Raw(t, h, body); r.Status != http.StatusNotFound || string(r.Body) != "<UnknownOperationException/>\n" {
		t.Errorf("a request of text/plain: status %d %q; want 404 <UnknownOperationException/>", r.Status, r.Body)
	}
}

func checkDynFilteredWalk(t *testing.T, d *upstreams.Dynalite, truth []upstreams.Record) {
	want := upstreams.IDs(truth, func(r upstreams.Record) bool { return r["status"] == "past_due" })
	req := dynFilter("past_due")
	req["Limit"] = dynWalkLimit
	var ids []string
	pages, empty, scanned := 0, 0, 0
	var last dynScanPage
	var lastBody string
	for {
		r, p := dynScan(t, d, req)
		pages++
		if p.Count == nil || p.ScannedCount == nil || *p.Count != len(p.Items) {
			t.Fatalf("page %d: %s; want Count equal to the items served, and ScannedCount", pages, r.Body)
		}
		if pages == 1 {
			// The case that broke earlier: nothing on the page, more to come.
			if *p.Count != 0 || *p.ScannedCount != dynWalkLimit || p.LastEvaluatedKey == nil ||
				!slices.Equal(p.members, []string{"Count", "Items", "LastEvaluatedKey", "ScannedCount"}) {
				t.Errorf("the first page of past_due by %d: %s; want Count 0, ScannedCount %d, Items [] and a LastEvaluatedKey", dynWalkLimit, r.Body, dynWalkLimit)
			}
			t.Logf("the first page: %s", r.Body)
		}
		if p.LastEvaluatedKey != nil {
			// An object of typed members: the key's attributes only.
			if len(p.LastEvaluatedKey) != 1 || upstreams.DynamoType(p.LastEvaluatedKey["pk"]) != "S" {
				t.Errorf("page %d: LastEvaluatedKey %v; want {\"pk\": {\"S\": ...}}", pages, p.LastEvaluatedKey)
			}
			if *p.Count == 0 {
				empty++
			}
		}
		scanned += *p.ScannedCount
		for _, it := range p.Items {
			if upstreams.DynamoString(it["status"]) != "past_due" || len(it) != 2 {
				t.Errorf("page %d served %v; want pk and status past_due only", pages, it)
			}
			ids = append(ids, upstreams.DynamoString(it["pk"]))
		}
		if p.LastEvaluatedKey == nil {
			last, lastBody = p, string(r.Body)
			break
		}
		if pages > 2*dynWalkPages {
			t.Fatal("the walk does not end")
		}
		req["ExclusiveStartKey"] = p.LastEvaluatedKey
	}
	slices.Sort(ids)
	if pages != dynWalkPages || empty != dynWalkEmpty || scanned != upstreams.DynaliteItems || !slices.Equal(ids, want) || len(want) != dynPastDue {
		t.Errorf("the walk: %d pages, %d empty with a LastEvaluatedKey, %d scanned, %d items; want %d, %d, %d, and each of the %d past_due items once",
			pages, empty, scanned, len(ids), dynWalkPages, dynWalkEmpty, upstreams.DynaliteItems, dynPastDue)
	}
	// A page that read exactly Limit items ends with a LastEvaluatedKey
	// even when nothing follows: the end is one more, empty page.
	if lastBody != `{"ScannedCount":0,"Count":0,"Items":[]}` || len(last.Items) != 0 {
		t.Errorf("the last page: %s; want {\"ScannedCount\":0,\"Count\":0,\"Items\":[]}", lastBody)
	}
}

func checkDynMissingStartKey(t *testing.T, d *upstreams.Dynalite) {
	// A key no item has (deleted since, or never there) is a position, not
	// an error: the scan goes on from where that key would be.
	req := map[string]any{"TableName": upstreams.DynaliteTable, "Limit": 2, "ProjectionExpression": "pk",
		"ExclusiveStartKey": map[string]any{"pk": map[string]any{"S": "acct-99999"}}}
	r, p := dynScan(t, d, req)
	if len(p.Items) != 2 || p.LastEvaluatedKey == nil {
		t.Errorf("ExclusiveStartKey of no item: %s; want two items and a LastEvaluatedKey", r.Body)
	}
}

func checkDynNullFilters(t *testing.T, d *upstreams.Dynalite) {
	cases := []struct {
		name, expr string
		values     map[string]any
		count      int
	}{
		{"eq_null_matches_null_only", "#o = :n", map[string]any{":n": map[string]any{"NULL": true}}, dynNullOwners},
		{"attribute_type_null", "attribute_type(#o, :t)", map[string]any{":t": map[string]any{"S": "NULL"}}, dynNullOwners},
		{"attribute_not_exists_matches_missing_only", "attribute_not_exists(#o)", nil, dynMissingOwners},
		{"eq_empty_string", "#o = :e", map[string]any{":e": map[string]any{"S": ""}}, dynEmptyOwners},
		// A missing attribute is "not equal" too.
		{"ne_null_matches_missing_too", "#o <> :n", map[string]any{":n": map[string]any{"NULL": true}}, upstreams.DynaliteItems - dynNullOwners},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := map[string]any{"TableName": upstreams.DynaliteTable, "FilterExpression": c.expr,
				"ExpressionAttributeNames": map[string]any{"#o": "owner"}, "Select": "COUNT"}
			if c.values != nil {
				req["ExpressionAttributeValues"] = c.values
			}
			r, p := dynScan(t, d, req)
			if p.Count == nil || *p.Count != c.count || p.LastEvaluatedKey != nil || !slices.Equal(p.members, []string{"Count", "ScannedCount"}) {
				t.Errorf("%s: %s; want Count %d (Select COUNT: no Items)", c.expr, r.Body, c.count)
			}
		})
	}
}

func checkDynSignature(t *testing.T, d *upstreams.Dynalite) {
	body := []byte(`{"TableName":"accounts","Limit":1}`)
	cases := []struct {
		name, auth string
		dropDate   bool
		status     int
		want       string // the answer's __type ("" for a scan)
		message    string // its message, when pinned
	}{
		{name: "zeros_signature_accepted", auth: upstreams.DynamoAuthorization, status: 200},
		{name: "nonsense_values_accepted", auth: "AWS4-HMAC-SHA256 Credential=x, SignedHeaders=y, Signature=z", status: 200},
		{name: "no_authorization", status: 400, want: "com.amazon.coral.service#MissingAuthenticationTokenException",
			message: "Request is missing Authentication Token"},
		{name: "not_aws4", auth: "Bearer token", status: 400, want: "com.amazon.coral.service#MissingAuthenticationTokenException",
			message: "Request is missing Authentication Token"},
		{name: "no_signature", auth: "AWS4-HMAC-SHA256 Credential=x, SignedHeaders=y", status: 400, want: "com.amazon.coral.service#IncompleteSignatureException",
			message: "Authorization header requires 'Signature' parameter. Authorization=AWS4-HMAC-SHA256 Credential=x, SignedHeaders=y"},
		{name: "no_date", auth: upstreams.DynamoAuthorization, dropDate: true, status: 400, want: "com.amazon.coral.service#IncompleteSignatureException",
			// The header comes back in the message, signature and all.
			message: "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization=" + upstreams.DynamoAuthorization},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := upstreams.DynamoHeader("Scan")
			h.Del("Authorization")
			if c.auth != "" {
				h.Set("Authorization", c.auth)
			}
			if c.dropDate {
				h.Del("X-Amz-Date")
			}
			r := d.Raw(t, h, body)
			var e struct {
				Type    string  `json:"__type"`
				Message *string `json:"message"`
			}
			_ = json.Unmarshal(r.Body, &e)
			if r.Status != c.status || e.Type != c.want || (c.message != "" && (e.Message == nil || *e.Message != c.message)) {
				t.Errorf("Authorization %q: status %d %s; want %d %s %q", c.auth, r.Status, r.Body, c.status, c.want, c.message)
			}
		})
	}
}

func checkDynErrors(t *testing.T, d *upstreams.Dynalite) {
	cases := []struct {
		name, op string
		body     any
		want     string // the whole body
	}{
		// No message at all, in neither casing.
		{"unknown_operation", "Frobnicate", map[string]any{}, `{"__type":"com.amazon.coral.service#UnknownOperationException"}`},
		{"no_such_table", "Scan", map[string]any{"TableName": "nope"},
			`{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`},
		{"validation", "Scan", map[string]any{"TableName": upstreams.DynaliteTable, "Limit": 0},
			`{"__type":"com.amazon.coral.validate#ValidationException","message":"1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1"}`},
		{"not_json", "Scan", []byte(`{not json`), `{"__type":"com.amazon.coral.service#SerializationException"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r upstreams.Response
			if b, ok := c.body.([]byte); ok {
				r = d.Raw(t, upstreams.DynamoHeader(c.op), b)
			} else {
				r = d.Call(t, c.op, c.body)
			}
			if r.Status != http.StatusBadRequest || string(r.Body) != c.want || r.Header.Get("Content-Type") != upstreams.DynamoContentType {
				t.Errorf("%s: status %d %s (%s); want 400 %s", c.op, r.Status, r.Body, r.Header.Get("Content-Type"), c.want)
			}
		})
	}
}

func checkDynNoThrottling(t *testing.T, d *upstreams.Dynalite) {
	// The table is provisioned at one read unit; a full scan consumes
	// more than twenty, and twenty of them back to back all answer. dynalite
	// has no ProvisionedThroughputExceededException at all: throttling
	// cannot be tested against it.
	req := map[string]any{"TableName": upstreams.DynaliteTable, "Select": "COUNT", "ReturnConsumedCapacity": "TOTAL"}
	for i := range 20 {
		r := d.Call(t, "Scan", req)
		var a struct {
			Count            int
			ConsumedCapacity struct{ CapacityUnits float64 }
		}
		r.JSON(t, &a)
		if r.Status != http.StatusOK || a.Count != upstreams.DynaliteItems || a.ConsumedCapacity.CapacityUnits <= 1 {
			t.Fatalf("scan %d at one provisioned read unit: status %d %s; want 200, every item, more than one unit consumed", i+1, r.Status, r.Body)
		}
	}
	var desc struct {
		Table struct {
			ProvisionedThroughput struct{ ReadCapacityUnits int }
		}
	}
	d.Call(t, "DescribeTable", map[string]any{"TableName": upstreams.DynaliteTable}).JSON(t, &desc)
	if desc.Table.ProvisionedThroughput.ReadCapacityUnits != 1 {
		t.Errorf("the table's read capacity: %d; want 1", desc.Table.ProvisionedThroughput.ReadCapacityUnits)
	}
}

func checkDynConditionalUpdate(t *testing.T, d *upstreams.Dynalite) {
	const pk = "acct-00001"
	before := d.Item(t, pk)
	version, _ := before["version"].(map[string]any)["N"].(string)
	update := func(expected string) upstreams.Response {
		return d.Call(t, "UpdateItem", map[string]any{
			"TableName":                upstreams.DynaliteTable,
			"Key":                      map[string]any{"pk": map[string]any{"S": pk}},
			"UpdateExpression":         "SET #s = :new, version = version + :one",
			"ConditionExpression":      "version = :v",
			"ExpressionAttributeNames": map[string]any{"#s": "status"},
			"ExpressionAttributeValues": map[string]any{":new": map[string]any{"S": "disabled"}, ":one": map[string]any{"N": "1"},
				":v": map[string]any{"N": expected}},
			"ReturnValues": "ALL_NEW",
		})
	}
	r := update("999")
	const failed = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`
	if r.Status != http.StatusBadRequest || string(r.Body) != failed || !strings.HasSuffix(dynErrorType(r), "ConditionalCheckFailedException") {
		t.Errorf("UpdateItem on a version that moved: status %d %s; want 400 %s", r.Status, r.Body, failed)
	}
	if after := d.Item(t, pk); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a failed condition changed the item: %v, was %v", after, before)
	}
	r = update(version)
	var a struct{ Attributes upstreams.DynamoItem }
	r.JSON(t, &a)
	n, _ := strconv.Atoi(version)
	if r.Status != http.StatusOK || upstreams.DynamoString(a.Attributes["status"]) != "disabled" ||
		a.Attributes["version"].(map[string]any)["N"] != strconv.Itoa(n+1) {
		t.Errorf("UpdateItem on the current version %s: status %d %s; want 200, status disabled, version %d", version, r.Status, r.Body, n+1)
	}
}

func dynErrorType(r upstreams.Response) string {
	var e struct {
		Type string `json:"__type"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Type
}

func checkDynNumbers(t *testing.T, d *upstreams.Dynalite) {
	const pk = "zz-numbers"
	d.Put(t, upstreams.DynamoItem{"pk": map[string]any{"S": pk},
		"a": map[string]any{"N": "0012.500"}, "b": map[string]any{"N": "1E+3"}, "c": map[string]any{"N": "-0.0"},
		"d": map[string]any{"N": "12345678901234567890123456789.000000001"}})
	it := d.Item(t, pk)
	d.Delete(t, pk)
	if d.Item(t, pk) != nil {
		t.Errorf("%s is still there after DeleteItem", pk)
	}
	got := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d"} {
		got[k] = it[k].(map[string]any)["N"]
	}
	want := map[string]any{"a": "12.5", "b": "1000", "c": "0", "d": "12345678901234567890123456789.000000001"}
	if !maps.Equal(got, want) {
		t.Errorf("numbers as stored and served: %v; want %v (canonical decimal, 38 digits kept)", got, want)
	}
}
