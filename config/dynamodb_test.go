package config

import (
	"strings"
	"testing"
)

// dynamoConfig is a DynamoDB table as docs/config.md describes one, with
// one line replaced by the test.
const dynamoConfig = `environment: test
upstreams:
  ddb:
    base_url: http://127.0.0.1:8000
    json_media_types: [application/x-amz-json-1.0]
    throttling: [{status: 400, member: __type, match: ProvisionedThroughputExceededException}]
    conflicts: [{status: 400, member: __type, match: ConditionalCheckFailedException}]
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
    pagination: {dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: 100, evaluated: ScannedCount}
    get:
      method: POST
      path: /
      headers: {X-Amz-Target: DynamoDB_20120810.GetItem}
      body: {TableName: accounts, Key: {pk: "{{id}}"}}
      item: Item
      absent: not_found
    id_field: pk
    fields:
      pk: {type: string}
      status: {type: string}
      tags: {type: array, elements: string, set: SS}
    filters:
      status: {expression: status}
`

// TestDynamoDBConfig_RefusesWhatItCannotSendAsDeclared: each form a
// DynamoDB table needs is checked with its line: a credential in a list's
// or a read's headers, an unknown item encoding, a set type without it, a
// whole continuation in a GET list, a bound expression in a GET list, a
// conflict declared on every 400 or on 409.
func TestDynamoDBConfig_RefusesWhatItCannotSendAsDeclared(t *testing.T) {
	if _, err := Parse([]byte(dynamoConfig)); err != nil {
		t.Fatalf("the documented table: %v", err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"headers: {X-Amz-Target: DynamoDB_20120810.Scan}", "headers: {Authorization: AWS4-HMAC-SHA256 x}", "list.headers.Authorization: credentials belong"},
		{"headers: {X-Amz-Target: DynamoDB_20120810.GetItem}", "headers: {X-Amz-Security-Token: x}", "get.headers.X-Amz-Security-Token: credentials belong"},
		{"headers: {X-Amz-Target: DynamoDB_20120810.Scan}", `headers: {"X Target": Scan}`, "is not a header name"},
		{"item_encoding: dynamodb", "item_encoding: dynamo", "item_encoding: use dynamodb"},
		{"item_encoding: dynamodb", "item_encoding: ''", "tags.set: a set type is DynamoDB's"},
		{"      method: POST\n      headers: {X-Amz-Target: DynamoDB_20120810.Scan}", "      headers: {X-Amz-Target: DynamoDB_20120810.Scan}", "continue_param: a whole continuation object is sent in a POST list's body"},
		{"      method: POST\n      headers: {X-Amz-Target: DynamoDB_20120810.Scan}", "      headers: {X-Amz-Target: DynamoDB_20120810.Scan}", "expression.values: bound names and values are sent in a POST list's body"},
		{"continue_param: ExclusiveStartKey", "continue_param: Limit", "the member carries the continuation alone"},
		{"page_size_param: Limit", "page_size_param: none", "evaluated: the items read are compared with the page size asked for"},
		{"conflicts: [{status: 400, member: __type, match: ConditionalCheckFailedException}]", "conflicts: [{status: 400}]", "conflicts.0.member: required"},
		{"conflicts: [{status: 400, member: __type, match: ConditionalCheckFailedException}]", "conflicts: [{status: 409, member: __type, match: X}]", "409 and 412 are always conflicts"},
		{"conflicts: [{status: 400, member: __type, match: ConditionalCheckFailedException}]", "conflicts: [{status: 400, member: __type, match: ProvisionedThroughputExceededException}]", "conflicts.0.match: overlaps throttling.0 (400, __type ending \"ProvisionedThroughputExceededException\")"},
		{"expression: {param: FilterExpression, language: dynamodb}", "expression: {param: FilterExpression, language: dynamodb, quote: \"'\"}", "a bound expression writes no literal"},
	} {
		if !strings.Contains(dynamoConfig, tc.old) {
			t.Fatalf("the base holds no %q", tc.old)
		}
		_, err := Parse([]byte(strings.Replace(dynamoConfig, tc.old, tc.new, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: err = %v; want a line saying %q", tc.new, err, tc.want)
		}
	}
}

// TestDocs_TheDynamoDBExampleIsAConfigurationCheckAccepts: the DynamoDB
// section's example is followed as written: with an environment, check
// accepts it.
func TestDocs_TheDynamoDBExampleIsAConfigurationCheckAccepts(t *testing.T) {
	doc := readDoc(t, "../docs/config.md")
	start := strings.Index(doc, "\n## DynamoDB\n")
	if start < 0 {
		t.Fatal("docs/config.md has no DynamoDB section")
	}
	sec := doc[start:]
	from := strings.Index(sec, "```yaml\n")
	to := strings.Index(sec[from+8:], "```")
	if from < 0 || to < 0 {
		t.Fatal("the DynamoDB section holds no YAML example")
	}
	if _, err := Parse([]byte("environment: docs\n" + sec[from+8:from+8+to])); err != nil {
		t.Errorf("the documented DynamoDB configuration: %v", err)
	}
}
