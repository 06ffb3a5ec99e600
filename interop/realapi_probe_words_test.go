package interop

import (
	"strings"
	"testing"
)

// wantWrongSaying asserts that probe named check wrong, with evidence that
// holds each of says (the API's own words, where it gave some) and a hint
// that holds hint.
func wantWrongSaying(t *testing.T, code int, res probeResult, check, hint string, says ...string) {
	t.Helper()
	wantWrong(t, code, res, check)
	for _, r := range res.Resources {
		for _, c := range r.Checks {
			if c.Check != check || c.Status != "wrong" {
				continue
			}
			for _, s := range says {
				if !strings.Contains(c.Evidence, s) {
					t.Errorf("%s: the evidence does not say %q: %s", check, s, c.Evidence)
				}
			}
			if !strings.Contains(c.Hint, hint) {
				t.Errorf("%s: the hint does not say %q: %s", check, hint, c.Hint)
			}
			return
		}
	}
}

// plantedJSONServer: a get.item that points into an envelope json-server
// does not send is named wrong, with the fix (the body is the item).
func plantedJSONServer(t *testing.T, bin, fromDoc string) {
	t.Run("get_item_where_there_is_no_envelope", func(t *testing.T) {
		cfg := replace(t, fromDoc, `get: \{path: "/accounts/\{\{id\}\}"\}`, `get: {path: "/accounts/{{id}}", item: data}`)
		code, res := probeConfig(t, bin, cfg, nil)
		wantWrongSaying(t, code, res, "get.item", "remove get.item", `"data" holds no item`)
		wantWrong(t, code, res, "actions.delete_account.conditional")
	})
}

// plantedPocketBase: a filter sent under a parameter PocketBase reads as
// its filter language is refused, and probe quotes PocketBase's own
// words; a get.item pointing at the list's envelope is named wrong.
func plantedPocketBase(t *testing.T, bin, fromDoc string, env map[string]string) {
	t.Run("filter_sent_as_a_parameter_the_api_refuses", func(t *testing.T) {
		cfg := replace(t, fromDoc, `(?m)^(      status: )\{\}.*$`, "${1}{param: filter}")
		code, res := probeConfig(t, bin, cfg, env)
		wantWrongSaying(t, code, res, "filters.status.param", "the upstream refuses this parameter", "the upstream answered 400", `the API said: "`)
	})
	t.Run("get_item_where_the_list_has_its_envelope", func(t *testing.T) {
		cfg := replace(t, fromDoc, `(?m)^(    filters:)$`, `    get: {path: "/api/collections/accounts/records/{{id}}", item: items}`+"\n${1}")
		code, res := probeConfig(t, bin, cfg, env)
		wantWrongSaying(t, code, res, "get.item", "remove get.item", `"items" holds no item`)
	})
}

// plantedRegistry: a page size over the registry's maximum is refused with
// 400; probe quotes the registry and names the size that works.
func plantedRegistry(t *testing.T, bin, fromDoc string) {
	t.Run("page_size_over_the_api_maximum", func(t *testing.T) {
		cfg := replace(t, fromDoc, `page_size: \d+`, `page_size: 2000`)
		code, res := probeConfig(t, bin, cfg, nil)
		wantWrongSaying(t, code, res, "pagination.page_size", "set pagination.page_size: 1000", "with n=2000 answered 400", `the API said: "`, "with n=1000 it answered 200")
	})
}
