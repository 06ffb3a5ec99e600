package upstreams

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"testing"
)

// DynaliteLedger is the table SeedLedger creates beside DynaliteTable:
// partition key "tenant" (S) and sort key "id" (S), so that it is read by
// Query, one tenant at a time.
const DynaliteLedger = "ledger"

// DynaliteLedgerByStatus is the ledger's global secondary index: partition
// key "status", sort key "id", every attribute projected.
const DynaliteLedgerByStatus = "by_status"

// DynaliteHostileTenant is a tenant whose name holds what an expression
// would read as its own (a quote, #, :, parentheses, a comma).
const DynaliteHostileTenant = `O'Brien "Quoted" #t :v) OR (x, Labs`

// DynaliteTenants are the ledger's tenants and how many entries each
// holds.
var DynaliteTenants = []struct {
	Name    string
	Entries int
}{{"acme", 260}, {"globex", 140}, {DynaliteHostileTenant, 120}, {"initech", 80}}

// SeedLedger creates DynaliteLedger (with its index DynaliteLedgerByStatus)
// and writes its entries (ids inv-00001
// and up, across the tenants in turn; status mostly active, about one in
// twelve past_due; a note holding hostile text on some).
func (d *Dynalite) SeedLedger(t testing.TB) {
	t.Helper()
	d.must(t, "CreateTable", map[string]any{
		"TableName": DynaliteLedger,
		"AttributeDefinitions": []any{
			map[string]any{"AttributeName": "tenant", "AttributeType": "S"},
			map[string]any{"AttributeName": "id", "AttributeType": "S"},
			map[string]any{"AttributeName": "status", "AttributeType": "S"},
		},
		"KeySchema": []any{
			map[string]any{"AttributeName": "tenant", "KeyType": "HASH"},
			map[string]any{"AttributeName": "id", "KeyType": "RANGE"},
		},
		"GlobalSecondaryIndexes": []any{map[string]any{
			"IndexName": DynaliteLedgerByStatus,
			"KeySchema": []any{
				map[string]any{"AttributeName": "status", "KeyType": "HASH"},
				map[string]any{"AttributeName": "id", "KeyType": "RANGE"},
			},
			"Projection":            map[string]any{"ProjectionType": "ALL"},
			"ProvisionedThroughput": map[string]any{"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
		}},
		"ProvisionedThroughput": map[string]any{"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
	}, nil)
	d.waitActive(t, DynaliteLedger)
	rng := rand.New(rand.NewPCG(DefaultSeed, 39))
	var items []DynamoItem
	n := 0
	notes := []string{"plain", `#status :v`, `x' OR '1'='1`, "ünï 🚀"}
	for _, tn := range DynaliteTenants {
		for range tn.Entries {
			n++
			status := "active"
			switch x := rng.IntN(12); {
			case x == 0:
				status = "past_due"
			case x < 4:
				status = "disabled"
			}
			it := DynamoItem{
				"tenant": map[string]any{"S": tn.Name},
				"id":     map[string]any{"S": fmt.Sprintf("inv-%05d", n)},
				"status": map[string]any{"S": status},
				"amount": map[string]any{"N": strconv.Itoa(rng.IntN(100000))},
			}
			if rng.IntN(3) == 0 {
				it["note"] = map[string]any{"S": notes[rng.IntN(len(notes))]}
			}
			items = append(items, it)
		}
	}
	err := d.batchPut(t, DynaliteLedger, items)
	if err != nil {
		t.Fatalf("dynalite: seed %s: %v", DynaliteLedger, err)
	}
}

// QueryAll is dynalite's own answer to one Query (req: TableName,
// KeyConditionExpression, …), continued from each LastEvaluatedKey to its
// end: the ids of the items, in order, the pages read, and how many of
// them held no item and still went on.
func (d *Dynalite) QueryAll(t testing.TB, req map[string]any) (ids []string, pages, empty int) {
	t.Helper()
	req = maps.Clone(req)
	for {
		var ans struct {
			Items            []DynamoItem
			Count            int
			LastEvaluatedKey map[string]any
		}
		d.must(t, "Query", req, &ans)
		pages++
		for _, it := range ans.Items {
			ids = append(ids, DynamoString(it["id"]))
		}
		if ans.LastEvaluatedKey == nil {
			return ids, pages, empty
		}
		if ans.Count == 0 {
			empty++
		}
		if pages > 10000 {
			t.Fatal("dynalite: a query that never ends")
		}
		req["ExclusiveStartKey"] = ans.LastEvaluatedKey
	}
}
