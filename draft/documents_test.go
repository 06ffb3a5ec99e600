package draft

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
)

// issuesDoc is a small document with what real ones carry: two paths that
// differ only by their parameter's name (GitHub's attestations), reactions
// keyed +1 and -1, a nested key that snake-cases like a top-level one, and
// a GET by id that wraps the item in data.
const issuesDoc = `openapi: 3.0.3
info: {title: Issues, version: "1"}
servers: [{url: https://api.example.com}]
paths:
  /issues:
    get:
      operationId: listIssues
      parameters:
        - {name: page, in: query, schema: {type: integer}}
        - {name: per_page, in: query, schema: {type: integer}}
      responses:
        "200":
          description: ok
          headers: {Link: {schema: {type: string}}}
          content:
            application/json:
              schema: {type: array, items: {$ref: "#/components/schemas/Issue"}}
  /issues/{id}:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {data: {$ref: "#/components/schemas/Issue"}}}
  /attestations/{subject_digest}:
    get: {responses: {"200": {description: ok}}}
  /attestations/{attestation_id}:
    get: {responses: {"200": {description: ok}}}
components:
  schemas:
    Issue:
      type: object
      properties:
        id: {type: integer}
        repository_url: {type: string}
        repository: {type: object, properties: {url: {type: string}}}
        reactions:
          type: object
          properties:
            "+1": {type: integer}
            "-1": {type: integer}
            total_count: {type: integer}
`

// TestDraftFromOpenAPI_AFlawedDocumentStillDrafts: a document that does
// not validate (conflicting paths) yields a draft of what can be read,
// with the flaw named as a warning in the draft and beside it.
func TestDraftFromOpenAPI_AFlawedDocumentStillDrafts(t *testing.T) {
	d, err := FromOpenAPI([]byte(issuesDoc), Options{Environment: "test"})
	if err != nil {
		t.Fatalf("a document with a flaw is refused: %v", err)
	}
	// Each flaw is named, not only the first: the conflict and the two
	// path parameters the operations do not declare.
	if len(d.Warnings) != 3 || !strings.Contains(d.Warnings[0], `conflicting paths "/attestations/{subject_digest}" and "/attestations/{attestation_id}"`) ||
		!strings.Contains(string(d.YAML), "# 3 warnings about the document; the draft keeps what could be read:") {
		t.Errorf("warnings %v; the draft's header:\n%s", d.Warnings, head(d.YAML, 12))
	}
	for _, w := range d.Warnings {
		if !strings.Contains(string(d.YAML), "#   "+w+"\n") {
			t.Errorf("the draft does not list %q", w)
		}
	}
	if _, err := config.Parse(d.YAML); err != nil {
		t.Errorf("the draft does not parse: %v\n%s", err, d.YAML)
	}
}

// TestDraftFromOpenAPI_KeysThatSnakeCaseAlikeGetDistinctReadableNames:
// reactions.+1 and reactions.-1 are plus_1 and minus_1, and a nested key
// that reads like a top-level one is numbered, its path saying where it
// lives: the loader never meets the same key twice.
func TestDraftFromOpenAPI_KeysThatSnakeCaseAlikeGetDistinctReadableNames(t *testing.T) {
	d, err := FromOpenAPI([]byte(issuesDoc), Options{Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`reactions_plus_1: {path: "reactions.+1", type: integer}`,
		`reactions_minus_1: {path: reactions.-1, type: integer}`,
		`repository_url: {type: string}`,
		`repository_url_2: {path: repository.url, type: string}`,
	} {
		if !strings.Contains(string(d.YAML), want) {
			t.Errorf("the draft lacks %q:\n%s", want, d.YAML)
		}
	}
}

// TestDraftFromOpenAPI_GetByIDInAnEnvelopeDraftsGetItem: an answer that
// wraps the item ({data: {...}}) drafts get.item, so that a re-read reads
// the item, not the envelope.
func TestDraftFromOpenAPI_GetByIDInAnEnvelopeDraftsGetItem(t *testing.T) {
	d, err := FromOpenAPI([]byte(issuesDoc), Options{Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(d.YAML), `get: {path: "/issues/{{id}}", item: data}`) {
		t.Errorf("get.item is not drafted:\n%s", d.YAML)
	}
}

// TestDraftFromOpenAPI_AnItemIsNotAList: GET /me answering {data: {id,
// tags: [...]}} is one item whose tags are an array, not a list resource.
func TestDraftFromOpenAPI_AnItemIsNotAList(t *testing.T) {
	doc := strings.Replace(issuesDoc, "  /attestations/{subject_digest}:", `  /me:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  data: {type: object, properties: {id: {type: string}, tags: {type: array, items: {type: string}}}}
  /attestations/{subject_digest}:`, 1)
	d, err := FromOpenAPI([]byte(doc), Options{Environment: "test", Resources: []string{"me"}})
	if err == nil {
		t.Fatalf("GET /me drafted a list resource:\n%s", d.YAML)
	}
}

// swaggerDoc is a Swagger 2.0 document.
const swaggerDoc = `swagger: "2.0"
info: {title: Pets, version: "1"}
host: pets.example.com
basePath: /v1
schemes: [https]
paths:
  /pets:
    get:
      operationId: listPets
      parameters:
        - {name: limit, in: query, type: integer, maximum: 50}
        - {name: offset, in: query, type: integer}
      responses:
        "200":
          description: ok
          schema:
            type: object
            properties:
              total: {type: integer}
              items: {type: array, items: {$ref: "#/definitions/Pet"}}
definitions:
  Pet:
    type: object
    properties:
      id: {type: string}
      status: {type: string, enum: [available, sold]}
`

// TestDraftFromOpenAPI_Swagger2IsConvertedAndSaysSo: a Swagger 2.0
// document drafts through its conversion to 3.0, and the draft says it
// was converted.
func TestDraftFromOpenAPI_Swagger2IsConvertedAndSaysSo(t *testing.T) {
	d, err := FromOpenAPI([]byte(swaggerDoc), Options{Environment: "test"})
	if err != nil {
		t.Fatalf("a Swagger 2.0 document is refused: %v", err)
	}
	for _, want := range []string{"Swagger 2.0 document, converted", `base_url: "https://pets.example.com/v1"`, "dialect: offset", "total: total", "items: items"} {
		if !strings.Contains(string(d.YAML), want) {
			t.Errorf("the draft lacks %q:\n%s", want, d.YAML)
		}
	}
	if _, err := config.Parse(d.YAML); err != nil {
		t.Errorf("the draft does not parse: %v", err)
	}
}

// TestDraftFromOpenAPI_ExternalRefsResolveNextToTheDocument: $refs to
// other files resolve against the document's location; a $ref to a URL is
// refused naming it unless the network is allowed.
func TestDraftFromOpenAPI_ExternalRefsResolveNextToTheDocument(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	doc := strings.Replace(issuesDoc, `$ref: "#/components/schemas/Issue"}}
  /issues/{id}:`, `$ref: "schemas/issue.yaml"}}
  /issues/{id}:`, 1)
	write("openapi.yaml", doc)
	write("schemas/issue.yaml", "type: object\nproperties:\n  id: {type: integer}\n  title: {type: string}\n  state: {$ref: state.yaml}\n")
	write("schemas/state.yaml", "type: string\nenum: [open, closed]\n")
	b, _ := os.ReadFile(filepath.Join(dir, "openapi.yaml"))
	d, err := FromOpenAPI(b, Options{Environment: "test", Location: filepath.Join(dir, "openapi.yaml")})
	if err != nil {
		t.Fatalf("external refs: %v", err)
	}
	if !strings.Contains(string(d.YAML), `state: {type: string, enum: [open, closed]}`) {
		t.Errorf("the field behind two files is not drafted:\n%s", d.YAML)
	}
	// Read without its location, the document still drafts: the $ref is
	// a warning naming it, and what it named is left out.
	if d, err := FromOpenAPI(b, Options{Environment: "test"}); err != nil || !containsPart(d.Warnings, `$ref "schemas/issue.yaml" names another file, and the document was given without a location`) {
		t.Errorf("a document read without its location: %v", err)
	}

	var served int
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
		_, _ = w.Write([]byte("type: object\nproperties:\n  id: {type: integer}\n  title: {type: string}\n"))
	}))
	defer api.Close()
	remote := strings.Replace(doc, `"schemas/issue.yaml"`, `"`+api.URL+`/issue.yaml"`, 1)
	_, err = FromOpenAPI([]byte(remote), Options{Environment: "test", Location: filepath.Join(dir, "openapi.yaml")})
	if !errors.Is(err, ErrRemoteRef) || !strings.Contains(err.Error(), api.URL) || served != 0 {
		t.Errorf("a $ref to a URL without --remote-refs: %v (fetched %d times)", err, served)
	}
	d, err = FromOpenAPI([]byte(remote), Options{Environment: "test", Location: filepath.Join(dir, "openapi.yaml"), RemoteRefs: true})
	if err != nil || served == 0 || !strings.Contains(string(d.YAML), "title: {type: string}") {
		t.Errorf("a $ref to a URL with --remote-refs: %v (fetched %d times)", err, served)
	}
}

func head(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
