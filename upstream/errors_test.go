package upstream

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/redact/leaktest"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// TestUpstreamFieldNames_OnlyDeclaredNamesReachTheProblem: a field an
// upstream names in a 422 is shown when it maps to the filter that sent it
// or to a declared field; any other name (such as the credential the
// upstream echoed) becomes one fixed placeholder.
func TestUpstreamFieldNames_OnlyDeclaredNamesReachTheProblem(t *testing.T) {
	const token = "cnry-3f9a1c7e-demo-credential"
	rt := runtimeWith(t, fixtures.DemoConfig("http://127.0.0.1:1"), func(string) string { return token })
	projects := rt.Resources["projects"]
	body := `{"errors":[{"field":"state"},{"field":"last_activity_at"},{"field":"Bearer ` + token + `"},{"param":"` + token + `"},` +
		`{"field":"` + base64.StdEncoding.EncodeToString([]byte(token)) + `"}],"error":{"param":"x-` + token + `"}}`
	p := transport.ProblemFor(&transport.HTTPError{Kind: transport.FailStatus, Status: 422, Body: []byte(body)}, projects.FieldName)
	var got []string
	for _, e := range p.Errors {
		got = append(got, e.Field)
		if e.Code != envelope.FieldUpstreamRejected {
			t.Fatalf("%s: code %q", e.Field, e.Code)
		}
	}
	want := []string{"filter.state", "upstream.last_activity_at", transport.UndeclaredField}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("errors[] fields: got %v, want %v", got, want)
	}
	if hits := leaktest.Hits(p.Marshal(), token); len(hits) > 0 {
		t.Fatalf("the echoed credential reached the problem (%v): %s", hits, p.Marshal())
	}
	if !strings.Contains(p.Detail, "named 4 field(s) the configuration does not declare") {
		t.Fatalf("detail: %q", p.Detail)
	}
	act := rt.Actions["assign_owner"]
	if act == nil {
		t.Fatal("the demo configuration has assign_owner")
	}
	if got := act.FieldName("owner"); got != "action.params.owner" {
		t.Fatalf("a body field taken from a parameter names the parameter, got %q", got)
	}
	if got := act.FieldName(token); got != "" {
		t.Fatalf("an undeclared name maps to nothing, got %q", got)
	}
	if p := transport.ProblemFor(&transport.HTTPError{Kind: transport.FailStatus, Status: 422, Body: []byte(body)}, nil); len(p.Errors) != 1 || p.Errors[0].Field != transport.UndeclaredField {
		t.Fatalf("without a mapping every name is the placeholder: %+v", p.Errors)
	}
}

// TestQueryable_OnlyBesideSensitive: queryable relaxes what a sensitive
// field answers; on any other field it is a configuration error.
func TestQueryable_OnlyBesideSensitive(t *testing.T) {
	y := strings.Replace(string(fixtures.DemoConfig("http://127.0.0.1:1")), "      project: {type: string}", "      project: {type: string, queryable: true}", 1)
	_, err := config.Parse([]byte(y))
	if err == nil || !strings.Contains(err.Error(), "queryable only applies to a sensitive field") {
		t.Fatalf("want a configuration error, got %v", err)
	}
	y = strings.Replace(string(fixtures.DemoConfig("http://127.0.0.1:1")), "email: {type: string, sensitive: true,", "email: {type: string, sensitive: true, queryable: true,", 1)
	if _, err := config.Parse([]byte(y)); err != nil {
		t.Fatalf("queryable beside sensitive is accepted: %v", err)
	}
}
