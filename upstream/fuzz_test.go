package upstream

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// FuzzUpstreamBody: any body, status and headers an upstream answers with
// are parsed without a panic, by every dialect and by the problem
// builder; the problem fits the envelope schema and names only fields the
// configuration knows (a filter, a declared field, or the placeholder).
func FuzzUpstreamBody(f *testing.F) {
	cfg, err := ParseConfig(fixtures.DemoConfig("http://127.0.0.1:1"))
	if err != nil {
		f.Fatal(err)
	}
	rt, err := cfg.Initialize(f.Context(), Options{WithoutCredentials: true})
	if err != nil {
		f.Fatal(err)
	}
	projects := rt.Resources["projects"]
	var dialects []dialect
	for _, d := range []PaginationConfig{{Dialect: DialectCursor, HasMore: "has_more"}, {Dialect: DialectCursor, NextCursor: "response_metadata.next_cursor"},
		{Dialect: DialectLink}, {Dialect: DialectOffset, Total: "total"}, {Dialect: DialectPage, Total: "totalItems"}, {Dialect: DialectContinue}} {
		dialects = append(dialects, newDialect(resolvePagination(d), "id"))
	}
	for _, s := range []struct {
		status          int
		ctype, link, ra string
		body            string
	}{
		{200, "application/json", "", "", `{"data":[{"id":"a"}],"has_more":true}`},
		{200, "application/json", `<http://127.0.0.1:1/v1/projects?page=2>; rel="next"`, "", `[{"id":"prj_1"}]`},
		{200, "application/json", "", "", `{"items":[{"id":"x"}],"total":-1,"metadata":{"continue":"c","resourceVersion":"1"}}`},
		{422, "application/problem+json", "", "", `{"errors":[{"field":"state"},{"pointer":"/owner"},{"name":"cnry-3f9a"}],"invalid-params":[{"name":"x"}]}`},
		{400, "application/json", "", "", `{"error":{"param":"owner","details":[{"fieldViolations":[{"field":"state"}]}]}}`},
		{429, "application/json", "", "Wed, 21 Oct 2015 07:28:00 GMT", `{"error":"slow"}`},
		{503, "text/html; charset=utf-8", "", "99999999999999999999", `<html>`},
		{200, "application/json", "", "", `{"ok":false,"error":"x"}`},
		{200, "application/json", "<>; rel=next, <http://other.example/x>; rel=\"next\"", "", `{"errors":true}`},
	} {
		f.Add(s.status, s.ctype, s.link, s.ra, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status int, ctype, link, retryAfter string, body []byte) {
		h := http.Header{}
		if ctype != "" {
			h.Set("Content-Type", ctype)
		}
		if link != "" {
			h.Set("Link", link)
		}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		resp := &Response{Status: status, Header: h, Body: body}
		if doc, err := decodeJSONBody(resp, true); err == nil {
			for _, d := range dialects {
				raw, _ := jsonvalue.Get(doc, "data")
				items, _ := raw.([]any)
				_, _ = d.parse(resp, doc, items, pageState{Started: true})
			}
		} else {
			checkProblem(t, projects, ProblemFor(err, projects.FieldName))
		}
		_ = CheckWriteResponse(resp)
		_ = RetryAfter(h, time.Unix(1_700_000_000, 0))
		if status >= 400 && status <= 599 {
			checkProblem(t, projects, ProblemFor(&HTTPError{Kind: FailStatus, Status: status, Header: h, Body: body, RetryAfter: RetryAfter(h, time.Now())}, projects.FieldName))
		}
	})
}

func checkProblem(t *testing.T, r *Resource, p *envelope.Problem) {
	t.Helper()
	if err := envelope.ValidateEnvelope(envelope.ErrorEnvelope(p).Marshal()); err != nil {
		t.Fatalf("the problem breaks the schema: %v\n%s", err, p.Marshal())
	}
	for _, e := range p.Errors {
		name, isUpstream := strings.CutPrefix(e.Field, "upstream.")
		switch {
		case strings.HasPrefix(e.Field, "filter."), e.Field == UndeclaredField:
		case isUpstream:
			if _, ok := r.Config.Fields[name]; !ok {
				t.Fatalf("errors[] names %q, which the configuration does not declare", e.Field)
			}
		default:
			t.Fatalf("errors[] names %q", e.Field)
		}
	}
}

// FuzzParseConfig: any bytes given as a configuration are parsed without
// a panic, and a refusal says where: every error names a path and a
// message.
func FuzzParseConfig(f *testing.F) {
	f.Add(fixtures.DemoConfig("http://127.0.0.1:1"))
	f.Add([]byte("environment: x\nupstreams: {a: {base_url: 'http://h', credential: {env: T}}}\nresources: {r: {upstream: a, list: {path: /x}, pagination: {dialect: page}, id_field: id, fields: {id: {type: string, sensitive: true, queryable: true}}}}\n"))
	f.Add([]byte("environment: [\n"))
	f.Add([]byte("upstreams: {a: {timeout: 1e99s, retries: 99}}\nresources: {r: {limits: {max_items: {default: -1, cap: -2}}}}"))
	f.Add([]byte("*a: &a [*a]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 16<<10 {
			t.Skip()
		}
		cfg, err := ParseConfig(b)
		if err == nil {
			if cfg == nil {
				t.Fatal("no configuration and no error")
			}
			return
		}
		ces, ok := err.(ConfigErrors)
		if !ok || len(ces) == 0 {
			t.Fatalf("want ConfigErrors, got %T %v", err, err)
		}
		for _, e := range ces {
			if e.Msg == "" || e.Path == "" {
				t.Fatalf("an error without a path or message: %+v", e)
			}
		}
	})
}
