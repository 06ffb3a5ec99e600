package config

import (
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

// wikiLines is the minimal configuration with list (line 8), pagination
// (line 9) and any extra lines after line 12.
func wikiLines(list, pagination string, extra ...string) []byte {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines[7], lines[8] = "    list: "+list, "    pagination: "+pagination
	return configtest.Lines(append(lines, extra...)...)
}

// TestParseConfig_PathQueriesAreCheckedWithLines: a query in a get or
// write path is split and encoded (MediaWiki's /api.php?action=…); one in
// list.path is refused for list.params, and one that does not parse is
// named with its line.
func TestParseConfig_PathQueriesAreCheckedWithLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml []byte
		want []wantErr
	}{
		{"a query in list.path", wikiLines("{path: \"/api.php?action=query&list=allpages\"}", "{dialect: link}"),
			[]wantErr{{8, "resources.items.list.path", "a list's query parameters go in list.params"}}},
		{"batch_complete on another dialect", wikiLines("{path: /items}", "{dialect: cursor, next_cursor: next, batch_complete: batchcomplete}"),
			[]wantErr{{9, "resources.items.pagination.batch_complete", "the cursor dialect does not read batch_complete; continue_object reads it"}}},
		{"empty_without_items on another dialect", wikiLines("{path: /items}", "{dialect: link, empty_without_items: true}"),
			[]wantErr{{9, "resources.items.pagination.empty_without_items", "the link dialect does not read empty_without_items; continue_object reads it"}}},
		{"a cursor parameter on the continuation object", wikiLines("{path: /api.php}", "{dialect: continue_object, cursor_param: apcontinue}"),
			[]wantErr{{9, "resources.items.pagination.cursor_param", "the continue_object dialect does not read cursor_param; cursor, graphql and bookmark read it"}}},
		{"a snapshot the object does not carry", wikiLines("{path: /api.php}", "{dialect: continue_object, consistency: snapshot}"),
			[]wantErr{{9, "resources.items.pagination.consistency", "only the continue dialect"}}},
		{"an unknown key beside it", wikiLines("{path: /api.php}", "{dialect: continue_object, batch_completed: batchcomplete}"),
			[]wantErr{{9, "resources.items.pagination.batch_completed", "unknown key"}}},
		{"a search without a parameter", wikiLines("{path: /api.php}", "{dialect: link}", "    filters:", "      q: {search: true}"),
			[]wantErr{{14, "resources.items.filters.q.param", "a search is sent upstream: set param"}}},
		{"a search that compares a field", wikiLines("{path: /api.php}", "{dialect: link}", "    filters:", "      q: {param: srsearch, search: true, field: id, multi: comma}"),
			[]wantErr{{14, "resources.items.filters.q.field", "a search matches what the upstream judges"}, {14, "resources.items.filters.q.multi", "a search matches what the upstream judges"}}},
		{"a get query that does not parse", wikiLines("{path: /api.php}", "{dialect: link}", `    get: {path: "/api.php?action=query&pageids=%zz{{id}}"}`),
			[]wantErr{{13, "resources.items.get.path", `the value of query parameter "pageids" does not parse`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, tc.yaml), tc.want)
		})
	}
	if _, err := Parse(wikiLines("{path: /api.php, params: {action: query, list: allpages}}", "{dialect: link}",
		`    get: {path: "/api.php?action=query&prop=info&pageids={{id}}", item: query.pages.0, missing: missing}`)); err != nil {
		t.Errorf("a get path with a query: %v", err)
	}
}

func TestParseConfig_MediaWikiListsParse(t *testing.T) {
	for name, y := range map[string][]byte{
		"allpages": wikiLines("{path: /api.php, params: {action: query, list: allpages, format: json, formatversion: \"2\"}, items: query.allpages}",
			"{dialect: continue_object, page_size_param: aplimit}"),
		"generator": wikiLines("{path: /api.php, params: {action: query, generator: categorymembers, gcmtitle: \"Category:X\", prop: categories, cllimit: max}, items: query.pages}",
			"{dialect: continue_object, page_size_param: gcmlimit, batch_complete: batchcomplete, empty_without_items: true}"),
	} {
		cfg, err := Parse(y)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p := ResolvePagination(cfg.Resources["items"].Pagination); p.ContinuePath != "continue" || p.Consistency != ConsistencyKeyset {
			t.Errorf("%s: resolved to continue_path %q, consistency %q", name, p.ContinuePath, p.Consistency)
		}
	}
}

func TestParseConfig_SessionCredentialsAreCheckedWithLines(t *testing.T) {
	// Lines 5-7 are the credential block.
	cred := func(session string) []byte {
		return configtest.WithCredential("    credential:\n      session:\n        " + session)
	}
	for _, tc := range []struct {
		name string
		yaml []byte
		want []wantErr
	}{
		{"no steps", cred("{secrets: {password: {env: P}}}"),
			[]wantErr{{6, "upstreams.api.credential.session.steps", "required: the login's requests"}}},
		{"a reference to nothing", cred(`{steps: [{name: login, method: POST, path: /api.php, form: {lgpassword: "{{secrets.password}}", lgtoken: "{{token.x}}"}}]}`),
			[]wantErr{{7, "upstreams.api.credential.session.steps.0.form.lgpassword", "{{secrets.password}} names no secret"}, {7, "upstreams.api.credential.session.steps.0.form.lgtoken", "{{token.x}} names no secret"}}},
		{"a secret written inline", cred(`{secrets: {password: hunter2}, steps: [{name: login, method: GET, path: /login}]}`),
			[]wantErr{{7, "upstreams.api.credential.session.secrets.password", "a secret is never written in the configuration"}}},
		{"a CSRF token sent nowhere", cred(`{steps: [{name: login, method: GET, path: /login}], csrf: {method: GET, path: /t, capture: {token: t}}}`),
			[]wantErr{{7, "upstreams.api.credential.session.csrf", "set one of csrf_field"}}},
		{"a body sent by GET", cred(`{steps: [{name: login, method: GET, path: /login, form: {a: b}}]}`),
			[]wantErr{{7, "upstreams.api.credential.session.steps.0.method", "a body is sent by POST"}}},
		{"an unknown key", cred(`{steps: [{name: login, method: GET, path: /login, captures: {t: x}}]}`),
			[]wantErr{{7, "upstreams.api.credential.session.steps.0.captures", "unknown key"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, tc.yaml), tc.want)
		})
	}
}
