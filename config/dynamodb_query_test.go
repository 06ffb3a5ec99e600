package config

import (
	"strings"
	"testing"
)

// dynamoQueryConfig is a table keyed by tenant (partition) and id (sort),
// read by Query, as docs/config.md describes one.
const dynamoQueryConfig = `environment: test
upstreams:
  ddb:
    base_url: http://127.0.0.1:8000
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
        key_condition: {partition: tenant, sort: [id_from, id_before]}
    pagination: {dialect: continue_object, continue_path: LastEvaluatedKey, continue_param: ExclusiveStartKey, page_size_param: Limit, page_size: 100}
    id_field: id
    fields:
      tenant: {type: string}
      id: {type: string}
      status: {type: string}
      due: {type: timestamp}
    filters:
      tenant: {expression: tenant}
      id_from: {field: id, op: gte, expression: id}
      id_before: {field: id, op: lt, expression: id}
      status: {expression: status}
`

// TestKeyCondition_ParsesWithItsDefault: the documented Query parses, and
// its key condition's member defaults to KeyConditionExpression.
func TestKeyCondition_ParsesWithItsDefault(t *testing.T) {
	c, err := Parse([]byte(dynamoQueryConfig))
	if err != nil {
		t.Fatalf("the documented Query: %v", err)
	}
	x := ResolveExpression(c.Resources["ledger"].List.Expression)
	if x.KeyCondition == nil || x.KeyCondition.Param != DefaultKeyConditionParam || x.KeyCondition.Partition != "tenant" {
		t.Errorf("resolved key condition %+v", x.KeyCondition)
	}
	if c.Resources["ledger"].List.Expression.KeyCondition.Param != "" {
		t.Error("resolving wrote the default into the configuration")
	}
}

// TestKeyCondition_RefusesWhatDynamoDBWouldRefuseWithItsLine: each
// mistake is an error at its line: an unknown key, a missing or unknown
// partition filter, a partition filter that is not eq, a sort filter on
// another attribute or on the partition key, a timestamp key, a key
// attribute left in the FilterExpression, a normalized key field or one
// with null stand-ins, a key condition outside the
// dynamodb language, and a member shared with the filter expression.
func TestKeyCondition_RefusesWhatDynamoDBWouldRefuseWithItsLine(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"key_condition: {partition: tenant, sort: [id_from, id_before]}", "key_condition: {partition: tenant, sortkey: id}", "key_condition.sortkey: unknown key"},
		{"key_condition: {partition: tenant, sort: [id_from, id_before]}", "key_condition: {sort: [id_from]}", "key_condition.partition: required"},
		{"key_condition: {partition: tenant, sort: [id_from, id_before]}", "key_condition: {partition: tenantx, sort: [id_from, id_before]}", `no filter named "tenantx"`},
		{"key_condition: {partition: tenant, sort: [id_from, id_before]}", "key_condition: {partition: id_from, sort: [id_before]}", "takes op eq here"},
		{"key_condition: {partition: tenant, sort: [id_from, id_before]}", "key_condition: {partition: tenant, sort: [id_from, status]}", `every sort filter is on the one sort key "id"`},
		{"key_condition: {partition: tenant, sort: [id_from, id_before]}", "key_condition: {partition: tenant, sort: [id_from, id_from]}", "named once"},
		{"key_condition: {partition: tenant, sort: [id_from, id_before]}", "key_condition: {partition: tenant, sort: [id_from]}", "filters.id_before.expression: DynamoDB refuses a key attribute in a FilterExpression"},
		{"key_condition: {partition: tenant, sort: [id_from, id_before]}", "key_condition: {partition: tenant, sort: [id_from, id_before], param: FilterExpression}", "a member of its own"},
		{"      status: {expression: status}\n", "      status: {expression: status}\n      due_from: {field: due, op: gte, expression: due}\n", "a key is a string or a number"},
		{"language: dynamodb", "language: odata", "a key condition is DynamoDB's"},
		{"      tenant: {expression: tenant}", "      tenant: {param: tenant}", "a key filter names its attribute"},
		{"      tenant: {type: string}", "      tenant: {type: string, normalize: lower}", "fields.tenant.normalize: a key filter's field is compared as DynamoDB stores it"},
		{"      tenant: {type: string}", "      tenant: {type: string, null_values: [\"-\"]}", "fields.tenant.null_values: a key attribute is never null"},
		{"      id: {type: string}", "      id: {type: string, normalize: lower}", "fields.id.normalize: a key filter's field is compared as DynamoDB stores it"},
		{"      items: Items\n", "      items: Items\n      key_condition: {partition: tenant}\n", "list.key_condition: unknown key"},
		{"    id_field: id\n", "    id_field: id\n    key_condition: {partition: tenant}\n", "ledger.key_condition: unknown key"},
	} {
		t.Run(tc.new, func(t *testing.T) {
			if !strings.Contains(dynamoQueryConfig, tc.old) {
				t.Fatalf("the base holds no %q", tc.old)
			}
			src := strings.Replace(dynamoQueryConfig, tc.old, tc.new, 1)
			if strings.Contains(tc.new, "due_from") {
				src = strings.Replace(src, "sort: [id_from, id_before]", "sort: [due_from]", 1)
				src = strings.Replace(src, "      id_from: {field: id, op: gte, expression: id}\n      id_before: {field: id, op: lt, expression: id}\n", "", 1)
			}
			_, err := Parse([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line ") {
				t.Errorf("err = %v; want a line saying %q", err, tc.want)
			}
		})
	}
}

// TestUnauthorized_RefusesWhatIsNotADeclaredFailureWithItsLine: the
// declared authentication failures name a refusal's status other than
// 401 and the member naming the failure, and none is also a conflict.
func TestUnauthorized_RefusesWhatIsNotADeclaredFailureWithItsLine(t *testing.T) {
	ok := "    unauthorized: [{status: 400, member: __type, match: InvalidSignatureException}]\n"
	base := strings.Replace(dynamoConfig, "    conflicts:", ok+"    conflicts:", 1)
	if _, err := Parse([]byte(base)); err != nil {
		t.Fatalf("the declared failure: %v", err)
	}
	for _, tc := range []struct{ new, want string }{
		{"    unauthorized: [{status: 401}]\n", "unauthorized.0.status: 401 is always"},
		{"    unauthorized: [{status: 500, member: __type, match: X}]\n", "unauthorized.0.status: required: a refusal's status"},
		{"    unauthorized: [{status: 400}]\n", "unauthorized.0.member: required"},
		{"    unauthorized: [{status: 400, member: __type}]\n", "unauthorized.0.match: required with member"},
		{"    unauthorized: [{status: 400, member: __type, match: ConditionalCheckFailedException}]\n", "unauthorized.0.match: overlaps conflicts.0 (400, __type ending \"ConditionalCheckFailedException\")"},
		{"    unauthorized: [{status: 400, member: __type, match: X, typo: 1}]\n", "unauthorized.0.typo: unknown key"},
	} {
		_, err := Parse([]byte(strings.Replace(base, ok, tc.new, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: err = %v; want a line saying %q", tc.new, err, tc.want)
		}
	}
}
