package upstreams

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// DynaliteItems is how many items StartDynalite seeds into DynaliteTable,
// with keys acct-00001 to acct-01200.
const DynaliteItems = 1200

// DynaliteTable is the table StartDynalite creates: hash key "pk" (S), no
// sort key, provisioned at one read and one write capacity unit.
const DynaliteTable = "accounts"

// DynaliteBigNumber is the N value seeded as "big" into every item whose
// number is a multiple of 100: 2^53+1, which a double cannot hold.
const DynaliteBigNumber = "9007199254740993"

// DynaliteStatuses are the seeded statuses: about 55% active, 20%
// disabled, 15% archived and 10% past_due.
var DynaliteStatuses = []string{"active", "disabled", "archived", "past_due"}

// DynamoDB's JSON protocol: the target prefix of every operation and the
// content type of requests and answers.
const (
	DynamoTargetPrefix = "DynamoDB_20120810."
	DynamoContentType  = "application/x-amz-json-1.0"
)

// DynamoAuthorization is the Authorization header the harness sends with
// X-Amz-Date DynamoAmzDate: AWS Signature V4 in form, with a dummy access
// key and a signature of zeros. dynalite checks that the header is there
// and names Credential, SignedHeaders and Signature, and that a date
// header is there, but verifies nothing (see TestDynaliteFacts).
const (
	DynamoAuthorization = "AWS4-HMAC-SHA256 Credential=AKIDAIRLOCKTEST/20260101/us-east-1/dynamodb/aws4_request, " +
		"SignedHeaders=content-type;host;x-amz-date;x-amz-target, " +
		"Signature=0000000000000000000000000000000000000000000000000000000000000000"
	DynamoAmzDate = "20260101T000000Z"
)

// Dynalite is a running dynalite 4.0.0 (a DynamoDB implementation in
// Node.js, in memory) at URL, with DynaliteTable seeded. Every request is
// a POST of JSON to / naming its operation in X-Amz-Target.
type Dynalite struct {
	URL string
}

// DynamoItem is one item as DynamoDB's JSON carries it: attribute name to
// typed value ({"S": "..."}, {"N": "12"}, {"NULL": true}, {"L": [...]}
// ...). Numbers stay strings.
type DynamoItem map[string]any

// StartDynalite starts dynalite on a free loopback port, creates
// DynaliteTable, seeds it through BatchWriteItem and stops the server when
// the test ends. It skips when node or interop/node_modules/dynalite is
// missing (see package doc).
func StartDynalite(t testing.TB) *Dynalite {
	t.Helper()
	Enabled(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	dir := interopDir(t)
	cli := filepath.Join(dir, "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		missing(t, "interop/node_modules/dynalite is missing; run `npm ci` in interop/")
	}
	started := time.Now()
	base, _ := startProcess(t, "dynalite", dir, func(port int) []string {
		// In memory (no --path); tables become ACTIVE at once.
		return []string{node, cli, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--createTableMs", "0"}
	}, answersOK("/"))
	d := &Dynalite{URL: base}
	d.must(t, "CreateTable", map[string]any{
		"TableName":             DynaliteTable,
		"AttributeDefinitions":  []any{map[string]any{"AttributeName": "pk", "AttributeType": "S"}},
		"KeySchema":             []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}},
		"ProvisionedThroughput": map[string]any{"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
	}, nil)
	d.waitActive(t, DynaliteTable)
	if err := d.batchPut(t, DynaliteTable, seedDynamoItems(DynaliteItems)); err != nil {
		t.Fatalf("dynalite: seed: %v", err)
	}
	if n := len(d.Items(t)); n != DynaliteItems {
		t.Fatalf("dynalite holds %d items, seeded %d", n, DynaliteItems)
	}
	t.Logf("dynalite 4.0.0: started and seeded %d items in %.1fs at %s", DynaliteItems, time.Since(started).Seconds(), base)
	return d
}

// waitActive waits, boundedly, until DescribeTable says table and each
// of its global secondary indexes are ACTIVE.
func (d *Dynalite) waitActive(t testing.TB, table string) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		var desc struct {
			Table struct {
				TableStatus            string
				GlobalSecondaryIndexes []struct{ IndexStatus string }
			}
		}
		d.must(t, "DescribeTable", map[string]any{"TableName": table}, &desc)
		active := desc.Table.TableStatus == "ACTIVE"
		for _, ix := range desc.Table.GlobalSecondaryIndexes {
			active = active && ix.IndexStatus == "ACTIVE"
		}
		if active {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dynalite: table %s still %s after %s", table, desc.Table.TableStatus, startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// batchPut writes items into table through BatchWriteItem, 25 to a
// request, four requests at a time; an item left unprocessed is an error.
func (d *Dynalite) batchPut(t testing.TB, table string, items []DynamoItem) error {
	return parallel((len(items)+24)/25, 4, func(i int) error {
		var reqs []any
		for _, it := range items[i*25 : min(i*25+25, len(items))] {
			reqs = append(reqs, map[string]any{"PutRequest": map[string]any{"Item": it}})
		}
		r, err := d.do(t, "BatchWriteItem", map[string]any{"RequestItems": map[string]any{table: reqs}})
		if err != nil {
			return err
		}
		var ans struct {
			UnprocessedItems map[string][]any
		}
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &ans) != nil || len(ans.UnprocessedItems) != 0 {
			return fmt.Errorf("BatchWriteItem: status %d: %s", r.Status, truncate(r.Body, 300))
		}
		return nil
	})
}

// Items is every item of the table, typed as DynamoDB serves them: a full
// Scan without a limit, continued from each LastEvaluatedKey until an
// answer has none. An item seen twice fails the test.
func (d *Dynalite) Items(t testing.TB) []DynamoItem {
	t.Helper()
	var out []DynamoItem
	seen := map[string]bool{}
	req := map[string]any{"TableName": DynaliteTable, "ConsistentRead": true}
	for page := 1; ; page++ {
		var ans struct {
			Items            []DynamoItem
			LastEvaluatedKey map[string]any
		}
		d.must(t, "Scan", req, &ans)
		for _, it := range ans.Items {
			pk := DynamoString(it["pk"])
			if seen[pk] {
				t.Fatalf("dynalite: the scan served %q twice (page %d)", pk, page)
			}
			seen[pk] = true
			out = append(out, it)
		}
		if ans.LastEvaluatedKey == nil {
			return out
		}
		if page > 10000 {
			t.Fatal("dynalite: a scan that never ends")
		}
		req["ExclusiveStartKey"] = ans.LastEvaluatedKey
	}
}

// Records are Items as plain values (PlainDynamo), with "id" the item's pk,
// for the suite's tables.
func (d *Dynalite) Records(t testing.TB) []Record {
	t.Helper()
	var out []Record
	for _, it := range d.Items(t) {
		r := Record{}
		for k, v := range it {
			p, err := PlainDynamo(v)
			if err != nil {
				t.Fatalf("dynalite: item %v: %s: %v", it["pk"], k, err)
			}
			r[k] = p
		}
		r["id"] = r["pk"]
		out = append(out, r)
	}
	return out
}

// Item is one item read with GetItem (consistent), or nil when there is
// none.
func (d *Dynalite) Item(t testing.TB, pk string) DynamoItem {
	t.Helper()
	var ans struct{ Item DynamoItem }
	d.must(t, "GetItem", map[string]any{"TableName": DynaliteTable, "Key": map[string]any{"pk": map[string]any{"S": pk}}, "ConsistentRead": true}, &ans)
	return ans.Item
}

// Put writes a whole item (PutItem, unconditional), as another writer
// would.
func (d *Dynalite) Put(t testing.TB, item DynamoItem) {
	t.Helper()
	d.must(t, "PutItem", map[string]any{"TableName": DynaliteTable, "Item": item}, nil)
}

// Delete deletes an item (DeleteItem, unconditional), as another writer
// would.
func (d *Dynalite) Delete(t testing.TB, pk string) {
	t.Helper()
	d.must(t, "DeleteItem", map[string]any{"TableName": DynaliteTable, "Key": map[string]any{"pk": map[string]any{"S": pk}}}, nil)
}

// Call sends one operation, its body encoded as JSON, with the harness's
// headers (DynamoContentType, DynamoAuthorization, DynamoAmzDate) and
// returns whatever dynalite answers.
func (d *Dynalite) Call(t testing.TB, op string, body any) Response {
	t.Helper()
	r, err := d.do(t, op, body)
	if err != nil {
		t.Fatalf("dynalite %s: %v", op, err)
	}
	return r
}

// DynamoHeader is the header the harness sends for op; tests change it to
// learn what dynalite checks.
func DynamoHeader(op string) http.Header {
	return http.Header{
		"Content-Type":  {DynamoContentType},
		"X-Amz-Target":  {DynamoTargetPrefix + op},
		"X-Amz-Date":    {DynamoAmzDate},
		"Authorization": {DynamoAuthorization},
	}
}

// Raw sends a POST to / with header's fields (Go adds Host,
// Content-Length, User-Agent and Accept-Encoding; a header without
// Content-Type is sent as application/json) and body as it is, and returns
// whatever dynalite answers.
func (d *Dynalite) Raw(t testing.TB, header http.Header, body []byte) Response {
	t.Helper()
	r, err := d.raw(t, header, body)
	if err != nil {
		t.Fatalf("dynalite: %v", err)
	}
	return r
}

func (d *Dynalite) raw(t testing.TB, header http.Header, body []byte) (Response, error) {
	if body == nil {
		body = []byte{}
	}
	hdr, b, err := call(t.Context(), http.MethodPost, d.URL+"/", header, body, http.StatusOK)
	var he *httpError
	if errors.As(err, &he) {
		return Response{Status: he.status, Header: hdr, Body: b}, nil
	}
	if err != nil {
		return Response{}, err
	}
	return Response{Status: http.StatusOK, Header: hdr, Body: b}, nil
}

func (d *Dynalite) do(t testing.TB, op string, body any) (Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return Response{}, fmt.Errorf("encode %s: %w", op, err)
	}
	return d.raw(t, DynamoHeader(op), b)
}

// must sends op and decodes a 200 answer into out (when not nil); any
// other answer fails the test.
func (d *Dynalite) must(t testing.TB, op string, body, out any) {
	t.Helper()
	r := d.Call(t, op, body)
	if r.Status != http.StatusOK {
		t.Fatalf("dynalite %s: status %d: %s", op, r.Status, truncate(r.Body, 500))
	}
	if out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			t.Fatalf("dynalite %s: decode %q: %v", op, truncate(r.Body, 200), err)
		}
	}
}

// DynamoString is an attribute's S value ("" when it is not an S).
func DynamoString(av any) string {
	m, _ := av.(map[string]any)
	s, _ := m["S"].(string)
	return s
}

// PlainDynamo is a typed value as a plain one: S a string, N a json.Number
// (exact), BOOL a bool, NULL nil, L a []any, M a map[string]any, SS a
// []any of strings, NS a []any of json.Number, B its base64 text. A value
// that is none of these, or carries more than one type, is an error.
func PlainDynamo(av any) (any, error) {
	m, ok := av.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, fmt.Errorf("not one typed value: %v", av)
	}
	for typ, v := range m {
		switch typ {
		case "S", "B":
			if s, ok := v.(string); ok {
				return s, nil
			}
		case "N":
			if s, ok := v.(string); ok {
				return json.Number(s), nil
			}
		case "BOOL":
			if b, ok := v.(bool); ok {
				return b, nil
			}
		case "NULL":
			if v == true {
				return nil, nil
			}
		case "L":
			if l, ok := v.([]any); ok {
				out := make([]any, 0, len(l))
				for _, e := range l {
					p, err := PlainDynamo(e)
					if err != nil {
						return nil, err
					}
					out = append(out, p)
				}
				return out, nil
			}
		case "M":
			if mm, ok := v.(map[string]any); ok {
				out := make(map[string]any, len(mm))
				for k, e := range mm {
					p, err := PlainDynamo(e)
					if err != nil {
						return nil, err
					}
					out[k] = p
				}
				return out, nil
			}
		case "SS", "NS":
			if l, ok := v.([]any); ok {
				out := make([]any, 0, len(l))
				for _, e := range l {
					s, ok := e.(string)
					if !ok {
						return nil, fmt.Errorf("%s holds %v", typ, e)
					}
					if typ == "NS" {
						out = append(out, json.Number(s))
					} else {
						out = append(out, s)
					}
				}
				return out, nil
			}
		}
		return nil, fmt.Errorf("unreadable %s value %v", typ, v)
	}
	return nil, nil
}

// seedDynamoItems builds n items from a fixed seed, with every type the
// accounts need: S, N (cents, negatives, DynaliteBigNumber), BOOL, NULL,
// L, M and SS. The owner is a person for most, and for the rest
// {"NULL": true}, missing, or "" (an empty S, which DynamoDB allows
// outside keys). tags is an SS, missing when an account has none (a set
// cannot be empty).
func seedDynamoItems(n int) []DynamoItem {
	rng := rand.New(rand.NewPCG(DefaultSeed, 17))
	teams := []string{"payments", "platform", "team-infra", "support", "R&D, Labs"}
	tagSet := []string{"prod", "pci", "legacy", "batch", "eu"}
	names := []string{"ada", "O'Brien", `"Quoted" Ltd`, "Zoë Ωmega", "李小龍", `back\slash`, "rocket 🚀", "#status :v", "bea", "cyd", "dov", "eli"}
	s := func(v string) map[string]any { return map[string]any{"S": v} }
	num := func(v string) map[string]any { return map[string]any{"N": v} }
	out := make([]DynamoItem, 0, n)
	for i := 1; i <= n; i++ {
		status := DynaliteStatuses[0]
		switch x := rng.IntN(100); {
		case x >= 90:
			status = DynaliteStatuses[3]
		case x >= 75:
			status = DynaliteStatuses[2]
		case x >= 55:
			status = DynaliteStatuses[1]
		}
		var tags []any
		for _, tag := range tagSet {
			if rng.IntN(4) == 0 {
				tags = append(tags, tag)
			}
		}
		balance := strconv.FormatFloat(float64(rng.IntN(10_000_000)-1_000_000)/100, 'f', -1, 64)
		it := DynamoItem{
			"pk":      s(fmt.Sprintf("acct-%05d", i)),
			"name":    s(fmt.Sprintf("%s %d", names[rng.IntN(len(names))], i)),
			"status":  s(status),
			"team":    s(teams[rng.IntN(len(teams))]),
			"balance": num(balance),
			"version": num(strconv.Itoa(1 + rng.IntN(9))),
			"active":  map[string]any{"BOOL": status == "active"},
			"profile": map[string]any{"M": map[string]any{
				"tier":    s([]string{"free", "pro", "enterprise"}[rng.IntN(3)]),
				"seats":   num(strconv.Itoa(rng.IntN(500))),
				"regions": map[string]any{"L": []any{s("eu-west-1"), num("3"), map[string]any{"NULL": true}}},
			}},
		}
		if i%100 == 0 {
			it["big"] = num(DynaliteBigNumber)
		}
		if tags != nil {
			it["tags"] = map[string]any{"SS": tags}
		}
		switch x := rng.IntN(100); {
		case x < 9:
			it["owner"] = map[string]any{"NULL": true}
		case x < 17:
			// owner missing altogether
		case x < 22:
			it["owner"] = s("")
		default:
			it["owner"] = s(fmt.Sprintf("%s@example.com", names[8+rng.IntN(4)]))
		}
		out = append(out, it)
	}
	return out
}

// DynamoType is the type of a typed value ("S", "N", "NULL", ...; "" when
// av is not one typed value).
func DynamoType(av any) string {
	m, _ := av.(map[string]any)
	if len(m) != 1 {
		return ""
	}
	for k := range m {
		return k
	}
	return ""
}
