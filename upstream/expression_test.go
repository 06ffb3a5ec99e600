package upstream

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// expressionResource is a list whose status, owner, name, rank, active and
// tags filters go in one expression of language (with extra rules).
func expressionResource(t *testing.T, base, language, extra string) *Resource {
	t.Helper()
	return runtimeFor(t, listConfig(base, `  accounts:
    upstream: api
    list: {path: /accounts, items: value, expression: {param: $filter, language: `+language+extra+`}}
    pagination: {dialect: next_url, next: "@odata.nextLink"}
    id_field: id
    fields:
      id: {type: string}
      status: {type: string}
      owner: {type: string, nullable: true}
      name: {type: string}
      rank: {type: integer}
      active: {type: boolean}
      tags: {type: array, elements: string}
      region: {type: string}
      updated: {type: timestamp}
    filters:
      rank_above: {field: rank, op: gt, expression: rank}
      since: {field: updated, op: gte, expression: updated}
      name_before: {field: name, op: lt, expression: name}
      status: {expression: status}
      owner: {expression: owner}
      name: {expression: name}
      rank: {expression: rank}
      active: {expression: active}
      tags: {expression: tags, op: contains}
      region: {param: region}
`)).Resources["accounts"]
}

func TestExpression_QuotesEveryValueAsOneLiteral(t *testing.T) {
	for _, tc := range []struct {
		name, language string
		filter         map[string]any
		want           string // the expression sent; "" when none is
	}{
		{"odata eq", "odata", map[string]any{"status": "active"}, "status eq 'active'"},
		{"odata a quote is doubled", "odata", map[string]any{"name": "O'Brien"}, "name eq 'O''Brien'"},
		{"odata an injection stays one literal", "odata", map[string]any{"name": "' or 1 eq 1 or name eq '"}, "name eq ''' or 1 eq 1 or name eq '''"},
		{"odata parentheses and unicode", "odata", map[string]any{"name": "Zoë (Ωmega) ) or (true"}, "name eq 'Zoë (Ωmega) ) or (true'"},
		{"odata null", "odata", map[string]any{"owner": nil}, "owner eq null"},
		{"odata any of", "odata", map[string]any{"status": []any{"active", "it's"}}, "status in ('active','it''s')"},
		{"odata numbers and booleans bare", "odata", map[string]any{"rank": jsonNum("3"), "active": true}, "(active eq true) and (rank eq 3)"},
		{"odata contains", "odata", map[string]any{"tags": "vip"}, "tags/any(v:v eq 'vip')"},
		{"odata clauses joined, a parameter apart", "odata", map[string]any{"status": "active", "owner": nil, "region": "eu"}, "(owner eq null) and (status eq 'active')"},
		{"odata null among values stays with airlock", "odata", map[string]any{"owner": []any{nil, "ann"}}, ""},
		{"odata a control character stays with airlock", "odata", map[string]any{"name": "a\nb"}, ""},
		{"jql quotes and backslashes", "jql", map[string]any{"name": `say "hi" \ bye`}, `name = "say \"hi\" \\ bye"`},
		{"jql null", "jql", map[string]any{"owner": nil}, "owner is EMPTY"},
		{"jql injection", "jql", map[string]any{"name": `x" OR project = "SECRET`}, `name = "x\" OR project = \"SECRET"`},
		{"lucene phrase", "lucene", map[string]any{"name": `a:b "c" OR d`}, `name:"a:b \"c\" OR d"`},
		{"lucene numbers are quoted", "lucene", map[string]any{"rank": jsonNum("-1")}, `rank:"-1"`},
		{"lucene has no null: airlock alone", "lucene", map[string]any{"owner": nil}, ""},
		{"lucene any of", "lucene", map[string]any{"status": []any{"a", "b"}}, `status:("a" OR "b")`},
		{"odata a comparison", "odata", map[string]any{"rank_above": jsonNum("2000")}, "rank gt 2000"},
		{"odata a timestamp bare", "odata", map[string]any{"since": "2026-01-01T00:00:00Z"}, "updated ge 2026-01-01T00:00:00Z"},
		{"odata a string comparison quoted", "odata", map[string]any{"name_before": "M' or 1 eq 1"}, "name lt 'M'' or 1 eq 1'"},
		{"jql comparisons", "jql", map[string]any{"rank_above": jsonNum("3"), "since": "2026-01-01T00:00:00Z"}, `(rank > 3) AND (updated >= "2026-01-01T00:00:00Z")`},
		{"lucene ranges", "lucene", map[string]any{"rank_above": jsonNum("3"), "name_before": "m"}, `(name:{* TO "m"}) AND (rank:{"3" TO *})`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := expressionResource(t, "http://api.test", tc.language, "")
			p := &dialect.Params{Kind: config.ListQuery, Query: url.Values{}}
			forms := r.SendFilters(p, tc.filter)
			if got := p.Query.Get("$filter"); got != tc.want {
				t.Errorf("$filter = %q, want %q", got, tc.want)
			}
			if tc.want == "" {
				for name, f := range forms {
					if f.Sent && name != "region" {
						t.Errorf("filter %s counted as sent, with nothing in the expression", name)
					}
				}
			}
		})
	}
}

func TestExpression_ADeclaredLanguageAndABase(t *testing.T) {
	r := expressionResource(t, "http://api.test", "jql", `, base: "project = OPS", suffix: " ORDER BY key", is_null: "{{field}} is null"`)
	p := &dialect.Params{Kind: config.ListQuery, Query: url.Values{}}
	r.SendFilters(p, map[string]any{"owner": nil, "status": "Done"})
	if got, want := p.Query.Get("$filter"), `(project = OPS) AND (owner is null) AND (status = "Done") ORDER BY key`; got != want {
		t.Errorf("$filter = %q, want %q", got, want)
	}
}

// TestExpression_RecordsTheUpstreamReturnedForItAreRechecked: an expression
// filter that was sent counts as sent: a record the upstream returned that
// airlock's check rejects is CONFLICTING_EVIDENCE, never a complete answer.
func TestExpression_RecordsTheUpstreamReturnedForItAreRechecked(t *testing.T) {
	var got string
	rec := &recorder{respond: func(_ int, w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query().Get("$filter")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"value":[{"id":"a","name":"O'Brien","status":"x","owner":null,"rank":1,"active":true,"tags":[],"region":"eu"},
			{"id":"b","name":"OBrien","status":"x","owner":null,"rank":1,"active":true,"tags":[],"region":"eu"}],"@odata.nextLink":null}`)
	}}
	ts := startRecorder(t, rec)
	r := expressionResource(t, ts.URL, "odata", "")
	sink, out, err := scanAll(t, r, map[string]any{"name": "O'Brien"}, Budget{})
	if err != nil {
		t.Fatal(err)
	}
	if got != "name eq 'O''Brien'" {
		t.Errorf("sent %q", got)
	}
	if strings.Join(sink.ids, ",") != "a" || out.ScanComplete {
		t.Fatalf("ids %v complete %v, want only a and not complete", sink.ids, out.ScanComplete)
	}
	rs := reasonOf(out, envelope.ConflictingEvidence)
	if rs == nil || rs.Signal != dialect.SignalFilterConflict || rs.Filter != "name" || rs.SampleID != "b" {
		t.Errorf("reasons %+v, want %s on name with sample b", out.Reasons, dialect.SignalFilterConflict)
	}
}

func TestExpression_ConfigurationErrors(t *testing.T) {
	for _, tc := range []struct{ name, list, filters, want string }{
		{"unknown language", "{param: q, language: sql}", "status: {expression: status}", "unknown language"},
		{"no param", "{language: odata}", "status: {expression: status}", "required: the parameter"},
		{"the quote not escaped", `{param: q, eq: "{{field}}={{value}}", quote: "'", join: " and "}`, "status: {expression: status}", "say how the quote"},
		{"an escape that is not escaped", `{param: q, eq: "{{field}}={{value}}", quote: '"', escape: {'"': '\"'}, join: " and "}`, "status: {expression: status}", "must be escaped too"},
		{"both param and expression", "{param: q, language: odata}", "status: {expression: status, param: status}", "not both"},
		{"expression without a list expression", "{}", "status: {expression: status}", "needs list.expression"},
		{"an unknown key", "{param: q, language: odata, quoting: x}", "status: {expression: status}", `unknown key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := "{path: /accounts, items: value}"
			if tc.list != "{}" {
				list = "{path: /accounts, items: value, expression: " + tc.list + "}"
			}
			_, err := config.Parse(listConfig("http://api.test", `  accounts:
    upstream: api
    list: `+list+`
    pagination: {dialect: next_url}
    id_field: id
    fields: {id: {type: string}, status: {type: string}}
    filters:
      `+tc.filters+`
`))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "line ") {
				t.Errorf("error %v names no line", err)
			}
		})
	}
}

func jsonNum(s string) json.Number { return json.Number(s) }

// TestComparisonFilters_MatchInTheFieldsType: a comparison filter compares
// numbers as numbers, timestamps as instants (whatever their offset) and
// strings by their bytes; null matches none, and a list, null or an
// instant that does not parse is refused.
func TestComparisonFilters_MatchInTheFieldsType(t *testing.T) {
	r := expressionResource(t, "http://api.test", "odata", "")
	doc := map[string]any{"rank": jsonNum("10"), "updated": "2026-03-01T01:00:00+02:00", "name": "Mallory"}
	for _, tc := range []struct {
		filter map[string]any
		want   bool
	}{
		{map[string]any{"rank_above": jsonNum("9")}, true},
		{map[string]any{"rank_above": jsonNum("10")}, false},
		{map[string]any{"rank_above": jsonNum("9.5")}, true},
		{map[string]any{"since": "2026-02-28T23:00:00Z"}, true}, // the same instant
		{map[string]any{"since": "2026-02-28T23:00:01Z"}, false},
		{map[string]any{"name_before": "N"}, true},
		{map[string]any{"name_before": "Mallory"}, false},
	} {
		if got := r.Matches(doc, tc.filter); got != tc.want {
			t.Errorf("%v on %v: %v, want %v", tc.filter, doc, got, tc.want)
		}
	}
	if r.Matches(map[string]any{"rank": nil}, map[string]any{"rank_above": jsonNum("0")}) {
		t.Error("null rank matched rank > 0")
	}
	_, errs := r.TypedFilter(map[string]any{"rank_above": []any{jsonNum("1"), jsonNum("2")}, "since": "yesterday", "name_before": nil})
	if len(errs) != 3 {
		t.Errorf("errors %+v, want the list, the instant that does not parse and the null refused", errs)
	}
}
