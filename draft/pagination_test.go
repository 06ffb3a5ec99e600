package draft

import (
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
)

// listDoc is a document with one list operation whose query parameters
// and answer members a case fills in.
func listDoc(params, members string) string {
	return `openapi: 3.0.3
info: {title: Things, version: "1"}
servers: [{url: https://api.example.com}]
paths:
  /things:
    get:
      parameters:
` + params + `
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  data: {type: array, items: {type: object, properties: {id: {type: string}, name: {type: string}}}}
` + members + `
`
}

// TestDraftFromOpenAPI_APaginationParameterIsReadByItsSchemaAndWords: a
// parameter named like a page or an offset is a page or an offset only
// when its schema and description say so: a string the API returns is a
// cursor, a date is a filter, and what the document does not settle is a
// TODO on the dialect quoting it. A total the document bounds is never
// read as a count.
func TestDraftFromOpenAPI_APaginationParameterIsReadByItsSchemaAndWords(t *testing.T) {
	limit := "        - {name: limit, in: query, schema: {type: integer, maximum: 100}}\n"
	for _, tc := range []struct {
		name, params, members string
		want, never           []string
	}{
		{"a string page that is a cursor the answer names (Stripe's search)",
			limit + `        - {name: page, in: query, description: "A cursor for pagination across multiple pages of results. Use the next_page value returned in a previous response.", schema: {type: string}}`,
			`                  has_more: {type: boolean}
                  next_page: {type: string, nullable: true}
                  total_count: {type: integer, description: "The total number of objects that match the query, only accurate up to 10,000."}`,
			[]string{"dialect: cursor", "next_cursor: next_page", "cursor_param: page", "has_more: has_more"},
			[]string{"dialect: page", "total: total_count"}},
		{"a string offset token the answer does not declare (Asana)",
			limit + `        - {name: offset, in: query, description: "Offset token. An offset to the next page returned by the API.", schema: {type: string}}`, "",
			[]string{"dialect: cursor", "cursor_param: offset", `next_cursor: "TODO(where the answer holds the token to send as offset`},
			[]string{"dialect: offset"}},
		{"a start that is a moment, not a position",
			limit + `        - {name: start, in: query, description: "The start of the period of time to return, in ISO-8601.", schema: {type: string}}`,
			`                  total: {type: integer}`,
			[]string{`dialect: "TODO(the dialect`, "limit [integer]", "# not a position: start is a string"},
			[]string{"offset_param: start"}},
		{"a string page the document does not explain",
			limit + `        - {name: page, in: query, schema: {type: string}}`, `                  total: {type: integer}`,
			[]string{`dialect: "TODO(the dialect: the document does not settle what its position parameter is; the document: limit [integer]; page is a string`},
			[]string{"dialect: page"}},
		{"a numeric page with a bounded total",
			limit + `        - {name: page, in: query, schema: {type: integer}}`,
			`                  total: {type: integer, description: "An estimate of the number of matches."}`,
			[]string{"dialect: page", "total: none", "# total is not read as a count: the document bounds it"},
			[]string{"total: total"}},
		{"a page without a total says total: none, never a TODO",
			limit + `        - {name: page, in: query, schema: {type: integer}}`, "",
			[]string{"dialect: page", "total: none"}, []string{"TODO("}},
		// Twilio's v2 APIs: the next page's URL under meta, a token
		// parameter beside it.
		{"a next URL at a path no list names (Twilio's meta.next_page_url)",
			`        - {name: PageSize, in: query, description: "How many resources to return in each list page.", schema: {type: integer, maximum: 1000}}
        - {name: PageToken, in: query, description: "The page token. This is provided by the API.", schema: {type: string}}`,
			`                  meta:
                    type: object
                    properties:
                      page: {type: integer}
                      next_page_url: {type: string, format: uri, nullable: true}
                      previous_page_url: {type: string, format: uri, nullable: true}`,
			[]string{"dialect: next_url", "next: meta.next_page_url", "page_size_param: PageSize"},
			[]string{"dialect: cursor", "TODO("}},
		// Okta: the cursor is read from the Link header's next relation.
		{"a parameter taken from the next link relation (Okta's after)",
			limit + `        - {name: after, in: query, description: "The cursor to use for pagination. It is an opaque string that specifies your current location in the list and is obtained from the Link response header. See Pagination.", schema: {type: string}}`, "",
			[]string{"dialect: link", "page_size_param: limit"},
			[]string{"dialect: cursor", "cursor_param: after"}},
		{"a next URL in the answer",
			limit, `                  next_page_uri: {type: string, nullable: true}`,
			[]string{"dialect: next_url", "next: next_page_uri", "page_size_param: limit"}, nil},
		{"OData",
			`        - {name: $top, in: query, schema: {type: integer}}
        - {name: $skip, in: query, schema: {type: integer}}
        - {name: $count, in: query, schema: {type: boolean}}`,
			`                  "@odata.count": {type: integer}
                  "@odata.nextLink": {type: string}`,
			// $top caps the whole result in OData V4 and is a page size in
			// Graph: a TODO, never a fact.
			[]string{"dialect: next_url", `next: "@odata.nextLink"`, `page_size_param: "TODO($top or none: in OData V4 $top caps the whole result`, `total: "@odata.count"`, `params: {"$count": "true"}`},
			[]string{"offset_param", `page_size_param: "$top"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := FromOpenAPI([]byte(listDoc(tc.params, tc.members)), Options{Environment: "test"})
			if err != nil {
				t.Fatal(err)
			}
			y := string(d.YAML)
			for _, w := range tc.want {
				if !strings.Contains(y, w) {
					t.Errorf("the draft lacks %q:\n%s", w, y)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(y, n) {
					t.Errorf("the draft holds %q:\n%s", n, y)
				}
			}
			if _, err := config.Parse(d.YAML); err != nil && len(d.TODOs) == 0 {
				t.Errorf("the draft does not parse: %v", err)
			}
		})
	}
}

// TestDraftFromOpenAPI_ARequirementIsDraftedWholeOrNotAtAll: a
// requirement of two headers together (Cloudflare's X-Auth-Email and
// X-Auth-Key) is never drafted half: the alternative one secret satisfies
// is, and without one the credential is a TODO naming both.
func TestDraftFromOpenAPI_ARequirementIsDraftedWholeOrNotAtAll(t *testing.T) {
	doc := listDoc("        - {name: page, in: query, schema: {type: integer}}\n        - {name: per_page, in: query, schema: {type: integer}}", "") + `components:
  securitySchemes:
    api_email: {type: apiKey, in: header, name: X-Auth-Email}
    api_key: {type: apiKey, in: header, name: X-Auth-Key}
    api_token: {type: http, scheme: bearer}
security:
  - {api_email: [], api_key: []}
  - {api_token: []}
`
	d, err := FromOpenAPI([]byte(doc), Options{Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	y := string(d.YAML)
	if !strings.Contains(y, `security scheme api_token: a bearer token; chosen over api_email + api_key, which need several secrets together`) || strings.Contains(y, "X-Auth") {
		t.Errorf("the bearer alternative is not drafted:\n%s", y)
	}
	doc = strings.Replace(doc, "  - {api_token: []}\n", "", 1)
	d, err = FromOpenAPI([]byte(doc), Options{Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if y := string(d.YAML); !strings.Contains(y, `env: "TODO(the credential: the document's security requires api_email + api_key together, and airlock sends one secret`) || strings.Contains(y, "header: X-Auth") {
		t.Errorf("half a requirement is drafted:\n%s", y)
	}
}

// TestDraftFromOpenAPI_ADraftAlwaysParses: a property named "", a key
// that YAML reads as a boolean, a write-only field named id and a pattern
// Go cannot compile still give a draft that parses, whose id is never a
// sensitive field.
func TestDraftFromOpenAPI_ADraftAlwaysParses(t *testing.T) {
	doc := `openapi: 3.0.3
info: {title: Odd, version: "1"}
servers: [{url: https://api.example.com}]
paths:
  /odds:
    get:
      parameters: [{name: page, in: query, schema: {type: integer}}, {name: per_page, in: query, schema: {type: integer}}]
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: array
                items:
                  type: object
                  properties:
                    "": {type: string}
                    "on": {type: boolean}
                    "@": {type: string}
                    id: {type: string, writeOnly: true}
                    uid: {type: string}
  /odds/{uid}:
    get:
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object, properties: {uid: {type: string}}}}}}}
    patch:
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                "on": {type: boolean}
                code: {type: string, pattern: "^(?!0000)[0-9]{4}$"}
      responses: {"200": {description: ok}}
`
	d, err := FromOpenAPI([]byte(doc), Options{Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	y := string(d.YAML)
	if _, err := config.Parse(d.YAML); err != nil {
		t.Fatalf("the draft does not parse: %v\n%s", err, y)
	}
	for _, want := range []string{"id_field: uid", `"on": {type: boolean}`, `field: {path: "@", type: string}`, `code's pattern "^(?!0000)[0-9]{4}$" is left out`} {
		if !strings.Contains(y, want) {
			t.Errorf("the draft lacks %q:\n%s", want, y)
		}
	}
}

// TestDraftFromOpenAPI_ODataItemPathsAndETags: an OData service's item
// path Entity('{key}') is the resource's get and write path, with the
// key as the id, and @odata.etag its version for If-Match.
func TestDraftFromOpenAPI_ODataItemPathsAndETags(t *testing.T) {
	doc := `openapi: 3.0.1
info: {title: TripPin, version: "1"}
servers: [{url: https://services.example.com/TripPin}]
paths:
  /People:
    get:
      parameters:
        - {name: $top, in: query, schema: {type: integer, minimum: 0}}
        - {name: $skip, in: query, schema: {type: integer, minimum: 0}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  value: {type: array, items: {$ref: "#/components/schemas/Person"}}
                  "@odata.nextLink": {type: string}
  /People('{UserName}'):
    get:
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Person"}}}}}
    patch:
      parameters: [{name: If-Match, in: header, schema: {type: string}}]
      requestBody: {content: {application/json: {schema: {type: object, properties: {FirstName: {type: string}}}}}}
      responses: {"204": {description: ok}}
components:
  schemas:
    Person:
      type: object
      properties:
        UserName: {type: string}
        FirstName: {type: string}
        "@odata.etag": {type: string}
`
	d, err := FromOpenAPI([]byte(doc), Options{Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	y := string(d.YAML)
	for _, want := range []string{`pagination: {dialect: next_url, next: "@odata.nextLink", page_size_param: "TODO($top or none`, `id_field: user_name`,
		`get: {path: "/People('{{id}}')"`, `version_field: odata_etag`, `path: "/People('{{id}}')"`, "conditional: if_match", `headers: {If-Match: "{{version}}"}`} {
		if !strings.Contains(y, want) {
			t.Errorf("the draft lacks %q:\n%s", want, y)
		}
	}
	if len(d.TODOs) != 1 || !strings.Contains(d.TODOs[0], "$top or none") {
		t.Errorf("TODOs %q; want the one of $top", d.TODOs)
	}
}
