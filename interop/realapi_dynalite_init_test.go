package interop

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/draft"
	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// TestDynalite_InitDraftsAScanThatCountsTheTable: a user's way in to a
// DynamoDB table, on dynalite: init --sample posts a signed Scan naming its
// operation and drafts the whole shape (the media type, the operation
// header, typed items, the continuation sent back whole, the table's key
// as LastEvaluatedKey names it, the SigV4 credential), with no decision
// left; with a filter added, the draft counts the table and one status as
// dynalite holds them, complete, at a page size the sample never used.
func TestDynalite_InitDraftsAScanThatCountsTheTable(t *testing.T) {
	d := upstreams.StartDynalite(t)
	truth := d.Records(t)
	h := http.Header{}
	h.Set("X-Amz-Target", upstreams.DynamoTargetPrefix+"Scan")
	h.Set("Content-Type", upstreams.DynamoContentType)
	dr, err := draft.FromSample(t.Context(), d.URL+"/", draft.SampleOptions{
		Options: draft.Options{Environment: "dynalite", Resources: []string{"accounts"}},
		Body:    []byte(`{"TableName": "` + upstreams.DynaliteTable + `", "Limit": 50}`),
		Headers: h,
		SigV4:   &draft.SampleSigV4{Region: "us-east-1", Service: "dynamodb"},
		Getenv:  func(k string) string { return dynEnv[k] },
	})
	if err != nil {
		t.Fatal(err)
	}
	y := string(dr.YAML)
	for _, want := range []string{"dialect: continue_object", "continue_path: LastEvaluatedKey", "continue_param: ExclusiveStartKey", "evaluated: ScannedCount",
		"item_encoding: dynamodb", "json_media_types: [application/x-amz-json-1.0]", "aws_sigv4:", "X-Amz-Target: DynamoDB_20120810.Scan"} {
		if !strings.Contains(y, want) {
			t.Errorf("the draft lacks %q:\n%s", want, y)
		}
	}
	if todos := regexp.MustCompile(`TODO\(`).FindAllString(y, -1); len(todos) != 0 || !strings.Contains(y, "id_field: pk") {
		t.Fatalf("want the table's key (pk, as LastEvaluatedKey names it) and no decision left; the draft leaves %d:\n%s", len(todos), y)
	}
	decided := y
	// A page size the sample did not use: 13 pages of 100 evaluated items.
	decided = strings.Replace(decided, "page_size: 100", "page_size: 97", 1)
	decided = strings.TrimRight(decided, "\n") + "\n    filters:\n      status: {}\n"
	al := startAirlockYAML(t, "the decided draft", []byte(decided), dynEnv, nil)
	all := al.search(t, map[string]any{"resource": "accounts", "max_items": 0, "deadline_ms": deadlineMS})
	if !all.Complete || all.Data.TotalMatched != len(truth) {
		t.Fatalf("every account: %s; dynalite holds %d", all, len(truth))
	}
	pastDue := 0
	for _, r := range truth {
		if r["status"] == "past_due" {
			pastDue++
		}
	}
	one := al.search(t, map[string]any{"resource": "accounts", "filter": map[string]any{"status": "past_due"}, "max_items": 0, "deadline_ms": deadlineMS})
	if !one.Complete || one.Data.TotalMatched != pastDue {
		t.Fatalf("past_due: %s; dynalite holds %d", one, pastDue)
	}
	t.Logf("drafted from one sampled Scan: %d of %d accounts, %d of %d past_due, complete", all.Data.TotalMatched, len(truth), one.Data.TotalMatched, pastDue)
}
