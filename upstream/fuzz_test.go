package upstream

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// FuzzUpstreamBody: any body, status and headers an upstream answers with
// are parsed without a panic, by every dialect and by the problem
// builder; the problem fits the envelope schema and names only fields the
// configuration knows (a filter, a declared field, or the placeholder).
func FuzzUpstreamBody(f *testing.F) {
	cfg, err := config.Parse(fixtures.DemoConfig("http://127.0.0.1:1"))
	if err != nil {
		f.Fatal(err)
	}
	rt, err := Initialize(f.Context(), cfg, Options{WithoutCredentials: true})
	if err != nil {
		f.Fatal(err)
	}
	projects := rt.Resources["projects"]
	var dialects []dialect.Dialect
	for _, d := range []config.PaginationConfig{{Dialect: config.DialectCursor, HasMore: "has_more"}, {Dialect: config.DialectCursor, NextCursor: "response_metadata.next_cursor"},
		{Dialect: config.DialectLink}, {Dialect: config.DialectOffset, Total: "total"}, {Dialect: config.DialectPage, Total: "totalItems"}, {Dialect: config.DialectContinue}} {
		dialects = append(dialects, dialect.New(config.ResolvePagination(d), "id"))
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
		resp := &transport.Response{Status: status, Header: h, Body: body}
		if doc, err := transport.DecodeJSONBody(resp, true); err == nil {
			for _, d := range dialects {
				raw, _ := jsonvalue.Get(doc, "data")
				items, _ := raw.([]any)
				_, _ = d.Parse(resp, doc, items, dialect.State{Started: true})
			}
		} else {
			checkProblem(t, projects, transport.ProblemFor(err, projects.FieldName))
		}
		_ = transport.RetryAfter(h, time.Unix(1_700_000_000, 0))
		if status >= 400 && status <= 599 {
			checkProblem(t, projects, transport.ProblemFor(&transport.HTTPError{Kind: transport.FailStatus, Status: status, Header: h, Body: body, RetryAfter: transport.RetryAfter(h, time.Now())}, projects.FieldName))
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
		case strings.HasPrefix(e.Field, "filter."), e.Field == transport.UndeclaredField:
		case isUpstream:
			if _, ok := r.Config.Fields[name]; !ok {
				t.Fatalf("errors[] names %q, which the configuration does not declare", e.Field)
			}
		default:
			t.Fatalf("errors[] names %q", e.Field)
		}
	}
}
