package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/configtest"
)

func TestParseConfig_AcceptsValidConfigurations(t *testing.T) {
	credFile := filepath.Join(t.TempDir(), "token")
	for _, tc := range []struct {
		name string
		yaml []byte
	}{
		{"demo config", fixtures.DemoConfig("http://127.0.0.1:1")},
		{"minimal cursor with has_more", configtest.WithPagination("{dialect: cursor, has_more: has_more}")},
		{"minimal cursor with next_cursor", configtest.WithPagination("{dialect: cursor, next_cursor: meta.next}")},
		{"minimal link", configtest.WithPagination("{dialect: link}")},
		{"minimal offset", configtest.WithPagination("{dialect: offset}")},
		{"minimal page", configtest.WithPagination("{dialect: page}")},
		{"minimal continue", configtest.WithPagination("{dialect: continue}")},
		{"continue declares its snapshot", configtest.WithPagination("{dialect: continue, consistency: snapshot}")},
		{"offset declares no consistency", configtest.WithPagination("{dialect: offset, consistency: none}")},
		{"every optional feature", configtest.Lines(
			"environment: staging",
			"upstreams:",
			"  api:",
			"    base_url: https://api.example.com/v2/",
			"    credential: {file: "+credFile+", header: X-Api-Key, scheme: \"\"}",
			"    timeout: 3s",
			"    retries: 0",
			"    backoff: {min: 10ms, max: 1s}",
			"    rate_limit: {per_second: 5.5, burst: 3}",
			"    concurrency: 2",
			"    max_body_bytes: 1048576",
			"    request_id_header: X-Correlation-Id",
			"    headers: {X-Tenant: acme, Accept-Language: en}",
			"    max_retry_after: 15m",
			"    throttling:",
			"      - {status: 400, member: __type, match: ProvisionedThroughputExceededException}",
			"      - {status: 403, member: 0.errorCode, match: REQUEST_LIMIT_EXCEEDED}",
			"      - {status: 420}",
			"resources:",
			"  things:",
			"    upstream: api",
			"    description: every knob",
			"    list: {path: /things, params: {expand: owner}, items: results}",
			"    pagination: {dialect: page, page_size: 25, page_param: p, first_page: 0, total: meta.total, concurrency: 3}",
			"    id_field: uid",
			"    version_field: rev",
			"    fields:",
			"      uid: {type: string, path: meta.uid}",
			"      rev: {type: integer}",
			"      kind: {type: string, enum: [a, b], normalize: lower}",
			"      secret: {type: string, sensitive: true}",
			"      tags: {type: array}",
			"    default_fields: [uid, kind]",
			"    filters:",
			"      kind: {param: kind}",
			"      tag: {field: tags, op: contains, param: tag}",
			"      region: {field: kind}",
			"    default_filter: {kind: a}",
			"    sources:",
			"      - {name: eu, base_url: https://eu.example.com, match: {region: a}}",
			"      - {name: us, params: {zone: us}}",
			"    visibility: {field: meta.view, restricted_values: [partial]}",
			"    incomplete: {flags: [incomplete_results], total_relation: total_relation}",
			"    result_cap: 1000",
			"    freshness: {header: X-Index-Updated, max_age: 10m}",
			"    limits: {max_items: {default: 10, cap: 100}, max_pages: {cap: 50}, deadline_ms: {default: 2000}, response_bytes: 8000, scan_items: 5000}",
		)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(tc.yaml)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg.Environment == "" || len(cfg.Upstreams) == 0 || len(cfg.Resources) == 0 {
				t.Errorf("parsed config is missing parts: %+v", cfg)
			}
		})
	}
}

func TestParseConfig_AcceptsEveryFixtureDialectAndDataset(t *testing.T) {
	var rs []fixtures.Resource
	for _, d := range fixtures.AllDialects {
		for _, ds := range []string{fixtures.DatasetServiceAccounts, fixtures.DatasetSubscriptions, fixtures.DatasetProjects} {
			rs = append(rs, fixtures.Resource{Name: d + "_" + ds, Dataset: ds, Dialect: d, Concurrency: 2})
		}
	}
	cfg, err := Parse(fixtures.Config("http://127.0.0.1:1", rs...))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(cfg.Resources) != len(rs) {
		t.Errorf("parsed %d resources, want %d", len(cfg.Resources), len(rs))
	}
}

// wantErr is one expected Error: its line, its path and a fragment of
// its message.
type wantErr struct {
	line int
	path string
	msg  string
}

func parseErrors(t *testing.T, yaml []byte) Errors {
	t.Helper()
	cfg, err := Parse(yaml)
	if err == nil {
		t.Fatalf("Parse accepted the configuration: %+v", cfg)
	}
	var ces Errors
	if !errors.As(err, &ces) {
		t.Fatalf("error is %T, want Errors: %v", err, err)
	}
	return ces
}

func checkErrors(t *testing.T, got Errors, want []wantErr) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d errors, want %d:\n%v", len(got), len(want), got)
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.Line != w.line || g.Path != w.path || !strings.Contains(g.Msg, w.msg) {
			t.Errorf("error %d = line %d %s: %q, want line %d %s: containing %q", i, g.Line, g.Path, g.Msg, w.line, w.path, w.msg)
		}
	}
}

func TestParseConfig_RejectsUnknownKeysAtEveryLevelAllAtOnce(t *testing.T) {
	got := parseErrors(t, configtest.Lines(
		"environment: test",
		"enviroment: typo", // 2: top level
		"upstreams:",
		"  api:",
		"    base_url: http://127.0.0.1:1",
		"    timeot: 5s", // 6: upstream
		"resources:",
		"  items:",
		"    upstream: api",
		"    list: {path: /items, item: data}", // 10: list
		"    pagination: {dialect: link, pagesize: 10}", // 11: pagination
		"    id_field: id",
		"    paging: {}", // 13: resource
		"    fields:",
		"      id: {type: string, sensitve: true}", // 15: field
		"    filters:",
		"      id: {parameter: id}", // 17: filter
	))
	checkErrors(t, got, []wantErr{
		{2, "enviroment", `unknown key; did you mean "environment"?`},
		{6, "upstreams.api.timeot", `unknown key; did you mean "timeout"?`},
		{10, "resources.items.list.item", `unknown key; did you mean "items"?`},
		{11, "resources.items.pagination.pagesize", `unknown key; did you mean "page_size"?`},
		{13, "resources.items.paging", "unknown key"},
		{15, "resources.items.fields.id.sensitve", `unknown key; did you mean "sensitive"?`},
		{17, "resources.items.filters.id.parameter", "unknown key"},
	})
	for _, e := range got {
		if strings.Contains(e.Error(), "upstream.") || strings.Contains(e.Error(), "Config") {
			t.Errorf("error %q mentions a Go type", e.Error())
		}
	}
}

func TestParseConfig_ReportsYAMLTypeProblemsWithLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml []byte
		want []wantErr
	}{
		{"wrong scalar types", configtest.Lines(
			"environment: test",
			"upstreams:",
			"  api:",
			"    base_url: http://127.0.0.1:1",
			"    retries: many",
			"    timeout: soon",
		), []wantErr{{1, "resources", "required"},
			{5, "upstreams.api.retries", "wrong type: a string (many) where an integer is expected"},
			{6, "upstreams.api.timeout", "wrong type: a string (soon) where a duration such as 10s"}}},
		{"duplicate top-level key", configtest.Lines(
			"environment: test",
			"environment: prod",
		), []wantErr{{1, "upstreams", "required"}, {1, "resources", "required"},
			{2, "environment", `duplicate key: "environment" is already defined at line 1`}}},
		{"duplicate upstream", configtest.Lines(
			"environment: test",
			"upstreams:",
			"  api: {base_url: http://127.0.0.1:1}",
			"  api: {base_url: http://127.0.0.1:2}",
		), []wantErr{{1, "resources", "required"}, {4, "upstreams.api", `duplicate key: "api" is already defined at line 3`}}},
		{"list where a map belongs", configtest.Lines(
			"environment: test",
			"upstreams: [api]",
		), []wantErr{{1, "resources", "required"}, {2, "upstreams", "wrong type: a list where a mapping is expected"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, tc.yaml), tc.want)
		})
	}
}

func TestParseConfig_SyntaxErrorsCarryTheirLine(t *testing.T) {

	got := parseErrors(t, configtest.Lines(
		"environment: test",
		"  upstreams: oops",
	))
	if len(got) != 1 || got[0].Line != 2 {
		t.Errorf("errors = %#v, want one error on line 2", got)
	}
}

func TestParseConfig_ReportsSemanticErrorsWithLines(t *testing.T) {
	// Each case starts from configtest.MinimalUpstream (lines 1-4) and configtest.MinimalResource
	// (lines 5-12) and changes or adds lines; the comment is the line.
	with := func(edit func(lines []string) []string) []byte {
		lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
		return configtest.Lines(edit(lines)...)
	}
	set := func(line int, text string) func([]string) []string {
		return func(l []string) []string { l[line-1] = text; return l }
	}
	add := func(text ...string) func([]string) []string {
		return func(l []string) []string { return append(l, text...) }
	}
	// upstreamKey adds a line to the upstream: it becomes line 5.
	upstreamKey := func(text string) func([]string) []string {
		return func(l []string) []string { return append(l[:4:4], append([]string{text}, l[4:]...)...) }
	}
	for _, tc := range []struct {
		name string
		yaml []byte
		want []wantErr
	}{
		{"missing environment", with(set(1, "# no environment")),
			[]wantErr{{2, "environment", "required: name the environment"}}},
		{"resource names an unknown upstream", with(set(7, "    upstream: x")),
			[]wantErr{{7, "resources.items.upstream", `no upstream named "x"`}}},
		{"unknown dialect", with(set(9, "    pagination: {dialect: scroll}")),
			[]wantErr{{9, "resources.items.pagination.dialect", "unknown dialect"}}},
		{"missing dialect", with(set(9, "    pagination: {page_size: 10}")),
			[]wantErr{{9, "resources.items.pagination.dialect", "required: one of cursor, link, offset, page, continue"}}},
		{"cursor without a way to continue", with(set(9, "    pagination: {dialect: cursor}")),
			[]wantErr{{9, "resources.items.pagination", "needs has_more"}}},
		{"snapshot on a non-continue dialect", with(set(9, "    pagination: {dialect: offset, consistency: snapshot}")),
			[]wantErr{{9, "resources.items.pagination.consistency", "only the continue dialect, search_after with a point in time, or a snapshot sent with every page"}}},
		{"unknown consistency", with(set(9, "    pagination: {dialect: link, consistency: eventual}")),
			[]wantErr{{9, "resources.items.pagination.consistency", "use one of snapshot, keyset, none"}}},
		{"id_field not declared in fields", with(set(10, "    id_field: uuid")),
			[]wantErr{{10, "resources.items.id_field", "the id field must be declared in fields"}}},
		{"sensitive id field", with(set(12, "      id: {type: string, sensitive: true}")),
			[]wantErr{{12, "resources.items.fields.id.sensitive", "the id field cannot be sensitive"}}},
		{"default_fields names a sensitive field", with(add(
			"      email: {type: string, sensitive: true}", // 13
			"    default_fields:",                          // 14
			"      - id",                                   // 15
			"      - email",                                // 16
		)), []wantErr{{16, "resources.items.default_fields.1", `field "email" is sensitive and cannot be returned`}}},
		{"default_fields names an undeclared field", with(add("    default_fields: [id, nope]")),
			[]wantErr{{13, "resources.items.default_fields.1", `field "nope" is not declared`}}},
		{"filter on an undeclared field", with(add(
			"    filters:",           // 13
			"      status: {}",       // 14
			"      kind: {field: k}", // 15
		)), []wantErr{
			{14, "resources.items.filters.status", `filters on field "status", which is not declared`},
			{15, "resources.items.filters.kind", `filters on field "k", which is not declared`},
		}},
		{"visibility with both header and field", with(add("    visibility: {header: X-Visibility, field: meta.view, restricted_values: [restricted]}")),
			[]wantErr{{13, "resources.items.visibility", "set exactly one of header or field"}}},
		{"visibility without restricted values", with(add("    visibility: {header: X-Visibility}")),
			[]wantErr{{13, "resources.items.visibility.restricted_values", "required"}}},
		{"credential with both env and file", with(upstreamKey("    credential: {env: API_TOKEN, file: /run/secrets/token}")),
			[]wantErr{{5, "upstreams.api.credential", "set exactly one of env or file"}}},
		{"credential with neither env nor file", with(upstreamKey("    credential: {header: X-Api-Key}")),
			[]wantErr{{5, "upstreams.api.credential", "set exactly one of env or file"}}},
		{"base_url with userinfo", with(set(4, "    base_url: http://admin:hunter2@127.0.0.1:1")),
			[]wantErr{{4, "upstreams.api.base_url", "must not carry credentials"}}},
		{"base_url not http", with(set(4, "    base_url: ftp://127.0.0.1/")),
			[]wantErr{{4, "upstreams.api.base_url", "must be an absolute http or https URL"}}},
		{"relative base_url", with(set(4, "    base_url: /api")),
			[]wantErr{{4, "upstreams.api.base_url", "must be an absolute http or https URL"}}},
		{"Authorization in headers", with(upstreamKey("    headers: {Authorization: Bearer abc}")),
			[]wantErr{{5, "upstreams.api.headers", "credentials belong in credential, not in headers"}}},
		{"cookie in headers, any case", with(upstreamKey("    headers: {cookie: session=abc}")),
			[]wantErr{{5, "upstreams.api.headers", "credentials belong in credential, not in headers"}}},
		{"limits default above cap", with(add("    limits: {max_items: {default: 2000, cap: 1000}}")),
			[]wantErr{{13, "resources.items.limits.max_items", "default is above the cap"}}},
		{"negative limit", with(add("    limits:", "      deadline_ms: {cap: -1}")),
			[]wantErr{{14, "resources.items.limits.deadline_ms", "must not be negative"}}},
		{"list path not absolute", with(set(8, "    list: {path: items}")),
			[]wantErr{{8, "resources.items.list.path", "an absolute path"}}},
		{"unknown field type", with(set(12, "      id: {type: str}")),
			[]wantErr{{12, "resources.items.fields.id.type", "type must be one of"}}},
		{"default_filter names an undeclared filter", with(add("    default_filter: {status: active}")),
			[]wantErr{{13, "resources.items.default_filter.status", "undeclared filter"}}},
		{"duplicate source names", with(add(
			"    sources:",     // 13
			"      - name: eu", // 14
			"      - name: eu", // 15
		)), []wantErr{{15, "resources.items.sources.1.name", "duplicate source name"}}},
		{"page size out of range", with(set(9, "    pagination: {dialect: link, page_size: 20000}")),
			[]wantErr{{9, "resources.items.pagination.page_size", "between 1 and 10000"}}},
		{"retries out of range", with(upstreamKey("    retries: 11")),
			[]wantErr{{5, "upstreams.api.retries", "between 0 and 10"}}},
		{"max_retry_after longer than a day", with(upstreamKey("    max_retry_after: 48h")),
			[]wantErr{{5, "upstreams.api.max_retry_after", "whole seconds between 10s and 24h"}}},
		{"max_retry_after shorter than airlock's own wait", with(upstreamKey("    max_retry_after: 5s")),
			[]wantErr{{5, "upstreams.api.max_retry_after", "whole seconds between 10s and 24h"}}},
		{"max_retry_after not whole seconds", with(upstreamKey("    max_retry_after: 90500ms")),
			[]wantErr{{5, "upstreams.api.max_retry_after", "whole seconds between 10s and 24h"}}},
		{"throttling declarations that cannot match", with(func(l []string) []string {
			return append(l[:4:4], append([]string{
				"    throttling:",       // 5
				"      - {status: 429}", // 6
				"      - {member: __type, match: ThrottlingException}", // 7
				"      - {status: 400, member: __type}",                // 8
				"      - {status: 403, match: REQUEST_LIMIT_EXCEEDED}", // 9
			}, l[4:]...)...)
		}), []wantErr{
			{6, "upstreams.api.throttling.0.status", "429 is always a rate limit"},
			{7, "upstreams.api.throttling.1.status", "an error status (400 to 599)"},
			{8, "upstreams.api.throttling.2.match", "required with member"},
			{9, "upstreams.api.throttling.3.match", "match needs member"},
		}},
		{"malformed environment reference in base_url", with(set(4, "    base_url: http://${API HOST}/v1")),
			[]wantErr{{4, "upstreams.api.base_url", "is not an environment variable name"}}},
		{"unterminated environment reference", with(set(4, "    base_url: http://${API_HOST/v1")),
			[]wantErr{{4, "upstreams.api.base_url", "unterminated"}}},
		{"multi-value form the config does not know", with(add(
			"      status: {type: string}",               // 13
			"    filters:",                               // 14
			"      status: {param: status, multi: pipe}", // 15
		)), []wantErr{{15, "resources.items.filters.status.multi", "multi must be repeat"}}},
		{"multi without a parameter", with(add(
			"      status: {type: string}", // 13
			"    filters:",                 // 14
			"      status: {multi: comma}", // 15
		)), []wantErr{{15, "resources.items.filters.status.multi", "set param or multi_param too"}}},
		{"layout on a field that is not a timestamp", with(add("      created: {type: string, layout: unix}")),
			[]wantErr{{13, "resources.items.fields.created.layout", "only for timestamp fields"}}},
		{"layout that cannot read a time", with(add("      created: {type: timestamp, layout: \"2006\"}")),
			[]wantErr{{13, "resources.items.fields.created.layout", "layout must be rfc3339, unix, unix_ms or a Go time layout"}}},
		{"null value that is not a scalar", with(add("      owner: {type: string, null_values: [[]]}")),
			[]wantErr{{13, "resources.items.fields.owner.null_values.0", "must be a string, number or boolean"}}},
		{"total and total_header both", with(set(9, "    pagination: {dialect: page, total: totalItems, total_header: X-Total-Count}")),
			[]wantErr{{9, "resources.items.pagination.total_header", "set one of total"}}},
		{"a field reading a sensitive field's value", with(add(
			"      email: {type: string, sensitive: true}",                      // 13
			"      contact_email: {type: string, path: email}",                  // 14
			"      contact: {type: object, path: profile}",                      // 15
			"      phone: {type: string, path: profile.phone, sensitive: true}", // 16
		)), []wantErr{
			{14, "resources.items.fields.contact_email", `holds sensitive field "email"`},
			{15, "resources.items.fields.contact", `holds sensitive field "phone"`},
		}},
		{"scalar items under an undeclared field", with(set(8, "    list: {path: /v2/_catalog, items: repositories, scalar_item_field: name}")),
			[]wantErr{{8, "resources.items.list.scalar_item_field", `field "name" is not declared`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, tc.yaml), tc.want)
		})
	}
}

func TestParseConfig_ReportsEverySemanticErrorSortedByLine(t *testing.T) {
	// Resources come before upstreams and the environment is missing, so the
	// order of validation differs from the order of lines.
	got := parseErrors(t, configtest.Lines(
		"resources:", // 1: environment is missing (reported at the document's first key)
		"  zeta:",
		"    upstream: nowhere", // 3
		"    list: {path: /z}",
		"    pagination: {dialect: link}",
		"    id_field: id",
		"    fields:",
		"      id: {type: string}",
		"  alpha:",
		"    upstream: api",
		"    list: {path: /a}",
		"    pagination: {dialect: offset, consistency: snapshot}", // 12
		"    id_field: uuid", // 13
		"    fields:",
		"      id: {type: string}",
		"      email: {type: string, sensitive: true}",
		"    default_fields: [id, email]",                     // 17
		"    filters: {status: {}}",                           // 18
		"    limits: {max_items: {default: 2000, cap: 1000}}", // 19
		"upstreams:",
		"  api:",
		"    base_url: \"http://user:hunter2@127.0.0.1:1\"", // 22
		"    headers: {Authorization: Bearer abc}",          // 23
		"    credential: {env: A, file: /b}",                // 24
	))
	checkErrors(t, got, []wantErr{
		{1, "environment", "required"},
		{3, "resources.zeta.upstream", `no upstream named "nowhere"`},
		{12, "resources.alpha.pagination.consistency", "only the continue dialect, search_after with a point in time, or a snapshot sent with every page"},
		{13, "resources.alpha.id_field", "the id field must be declared in fields"},
		{17, "resources.alpha.default_fields.1", `field "email" is sensitive`},
		{18, "resources.alpha.filters.status", `filters on field "status"`},
		{19, "resources.alpha.limits.max_items", "default is above the cap"},
		{22, "upstreams.api.base_url", "must not carry credentials"},
		{23, "upstreams.api.headers", "credentials belong in credential"},
		{24, "upstreams.api.credential", "set exactly one of env or file"},
	})
	all := got.Error()
	if strings.Contains(all, "hunter2") || strings.Contains(all, "abc") {
		t.Errorf("the errors repeat a credential from the file:\n%s", all)
	}
	if lines := strings.Split(all, "\n"); len(lines) != len(got) || !strings.HasPrefix(lines[1], "line 3: resources.zeta.upstream: ") {
		t.Errorf("Error() = %q, want one \"line N: path: message\" line per problem", all)
	}
}

func TestConfigError_FormatsWithAndWithoutLine(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want string
	}{
		{Error{Line: 7, Path: "resources.items.upstream", Msg: `no upstream named "x"`}, `line 7: resources.items.upstream: no upstream named "x"`},
		{Error{Path: "config", Msg: "empty"}, "config: empty"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestSummary_ShowsWhetherCredentialsArePresentNeverTheirValues(t *testing.T) {
	const secret = "sk_live_summary_secret"
	readable := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(readable, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	cfg, err := Parse(configtest.Lines(
		"environment: test",
		"upstreams:",
		"  a_unset: {base_url: http://127.0.0.1:1, credential: {env: UNSET_TOKEN}}",
		"  b_set: {base_url: http://127.0.0.1:2, credential: {env: SET_TOKEN}}",
		"  c_file: {base_url: http://127.0.0.1:3, credential: {file: "+readable+"}}",
		"  d_nofile: {base_url: http://127.0.0.1:4, credential: {file: "+missing+"}}",
		"  e_none: {base_url: http://127.0.0.1:5}",
		"resources:",
		"  items:",
		"    upstream: a_unset",
		"    list: {path: /items}",
		"    pagination: {dialect: offset}",
		"    id_field: id",
		"    fields: {id: {type: string}}",
	))
	if err != nil {
		t.Fatal(err)
	}
	lines := cfg.Summary(func(k string) string {
		if k == "SET_TOKEN" {
			return secret
		}
		return ""
	})
	want := []string{
		"upstream a_unset: http://127.0.0.1:1, credential from $UNSET_TOKEN (NOT SET)",
		"upstream b_set: http://127.0.0.1:2, credential from $SET_TOKEN (set)",
		"upstream c_file: http://127.0.0.1:3, credential from file " + readable + " (readable)",
		"upstream d_nofile: http://127.0.0.1:4, credential from file " + missing + " (NOT READABLE)",
		"upstream e_none: http://127.0.0.1:5, no credential",
		"resource items: GET /items via a_unset, dialect offset (consistency none), 1 fields, 0 filters",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("Summary() =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range lines {
		if strings.Contains(l, secret) {
			t.Errorf("summary line %q contains a credential", l)
		}
	}
}

// TestParseConfig_ApprovalAndCompensationPoliciesAreChecked: a policy that
// could never apply as written is an error at load time, not a silent
// "no approval needed" at commit time.
func TestParseConfig_ApprovalAndCompensationPoliciesAreChecked(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines,
		"      state: {type: string, enum: [active, archived]}", // 13
		"    version_field: state",                              // 14
		"    review_groups: [state]",                            // 15
		"actions:",                                              // 16
		"  archive:",                                            // 17
		"    resource: items",                                   // 18
		"    request: {method: PATCH, path: \"/items/{{id}}\"}", // 19
		"    conditional: if_match",                             // 20
		"    effect: [{field: state, to: archived}]",            // 21
		"    compensation: unarchive",                           // 22
		"    approval:",                                         // 23
		"      mode: sometimes",                                 // 24
		"      above_targets: -1",                               // 25
		"      unknown_category: [state, region]",               // 26
	)
	checkErrors(t, parseErrors(t, configtest.Lines(lines...)), []wantErr{
		{22, "actions.archive.compensation", `no action named "unarchive"`},
		{24, "actions.archive.approval.mode", "mode must be none, client or operator"},
		{25, "actions.archive.approval.above_targets", "above_targets must be 0 (off) or more"},
		{26, "actions.archive.approval.unknown_category.1", `"region" is not one of the resource's review_groups`},
	})
}

// TestParseConfig_PrincipalRestrictionsNameSomeone: a principals or
// approvers restriction with no group and no scope would let nobody
// through; it is an error at load time, with its line.
func TestParseConfig_PrincipalRestrictionsNameSomeone(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines,
		"      state: {type: string, enum: [active, archived]}", // 13
		"    version_field: state",                              // 14
		"actions:",                                              // 15
		"  archive:",                                            // 16
		"    resource: items",                                   // 17
		"    request: {method: PATCH, path: \"/items/{{id}}\"}", // 18
		"    conditional: if_match",                             // 19
		"    effect: [{field: state, to: archived}]",            // 20
		"    principals: {groups: []}",                          // 21
		"    approval:",                                         // 22
		"      mode: operator",                                  // 23
		"      four_eyes: true",                                 // 24
		"      approvers: {groups: [leads, \"\"]}",              // 25
	)
	checkErrors(t, parseErrors(t, configtest.Lines(lines...)), []wantErr{
		{21, "actions.archive.principals", "name at least one group or scope"},
		{25, "actions.archive.approval.approvers", "a group or scope cannot be empty"},
	})
	valid := append(append([]string(nil), lines[:20]...),
		"    principals: {scopes: [billing:write]}",
		"    approval: {mode: operator, four_eyes: true, approvers: {groups: [leads]}}")
	cfg, err := Parse(configtest.Lines(valid...))
	if err != nil {
		t.Fatalf("a valid restriction: %v", err)
	}
	a := cfg.Actions["archive"]
	if a.Principals == nil || a.Principals.Scopes[0] != "billing:write" || !a.Approval.FourEyes || a.Approval.Approvers.Groups[0] != "leads" {
		t.Fatalf("parsed %+v %+v", a.Principals, a.Approval)
	}
}

func TestParseConfig_ActionTemplatesNameOnlyWhatHasAValue(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines,
		"      owner: {type: string, nullable: true}",   // 13
		"    version_field: etag",                       // 14
		"actions:",                                      // 15
		"  assign:",                                     // 16
		"    resource: items",                           // 17
		"    request:",                                  // 18
		"      method: PUT",                             // 19
		"      path: \"/items/{{id}}/{{ids}}\"",         // 20
		"      headers: {X-Auth: \"{{secret.token}}\"}", // 21
		"      body: {owner: \"{{params.owner}}\", note: \"{{params.nosuch}}\", was: \"{{before.colour}}\", x: \"{{nope}}\"}", // 22
		"    params: {type: object, required: [owner], properties: {owner: {type: string}}}",                                  // 23
		"    conditional: if_match",                              // 24
		"    effect: [{field: owner, to: \"{{params.owner}}\"}]", // 25
		"    max_attempts: 20",                                   // 26
		"    reconcile: {rereads: -1}",                           // 27
	)
	checkErrors(t, parseErrors(t, configtest.Lines(lines...)), []wantErr{
		{20, "actions.assign.request.path", "{{ids}}: {{targets}} and {{ids}} are a bulk body's list of targets"},
		{21, "actions.assign.request.headers.X-Auth", "{{secret.token}}: templates cannot read secrets"},
		{22, "actions.assign.request.body.note", "{{params.nosuch}}: params holds only the properties the action's params require: owner"},
		{22, "actions.assign.request.body.was", "{{before.colour}}: before holds only the fields the effect changes: owner"},
		{22, "actions.assign.request.body.x", "{{nope}}: unknown template reference"},
		{24, "actions.assign.conditional", `version_field "etag" is not among its declared fields`},
		{26, "actions.assign.max_attempts", "between 1 and 10"},
		{27, "actions.assign.reconcile", "rereads is between 1 and 50"},
	})
}
