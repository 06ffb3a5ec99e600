package probe

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/draft"
	"github.com/airlock-mcp/airlock/upstream"
)

// styleItems are the records every style server lists, in its own shape.
const styleItems = 23

func styleRecord(i int) map[string]any {
	return map[string]any{
		"id":      fmt.Sprintf("r%03d", i),
		"name":    fmt.Sprintf("record %d", i),
		"status":  []string{"active", "paused", "closed"}[i%3],
		"tags":    []any{i % 4, (i + 1) % 4},
		"created": fmt.Sprintf("2026-01-%02d 10:00:00", 1+i%28),
	}
}

// window answers the records from position from, at most size of them,
// and where the next page starts (-1: none).
func window(from, size int) ([]map[string]any, int) {
	size = max(size, 1)
	out := []map[string]any{}
	for i := from; i < min(from+size, styleItems); i++ {
		out = append(out, styleRecord(i))
	}
	if from+size >= styleItems {
		return out, -1
	}
	return out, from + size
}

func atoi(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// listStyle is a list answered the way one real API answers it.
type listStyle struct {
	name string
	// sample is the URL path and query init --sample is pointed at.
	sample  string
	handler func(base string) http.HandlerFunc
	// fixes are keys probe --fix must have written (the draft could not
	// know them from one page).
	fixes []string
}

var listStyles = []listStyle{
	{name: "cursor with has_more (Stripe)", sample: "/v1/customers?limit=5",
		handler: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				from := 0
				if after := q.Get("starting_after"); after != "" {
					from = atoi(strings.TrimPrefix(after, "r"), 0) + 1
				}
				items, next := window(from, atoi(q.Get("limit"), 10))
				writeJSON(w, 200, map[string]any{"object": "list", "url": "/v1/customers", "data": items, "has_more": next >= 0})
			}
		}},
	{name: "body next cursor (Slack)", sample: "/api/users.list?limit=5",
		handler: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				from := 0
				if c := q.Get("cursor"); c != "" {
					b, _ := base64.StdEncoding.DecodeString(c)
					from = atoi(strings.TrimPrefix(string(b), "user:"), 0)
				}
				items, next := window(from, atoi(q.Get("limit"), 10))
				cursor := ""
				if next >= 0 {
					cursor = base64.StdEncoding.EncodeToString([]byte("user:" + strconv.Itoa(next)))
				}
				writeJSON(w, 200, map[string]any{"ok": true, "members": items, "response_metadata": map[string]any{"next_cursor": cursor}})
			}
		}, fixes: []string{"pagination"}},
	{name: "next URL (Django REST Framework)", sample: "/api/accounts/?page=1&page_size=5",
		handler: func(base string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				size, page := atoi(q.Get("page_size"), 10), atoi(q.Get("page"), 1)
				items, next := window((page-1)*size, size)
				var nextURL any
				if next >= 0 {
					nextURL = fmt.Sprintf("%s/api/accounts/?page=%d&page_size=%d", base, page+1, size)
				}
				writeJSON(w, 200, map[string]any{"count": styleItems, "next": nextURL, "previous": nil, "results": items})
			}
		}},
	{name: "Link header (GitHub)", sample: "/repos?per_page=5&page=1",
		handler: func(base string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				size, page := atoi(q.Get("per_page"), 30), atoi(q.Get("page"), 1)
				items, next := window((page-1)*size, size)
				if next >= 0 {
					w.Header().Set("Link", fmt.Sprintf(`<%s/repos?per_page=%d&page=%d>; rel="next"`, base, size, page+1))
				}
				writeJSON(w, 200, items)
			}
		}},
	{name: "page with total pages and a size limit in a nested field (PocketBase)", sample: "/api/collections/posts/records?page=1&perPage=5",
		handler: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				size, page := atoi(q.Get("perPage"), 10), atoi(q.Get("page"), 1)
				if size > 20 {
					writeJSON(w, 400, map[string]any{"code": 400, "message": "Something went wrong while processing your request.",
						"data": map[string]any{"perPage": map[string]any{"code": "validation_max", "message": "Must be no greater than 20."}}})
					return
				}
				items, _ := window((page-1)*size, size)
				writeJSON(w, 200, map[string]any{"page": page, "perPage": size, "totalItems": styleItems, "totalPages": (styleItems + size - 1) / size, "items": items})
			}
		}, fixes: []string{"pagination.page_size"}},
	{name: "continue (Kubernetes)", sample: "/api/v1/namespaces/default/pods?limit=5",
		handler: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				from := atoi(q.Get("continue"), 0)
				items, next := window(from, atoi(q.Get("limit"), 500))
				var pods []any
				for _, it := range items {
					pods = append(pods, map[string]any{"metadata": map[string]any{"name": it["name"], "uid": it["id"], "resourceVersion": "7"}, "status": map[string]any{"phase": it["status"]}})
				}
				cont := ""
				if next >= 0 {
					cont = strconv.Itoa(next)
				}
				writeJSON(w, 200, map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "4242", "continue": cont}, "items": pods})
			}
		}, fixes: []string{"id_field"}},
	{name: "OData", sample: "/odata/People?$top=5&$count=true",
		handler: func(base string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				size := atoi(q.Get("$top"), 8)
				from := atoi(q.Get("$skiptoken"), 0)
				items, next := window(from, size)
				body := map[string]any{"@odata.context": base + "/odata/$metadata#People", "value": items}
				if q.Get("$count") == "true" {
					body["@odata.count"] = styleItems
				}
				if next >= 0 {
					nq := r.URL.Query()
					nq.Set("$skiptoken", strconv.Itoa(next))
					body["@odata.nextLink"] = base + "/odata/People?" + nq.Encode()
				}
				writeJSON(w, 200, body)
			}
		}},
	// CouchDB's _all_docs: the answer echoes its position as offset, but
	// the parameter is skip (offset is ignored), and total_rows counts
	// every row.
	{name: "offset and total_rows (CouchDB _all_docs)", sample: "/db/_all_docs?include_docs=true&limit=5",
		handler: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				skip := atoi(q.Get("skip"), 0)
				items, _ := window(skip, atoi(q.Get("limit"), 1000))
				rows := []any{}
				for _, it := range items {
					rows = append(rows, map[string]any{"id": it["id"], "key": it["id"], "value": map[string]any{"rev": "1-a"}, "doc": it})
				}
				writeJSON(w, 200, map[string]any{"total_rows": styleItems, "offset": skip, "rows": rows})
			}
		}, fixes: []string{"pagination"}},
	// SAP CAP (OData V4): $top caps the whole result, the server pages by
	// a relative @odata.nextLink, and @odata.count is the total.
	{name: "OData $top caps the result (SAP CAP)", sample: "/odata/v4/crm/Accounts?$top=5&$count=true",
		handler: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				top := atoi(q.Get("$top"), styleItems)
				from := atoi(q.Get("$skiptoken"), 0)
				items, _ := window(from, min(4, top-from))
				body := map[string]any{"@odata.context": "$metadata#Accounts", "value": items}
				if q.Get("$count") == "true" {
					body["@odata.count"] = styleItems
				}
				if next := from + len(items); next < min(top, styleItems) {
					nq := url.Values{"$count": {q.Get("$count")}, "$skiptoken": {strconv.Itoa(next)}}
					if q.Has("$top") {
						nq.Set("$top", q.Get("$top"))
					}
					body["@odata.nextLink"] = "Accounts?" + nq.Encode()
				}
				writeJSON(w, 200, body)
			}
		}, fixes: []string{"pagination"}},
	{name: "GraphQL connection", sample: "/graphql",
		handler: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				var req struct {
					Query     string         `json:"query"`
					Variables map[string]any `json:"variables"`
				}
				_ = json.Unmarshal(b, &req)
				if strings.Contains(req.Query, "__schema") {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(graphqlIntrospection))
					return
				}
				first, _ := req.Variables["first"].(float64)
				from := 0
				if after, _ := req.Variables["after"].(string); after != "" {
					from = atoi(after, 0)
				}
				items, next := window(from, int(first))
				var nodes []any
				for _, it := range items {
					nodes = append(nodes, map[string]any{"id": it["id"], "name": it["name"], "state": strings.ToUpper(it["status"].(string))})
				}
				end := ""
				if next >= 0 {
					end = strconv.Itoa(next)
				}
				writeJSON(w, 200, map[string]any{"data": map[string]any{"issues": map[string]any{"pageInfo": map[string]any{"hasNextPage": next >= 0, "endCursor": end}, "nodes": nodes}}})
			}
		}},
}

const graphqlIntrospection = `{"data": {"__schema": {"queryType": {"name": "Query"}, "types": [
 {"kind": "OBJECT", "name": "Query", "fields": [
  {"name": "issues", "args": [{"name": "first", "type": {"kind": "SCALAR", "name": "Int"}}, {"name": "after", "type": {"kind": "SCALAR", "name": "String"}}],
   "type": {"kind": "NON_NULL", "ofType": {"kind": "OBJECT", "name": "IssueConnection"}}}]},
 {"kind": "OBJECT", "name": "IssueConnection", "fields": [
  {"name": "nodes", "args": [], "type": {"kind": "LIST", "ofType": {"kind": "OBJECT", "name": "Issue"}}},
  {"name": "pageInfo", "args": [], "type": {"kind": "NON_NULL", "ofType": {"kind": "OBJECT", "name": "PageInfo"}}}]},
 {"kind": "OBJECT", "name": "Issue", "fields": [
  {"name": "id", "args": [], "type": {"kind": "NON_NULL", "ofType": {"kind": "SCALAR", "name": "ID"}}},
  {"name": "name", "args": [], "type": {"kind": "SCALAR", "name": "String"}},
  {"name": "state", "args": [], "type": {"kind": "ENUM", "name": "IssueState"}}]}]}}}`

// TestProbeFix_TurnsASampleDraftIntoAFileProbePasses: for each style of
// list answer real APIs use, init --sample drafts a file, probe --fix
// resolves what one page could not show (a cursor parameter, the page size
// the API accepts, where a nested id is) from the live API, and the file
// it writes parses and passes probe: nothing wrong, the end proven.
func TestProbeFix_TurnsASampleDraftIntoAFileProbePasses(t *testing.T) {
	for _, st := range listStyles {
		t.Run(st.name, func(t *testing.T) {
			mux := http.NewServeMux()
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			path, _, _ := strings.Cut(st.sample, "?")
			mux.Handle(path, st.handler(srv.URL))
			d, err := draft.FromSample(t.Context(), srv.URL+st.sample, draft.SampleOptions{Options: draft.Options{Environment: "test"}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Fix(t.Context(), d.YAML, FixOptions{MaxRequests: 60})
			if err != nil {
				t.Fatalf("probe --fix: %v\n%s", err, d.YAML)
			}
			if len(res.Left) > 0 {
				t.Fatalf("probe --fix left %q\ndraft:\n%s\nfixed:\n%s", res.Left, d.YAML, res.YAML)
			}
			for _, want := range st.fixes {
				found := false
				for _, f := range res.Fixed {
					found = found || f.Key == want
				}
				if !found {
					t.Errorf("probe --fix did not write %s: %+v", want, res.Fixed)
				}
			}
			for _, f := range res.Fixed {
				if !strings.Contains(string(res.YAML), "# probe --fix: ") || f.Evidence == "" {
					t.Errorf("%s was written without its evidence:\n%s", f.Key, res.YAML)
				}
			}
			cfg, err := config.Parse(res.YAML)
			if err != nil {
				t.Fatalf("the fixed file does not parse: %v\n%s", err, res.YAML)
			}
			rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
			if err != nil {
				t.Fatal(err)
			}
			names := rt.ResourceNames()
			if len(names) != 1 {
				t.Fatalf("resources %v", names)
			}
			rep := CheckAssumptions(t.Context(), rt.Resources[names[0]], Options{})
			if rep.Wrong() > 0 || checkNamed(rep, "pagination.end").Status != OK {
				t.Errorf("probe of the fixed file: %+v\n%s", rep.Checks, res.YAML)
			}
		})
	}
}

// TestProbeFix_ADialectTheDocumentLeftOpenIsProvenOnTheLiveAPI: a
// document whose page parameter is an unexplained string leaves the
// dialect a TODO; probe --fix reads the live answer (a next URL, Django
// REST Framework's), proves it by walking to the end, and writes it.
func TestProbeFix_ADialectTheDocumentLeftOpenIsProvenOnTheLiveAPI(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.Handle("/api/accounts/", listStyles[2].handler(srv.URL))
	doc := `openapi: 3.0.3
info: {title: Accounts, version: "1"}
paths:
  /api/accounts/:
    get:
      parameters:
        - {name: page, in: query, schema: {type: string}}
        - {name: page_size, in: query, schema: {type: integer}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  count: {type: integer}
                  next: {type: string}
                  results: {type: array, items: {type: object, properties: {id: {type: string}, name: {type: string}, tags: {type: array}}}}
`
	d, err := draft.FromOpenAPI([]byte(doc), draft.Options{Environment: "test", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.TODOs) != 1 || !strings.Contains(d.TODOs[0], "does not settle what its position parameter is") {
		t.Fatalf("the draft's TODOs: %q", d.TODOs)
	}
	res, err := Fix(t.Context(), d.YAML, FixOptions{MaxRequests: 60})
	if err != nil || len(res.Left) > 0 {
		t.Fatalf("probe --fix: %v, left %q\n%s", err, res.Left, res.YAML)
	}
	for _, want := range []string{"pagination: {dialect: next_url, next: next, total: count, page_size_param: page_size, page_size: 100}  # probe --fix: a walk at page size",
		"tags: {type: array, elements: integer}  # probe --fix: every element is integer"} {
		if !strings.Contains(string(res.YAML), want) {
			t.Errorf("the fixed file lacks %q:\n%s", want, res.YAML)
		}
	}
	cfg, err := config.Parse(res.YAML)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep := CheckAssumptions(t.Context(), rt.Resources["accounts"], Options{}); rep.Wrong() > 0 {
		t.Errorf("probe of the fixed file: %+v", rep.Checks)
	}
}

// TestProbeFix_SettlesTopFromTheLiveAPI: an OData document that declares
// $top drafts it as a TODO ($top caps the whole result in OData V4, and
// is a page size in Graph); on a service that reads it as a cap (SAP
// CAP), probe --fix finds that $top stops short of @odata.count and
// writes page_size_param: none, and the fixed file reads every record.
func TestProbeFix_SettlesTopFromTheLiveAPI(t *testing.T) {
	var cap listStyle
	for _, st := range listStyles {
		if strings.Contains(st.name, "SAP CAP") {
			cap = st
		}
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.Handle("/odata/v4/crm/Accounts", cap.handler(srv.URL))
	doc := `openapi: 3.0.3
info: {title: CRM, version: "1"}
paths:
  /odata/v4/crm/Accounts:
    get:
      parameters:
        - {name: $top, in: query, description: "Show only the first n items", schema: {type: integer, minimum: 0}}
        - {name: $skip, in: query, description: "Skip the first n items", schema: {type: integer, minimum: 0}}
        - {name: $count, in: query, description: "Include count of items", schema: {type: boolean}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  "@odata.count": {type: integer}
                  "@odata.nextLink": {type: string}
                  value: {type: array, items: {type: object, properties: {id: {type: string}, name: {type: string}}}}
`
	d, err := draft.FromOpenAPI([]byte(doc), draft.Options{Environment: "test", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.TODOs) != 1 || !strings.Contains(d.TODOs[0], "$top or none") {
		t.Fatalf("the draft's TODOs: %q\n%s", d.TODOs, d.YAML)
	}
	res, err := Fix(t.Context(), d.YAML, FixOptions{MaxRequests: 60})
	if err != nil || len(res.Left) > 0 {
		t.Fatalf("probe --fix: %v, left %q\n%s", err, res.Left, res.YAML)
	}
	if !strings.Contains(string(res.YAML), "page_size_param: none") {
		t.Errorf("the fixed file does not say page_size_param: none:\n%s", res.YAML)
	}
	cfg, err := config.Parse(res.YAML)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := CheckAssumptions(t.Context(), rt.Resources[rt.ResourceNames()[0]], Options{})
	if rep.Wrong() > 0 || checkNamed(rep, "pagination.end").Status != OK {
		t.Errorf("probe of the fixed file: %+v\n%s", rep.Checks, res.YAML)
	}
}
