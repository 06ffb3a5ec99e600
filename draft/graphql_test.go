package draft

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
)

// introspectionBody is the part of an introspection answer FromGraphQL
// reads: a query type with one connection (edges { node }), one plain list
// and one item by id.
const introspectionBody = `{"data": {"__schema": {"queryType": {"name": "Query"}, "types": [
 {"kind": "OBJECT", "name": "Query", "fields": [
  {"name": "issues", "args": [{"name": "first", "type": {"kind": "SCALAR", "name": "Int"}}, {"name": "after", "type": {"kind": "SCALAR", "name": "String"}}],
   "type": {"kind": "NON_NULL", "ofType": {"kind": "OBJECT", "name": "IssueConnection"}}},
  {"name": "tags", "args": [], "type": {"kind": "LIST", "ofType": {"kind": "SCALAR", "name": "String"}}},
  {"name": "issue", "args": [{"name": "id", "type": {"kind": "SCALAR", "name": "ID"}}], "type": {"kind": "OBJECT", "name": "Issue"}}]},
 {"kind": "OBJECT", "name": "IssueConnection", "fields": [
  {"name": "edges", "args": [], "type": {"kind": "LIST", "ofType": {"kind": "OBJECT", "name": "IssueEdge"}}},
  {"name": "pageInfo", "args": [], "type": {"kind": "NON_NULL", "ofType": {"kind": "OBJECT", "name": "PageInfo"}}}]},
 {"kind": "OBJECT", "name": "IssueEdge", "fields": [{"name": "node", "args": [], "type": {"kind": "OBJECT", "name": "Issue"}}]},
 {"kind": "OBJECT", "name": "Issue", "fields": [
  {"name": "id", "args": [], "type": {"kind": "NON_NULL", "ofType": {"kind": "SCALAR", "name": "ID"}}},
  {"name": "createdAt", "args": [], "type": {"kind": "SCALAR", "name": "DateTime"}},
  {"name": "state", "args": [], "type": {"kind": "ENUM", "name": "IssueState"}},
  {"name": "labels", "args": [], "type": {"kind": "LIST", "ofType": {"kind": "SCALAR", "name": "String"}}}]}]}}}`

// TestDraftFromGraphQL_EachConnectionIsAResource: a GraphQL endpoint is
// drafted from its introspection: a connection becomes a graphql resource
// whose query selects its nodes' scalar fields through edges, without a
// total it does not have; a plain list and an item are left out.
func TestDraftFromGraphQL_EachConnectionIsAResource(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(introspectionBody))
	}))
	defer srv.Close()
	d, err := FromSample(t.Context(), srv.URL+"/graphql", SampleOptions{Options: Options{Environment: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  issues:\n",
		`query($first: Int!, $after: String) { issues(first: $first, after: $after) { pageInfo { hasNextPage endCursor } edges { node { id createdAt state } } } }`,
		"pagination: {dialect: graphql, connection: issues, page_size: 100, total: none}",
		"created_at: {path: createdAt, type: timestamp",
	} {
		if !strings.Contains(string(d.YAML), want) {
			t.Errorf("the draft lacks %q:\n%s", want, d.YAML)
		}
	}
	if strings.Contains(string(d.YAML), "tags:") || strings.Contains(string(d.YAML), "  issue:\n") {
		t.Errorf("a field that is no connection was drafted:\n%s", d.YAML)
	}
	if _, err := config.Parse(d.YAML); err != nil {
		t.Errorf("the draft does not parse: %v\n%s", err, d.YAML)
	}
}
