package config

import (
	"strings"
	"testing"
)

// TestParse_APathParameterNothingFillsIsRefused: a list, get or action
// path that still holds an OpenAPI path parameter ({customer}) would send
// the braces as they are; check refuses it with its line, and accepts
// {{id}} templates.
func TestParse_APathParameterNothingFillsIsRefused(t *testing.T) {
	base := `environment: test
upstreams: {api: {base_url: "https://api.example.com"}}
resources:
  bank_accounts:
    upstream: api
    list: {path: "LIST", items: data}
    pagination: {dialect: cursor, has_more: has_more}
    id_field: id
    fields: {id: {type: string}, status: {type: string}}
    get: {path: GET}
actions:
  verify:
    resource: bank_accounts
    request: {method: POST, path: ACTION}
    conditional: reread
    effect: [{field: status, to: verified}]
    approval: {mode: client}
`
	fill := func(list, get, action string) string {
		return strings.NewReplacer("LIST", list, "GET", `"`+get+`"`, "ACTION", `"`+action+`"`).Replace(base)
	}
	if _, err := Parse([]byte(fill("/v1/customers/cus_1/bank_accounts", "/v1/customers/cus_1/bank_accounts/{{id}}", "/v1/customers/cus_1/bank_accounts/{{id}}/verify"))); err != nil {
		t.Fatalf("filled paths are refused: %v", err)
	}
	for _, tc := range []struct{ list, get, action, want string }{
		{"/v1/customers/{customer}/bank_accounts", "/v1/customers/cus_1/bank_accounts/{{id}}", "/v1/x/{{id}}", "resources.bank_accounts.list.path: the path parameter {customer} is not filled"},
		{"/v1/customers/cus_1/bank_accounts", "/v1/customers/{customer}/bank_accounts/{{id}}", "/v1/x/{{id}}", "resources.bank_accounts.get.path: the path parameter {customer} is not filled"},
		{"/v1/customers/cus_1/bank_accounts", "/v1/customers/cus_1/bank_accounts/{{id}}", "/v1/customers/{customer}/bank_accounts/{{id}}/verify", "actions.verify.request.path: the path parameter {customer} is not filled"},
	} {
		_, err := Parse([]byte(fill(tc.list, tc.get, tc.action)))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
}
