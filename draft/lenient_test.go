package draft

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
)

// thingsDoc is a small document whose list operation is broken in one
// place at a time below.
const thingsDoc = `openapi: 3.0.3
info: {title: Things, version: "1"}
servers: [{url: https://api.example.com}]
paths:
  /things:
    get:
      operationId: listThings
      parameters:
        - {name: limit, in: query, schema: {type: integer, maximum: 50}}
        - {name: offset, in: query, schema: {type: integer}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  total: {type: integer}
                  items: {type: array, items: {$ref: "#/components/schemas/Thing"}}
components:
  requestBodies:
    ThingList:
      description: a list of things
      content:
        application/json:
          schema:
            type: object
            properties:
              total: {type: integer}
              items: {type: array, items: {$ref: "#/components/schemas/Thing"}}
  schemas:
    Thing:
      type: object
      properties:
        id: {type: string}
        status: {type: string, enum: [on, off]}
`

// TestDraftFromOpenAPI_ALocalFlawIsAWarningNamingItsPlace: each flaw
// that once stopped a real document (a $ref where text belongs, a tuple
// items, a response $ref naming a request body, JSON Schema draft 3's
// required: true, a dangling $ref, a part kin-openapi cannot read) now
// drafts: the flaw is a warning naming where it is, and the draft parses.
func TestDraftFromOpenAPI_ALocalFlawIsAWarningNamingItsPlace(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, warning string
		still                   string // what the draft still holds
	}{
		{"a $ref where a description belongs", "operationId: listThings", "operationId: listThings\n      description: {$ref: \"#/components/schemas/Thing\"}",
			"paths./things.get.description: a $ref where the description's text belongs", "dialect: offset"},
		{"a tuple items", `items: {type: array, items: {$ref: "#/components/schemas/Thing"}}
components:`, `items: {type: array, items: [{$ref: "#/components/schemas/Thing"}]}
components:`, "items is an array of one schema", "status: {type: string"},
		{"a response $ref naming a request body", `"200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  total: {type: integer}
                  items: {type: array, items: {$ref: "#/components/schemas/Thing"}}`, `"200": {$ref: "#/components/requestBodies/ThingList"}`,
			"paths./things.get.responses.200: a response's $ref names a request body", "status: {type: string"},
		{"required: true inside a schema", "id: {type: string}", "id: {type: string, required: true}",
			"components.schemas.Thing.properties.id.required: required: true inside a schema", "id_field: id"},
		{"a dangling $ref", `items: {type: array, items: {$ref: "#/components/schemas/Thing"}}
components:`, `items: {type: array, items: {$ref: "#/components/schemas/Gone"}}
components:`, `$ref "#/components/schemas/Gone" names nothing in the document`, "dialect: offset"},
		{"a part kin-openapi cannot read", "operationId: listThings", "operationId: listThings\n      callbacks: {onEvent: 5}",
			"paths./things: cannot be read", "no list operation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(thingsDoc, tc.old, tc.new, 1)
			if doc == thingsDoc {
				t.Fatal("the flaw was not written into the document")
			}
			if tc.name == "a part kin-openapi cannot read" {
				// A second list keeps the document draftable.
				doc = strings.Replace(doc, "components:\n  requestBodies:", `  /others:
    get:
      parameters: [{name: page, in: query, schema: {type: integer}}, {name: per_page, in: query, schema: {type: integer}}]
      responses: {"200": {description: ok, content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Thing"}}}}}}
components:
  requestBodies:`, 1)
				tc.still = "/others"
			}
			d, err := FromOpenAPI([]byte(doc), Options{Environment: "test"})
			if err != nil {
				t.Fatalf("a document with %s is refused: %v", tc.name, err)
			}
			if !containsPart(d.Warnings, tc.warning) {
				t.Errorf("no warning names %q: %q", tc.warning, d.Warnings)
			}
			if !strings.Contains(string(d.YAML), tc.still) {
				t.Errorf("the draft lacks %q:\n%s", tc.still, d.YAML)
			}
			if _, err := config.Parse(d.YAML); err != nil {
				t.Errorf("the draft does not parse: %v\n%s", err, d.YAML)
			}
		})
	}
}

func containsPart(list []string, part string) bool {
	for _, s := range list {
		if strings.Contains(s, part) {
			return true
		}
	}
	return false
}

// TestDraftFromOpenAPI_ASplitLayoutWithOperationRefsDrafts: a document
// laid out over many files, whose operations themselves are $refs to
// files (DigitalOcean's layout) whose own $refs are relative to them,
// drafts as if it were one file; a $ref to a file that is not there is a
// warning, and what it named is left out.
func TestDraftFromOpenAPI_ASplitLayoutWithOperationRefsDrafts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("openapi.yaml", `openapi: 3.0.0
info: {title: Droplets, version: "2"}
servers: [{url: https://api.example.com}]
paths:
  /v2/droplets:
    get: {$ref: "resources/droplets/droplets_list.yml"}
  /v2/droplets/{droplet_id}:
    get: {$ref: "resources/droplets/droplets_get.yml"}
    delete: {$ref: "resources/droplets/droplets_destroy.yml"}
`)
	write("resources/droplets/droplets_list.yml", `operationId: droplets_list
summary: List all droplets
parameters:
  - $ref: "../../shared/parameters.yml#/per_page"
  - $ref: "../../shared/parameters.yml#/page"
responses:
  "200":
    $ref: "responses/all_droplets.yml"
`)
	write("resources/droplets/responses/all_droplets.yml", `description: all droplets
content:
  application/json:
    schema:
      allOf:
        - type: object
          properties:
            droplets: {type: array, items: {$ref: "../models/droplet.yml"}}
        - $ref: "../../../shared/meta.yml"
`)
	write("resources/droplets/models/droplet.yml", `type: object
properties:
  id: {type: integer}
  name: {type: string}
  status: {type: string, enum: [new, active, off, archive]}
  region: {$ref: "../../regions/models/region.yml"}
`)
	write("shared/parameters.yml", `per_page: {name: per_page, in: query, schema: {type: integer, maximum: 200}}
page: {name: page, in: query, schema: {type: integer, minimum: 1}}
`)
	write("shared/meta.yml", `type: object
properties:
  meta: {type: object, properties: {total: {type: integer}}}
`)
	write("resources/droplets/droplets_get.yml", `operationId: droplets_get
responses:
  "200":
    description: one
    content:
      application/json:
        schema:
          type: object
          properties:
            droplet: {$ref: "models/droplet.yml"}
`)
	write("resources/droplets/droplets_destroy.yml", `operationId: droplets_destroy
responses: {"204": {description: gone}}
`)
	b, _ := os.ReadFile(filepath.Join(dir, "openapi.yaml"))
	d, err := FromOpenAPI(b, Options{Environment: "test", Location: filepath.Join(dir, "openapi.yaml")})
	if err != nil {
		t.Fatalf("a split layout is refused: %v", err)
	}
	y := string(d.YAML)
	for _, want := range []string{"droplets:", `path: /v2/droplets`, "dialect: page", `page_param: page`, "page_size: 100", "total: meta.total",
		`status: {type: string, enum: [new, active, "off", archive]}`, `get: {path: "/v2/droplets/{{id}}", item: droplet}`, "droplets_destroy:"} {
		if !strings.Contains(y, want) {
			t.Errorf("the draft lacks %q:\n%s", want, y)
		}
	}
	if !containsPart(d.Warnings, `"../../regions/models/region.yml" cannot be read (no file resources/regions/models/region.yml next to the document)`) {
		t.Errorf("the missing file is not named: %q", d.Warnings)
	}
	if _, err := config.Parse(d.YAML); err != nil {
		t.Errorf("the draft does not parse: %v", err)
	}
}
