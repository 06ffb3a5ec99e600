package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/strictyaml"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"go.yaml.in/yaml/v3"
)

// compileSchema compiles the generated schema, or the definition def of
// it ("" for the whole configuration).
func compileSchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(URL, bytes.NewReader(JSON())); err != nil {
		t.Fatal(err)
	}
	url := URL
	if def != "" {
		url += "#/$defs/" + def
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// asJSON is a YAML document as an editor's schema validator sees it:
// JSON values, maps keyed by string, timestamps as their text.
func asJSON(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case time.Time:
			return x.Format(time.RFC3339Nano)
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	return walk(strictyaml.JSONValue(v))
}

// TestSchema_IsAValidDraft2020Schema: the generated document is itself
// valid against the 2020-12 meta-schema, and compiles.
func TestSchema_IsAValidDraft2020Schema(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	meta, err := c.Compile("https://json-schema.org/draft/2020-12/schema")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	if err := meta.Validate(doc); err != nil {
		t.Fatalf("the schema is not a valid 2020-12 schema: %#v", err)
	}
	compileSchema(t, "")
	if s := Document(); s["$schema"] != "https://json-schema.org/draft/2020-12/schema" || s["$id"] != URL {
		t.Errorf("$schema %v, $id %v", s["$schema"], s["$id"])
	}
}

// shippedConfigs are the whole configurations airlock ships: the demo
// (airlock demo, serve --demo, the packaging's examples), and the test
// upstream's configurations for every dialect it speaks.
func shippedConfigs() map[string][]byte {
	const url = "http://127.0.0.1:1"
	out := map[string][]byte{
		"fixtures.DemoConfig":       fixtures.DemoConfig(url),
		"fixtures.GraphQLLabConfig": fixtures.GraphQLLabConfig(url),
		"fixtures.SnowflakesConfig": fixtures.SnowflakesConfig(url),
		"fixtures.WriteLabConfig":   fixtures.WriteLabConfig(url, 5*time.Second),
	}
	datasets := []string{fixtures.DatasetServiceAccounts, fixtures.DatasetSubscriptions, fixtures.DatasetProjects}
	for _, d := range fixtures.AllDialects {
		var rs []fixtures.Resource
		for _, ds := range datasets {
			rs = append(rs, fixtures.Resource{Name: ds, Dataset: ds, Dialect: d})
		}
		out["fixtures.Config/"+d] = fixtures.Config(url, rs...)
	}
	for _, d := range append(slices.Clone(fixtures.AllDialects), fixtures.DialectNextURL, fixtures.DialectGraphQL, fixtures.DialectPostCursor,
		fixtures.DialectSearchAfter, fixtures.DialectContinueObject, fixtures.DialectKeyRange) {
		out["fixtures.FaultListConfig/"+d] = fixtures.FaultListConfig(url, d, 10, "", "")
	}
	return out
}

// TestSchema_AcceptsEveryShippedConfig: every configuration airlock ships
// is valid against the schema (and is one check accepts), so an editor
// never marks a working configuration as wrong.
func TestSchema_AcceptsEveryShippedConfig(t *testing.T) {
	s := compileSchema(t, "")
	for name, doc := range shippedConfigs() {
		if _, err := config.Parse(doc); err != nil {
			t.Errorf("%s: check refuses it: %v", name, err)
			continue
		}
		if err := s.Validate(asJSON(t, doc)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", name, err)
		}
	}
}

var yamlBlock = regexp.MustCompile("(?s)\n```yaml\n(.*?)\n```")

// TestSchema_AcceptsTheDocsExamples: every YAML example in docs/ that is
// a configuration, or a resource or an action of one, is valid against
// the schema (of the whole, or of a resource or an action). The rest
// (other programs' files, fragments written indented) are skipped.
func TestSchema_AcceptsTheDocsExamples(t *testing.T) {
	whole, resource, action := compileSchema(t, ""), compileSchema(t, "ResourceConfig"), compileSchema(t, "ActionConfig")
	keysOf := func(v any) map[string]strictyaml.Field { return strictyaml.Fields(reflect.TypeOf(v)) }
	kinds := []struct {
		keys   map[string]strictyaml.Field
		schema *jsonschema.Schema
	}{{keysOf(config.Config{}), whole}, {keysOf(config.ResourceConfig{}), resource}, {keysOf(config.ActionConfig{}), action}}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	checked := 0
	for _, path := range docs {
		for _, m := range yamlBlock.FindAllStringSubmatch(readDoc(t, path), -1) {
			// {...} stands for what the doc shows further down.
			block := strings.ReplaceAll(m[1], "{...}", "{}")
			var top map[string]any
			if yaml.Unmarshal([]byte(block), &top) != nil || len(top) == 0 {
				continue // indented, or alternatives under one key
			}
			for _, k := range kinds {
				if !everyKeyIn(top, k.keys) {
					continue
				}
				checked++
				if err := k.schema.Validate(asJSON(t, []byte(block))); err != nil {
					t.Errorf("%s: the schema refuses the example\n%s\n: %v", path, block, err)
				}
				break
			}
		}
	}
	t.Logf("%d examples checked", checked)
	if checked < 10 {
		t.Errorf("only %d examples in docs/ were checked; the test no longer finds them", checked)
	}
}

func everyKeyIn(m map[string]any, keys map[string]strictyaml.Field) bool {
	for k := range m {
		if _, ok := keys[k]; !ok {
			return false
		}
	}
	return true
}

// TestSchema_RefusesTheKeysCheckRefuses: a key in the wrong place is
// refused by check and by the schema alike, wherever it is.
func TestSchema_RefusesTheKeysCheckRefuses(t *testing.T) {
	base := `environment: test
upstreams:
  api:
    base_url: https://api.example.com
    credential: {env: API_TOKEN}
resources:
  items:
    upstream: api
    list: {path: /items, items: data}
    pagination: {dialect: cursor, has_more: has_more}
    get: {path: "/items/{{id}}"}
    id_field: id
    fields:
      id: {type: string}
      status: {type: string, enum: [open, closed]}
    filters:
      status: {param: status}
actions:
  close:
    resource: items
    conditional: reread
    request: {method: POST, path: "/items/{{id}}/close"}
    effect:
      - {field: status, op: set, to: closed}
`
	s := compileSchema(t, "")
	if _, err := config.Parse([]byte(base)); err != nil {
		t.Fatalf("the base configuration is refused: %v", err)
	}
	if err := s.Validate(asJSON(t, []byte(base))); err != nil {
		t.Fatalf("the schema refuses the base configuration: %v", err)
	}
	for _, tc := range []struct{ name, after, insert, path string }{
		{"top level", "environment: test\n", "resource:\n  x: {}\n", "resource"},
		{"upstream", "    base_url: https://api.example.com\n", "    timeout_ms: 100\n", "upstreams.api.timeout_ms"},
		{"credential secret", "    credential: {env: API_TOKEN}\n", "", ""},
		{"resource", "    id_field: id\n", "    id: id\n", "resources.items.id"},
		{"list", "    list: {path: /items, items: data}\n", "", ""},
		{"pagination", "    pagination: {dialect: cursor, has_more: has_more}\n", "", ""},
		{"field", "      id: {type: string}\n", "", ""},
		{"filter", "      status: {param: status}\n", "", ""},
		{"action", "    resource: items\n", "    method: POST\n", "actions.close.method"},
		{"effect", "      - {field: status, op: set, to: closed}\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := base
			switch tc.name {
			case "credential secret":
				doc = strings.Replace(doc, "{env: API_TOKEN}", "{basic: {user: {env: U}, password: {env: P, value: x}}}", 1)
			case "list":
				doc = strings.Replace(doc, "items: data}", "items: data, item: data}", 1)
			case "pagination":
				doc = strings.Replace(doc, "has_more: has_more}", "has_more: has_more, cursor: next}", 1)
			case "field":
				doc = strings.Replace(doc, "id: {type: string}", "id: {type: string, sensitve: true}", 1)
			case "filter":
				doc = strings.Replace(doc, "{param: status}", "{param: status, fields: status}", 1)
			case "effect":
				doc = strings.Replace(doc, "{field: status, op: set, to: closed}", "{field: status, op: set, to: closed, value: closed}", 1)
			default:
				doc = strings.Replace(doc, tc.after, tc.after+tc.insert, 1)
			}
			if doc == base {
				t.Fatal("the test's edit did not apply")
			}
			_, err := config.Parse([]byte(doc))
			var errs config.Errors
			if !errors.As(err, &errs) || !slices.ContainsFunc(errs, func(e config.Error) bool {
				return strings.HasPrefix(e.Msg, "unknown key") && (tc.path == "" || e.Path == tc.path)
			}) {
				t.Errorf("check does not refuse the key as unknown: %v", err)
			}
			if err := s.Validate(asJSON(t, []byte(doc))); err == nil {
				t.Errorf("the schema accepts it:\n%s", doc)
			}
		})
	}
}

// TestSchema_EveryTypeThatDecodesItselfIsReviewed: a configuration type
// with its own UnmarshalYAML is described by what that method reads, not
// by its fields: each one is listed in decodesItself.
func TestSchema_EveryTypeThatDecodesItselfIsReviewed(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if seen[typ] {
			return
		}
		seen[typ] = true
		if reflect.PointerTo(typ).Implements(unmarshalerType) {
			if _, ok := decodesItself(typ); !ok {
				t.Errorf("%v decodes itself (UnmarshalYAML) but decodesItself does not say what it accepts", typ)
			}
			return
		}
		if typ.Kind() == reflect.Struct {
			for _, f := range strictyaml.Fields(typ) {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[config.Config]())
	if !seen[reflect.TypeFor[config.SecretSource]()] {
		t.Error("the walk did not reach SecretSource: it no longer follows the configuration's types")
	}
}

// TestSchema_DurationPatternIsParseDuration: the schema's pattern for a
// duration accepts what time.ParseDuration reads, and nothing else.
func TestSchema_DurationPatternIsParseDuration(t *testing.T) {
	re := regexp.MustCompile(durationPattern)
	for _, s := range []string{"0", "-0", "+0", "10s", "250ms", "1h30m", "1.5h", ".5s", "5.s", "-3m", "+2h", "1µs", "1μs", "1us", "3ns",
		"", "10", "s", "1d", "1 s", "1s ", "1.s5", "..5s", "1e3s", "-", "0s0", "1hh", "01s", "1.2.3s"} {
		_, err := time.ParseDuration(s)
		if got, want := re.MatchString(s), err == nil; got != want {
			t.Errorf("%q: the pattern says %v, ParseDuration %v", s, got, want)
		}
	}
}

// TestSchema_PaginationKindsRestrictEachDialectToItsKeys: once the
// dialect table says which keys each dialect reads, a key another
// dialect reads is refused under it.
func TestSchema_PaginationKindsRestrictEachDialectToItsKeys(t *testing.T) {
	defer func(old func() map[string][]string) { paginationKinds = old }(paginationKinds)
	paginationKinds = func() map[string][]string {
		return map[string][]string{"cursor": {"has_more", "cursor_param"}, "offset": {"offset_param", "total"}}
	}
	s := compileSchema(t, "ResourceConfig")
	for doc, ok := range map[string]bool{
		"pagination: {dialect: cursor, has_more: more}": true,
		"pagination: {dialect: offset, total: count}":   true,
		"pagination: {dialect: cursor, total: count}":   false,
		"pagination: {dialect: offset, has_more: more}": false,
		"pagination: {dialect: link, has_more: more}":   true, // not in the table
		"pagination: {has_more: more, offset_param: o}": true, // no dialect named
	} {
		if err := s.Validate(asJSON(t, []byte(doc))); (err == nil) != ok {
			t.Errorf("%s: valid %v, want %v (%v)", doc, err == nil, ok, err)
		}
	}
}

// TestSchema_RefusesEveryKeyTheDialectDoesNotRead: for every dialect, its
// minimal configuration is valid to both, and every pagination key it
// does not read is refused by both airlock check and the schema; a key it
// reads is allowed by the schema.
func TestSchema_RefusesEveryKeyTheDialectDoesNotRead(t *testing.T) {
	s := compileSchema(t, "")
	refused := 0
	for _, k := range config.DialectKinds() {
		if err := s.Validate(asJSON(t, configtest.WithPaginationKey(k.Name, "", ""))); err != nil {
			t.Errorf("%s: the minimal configuration is invalid to the schema: %v", k.Name, err)
		}
		for _, key := range slices.Sorted(maps.Keys(configtest.PaginationKeyValues)) {
			if strings.Contains(configtest.DialectMinimal[k.Name][1], key+":") {
				continue
			}
			doc := configtest.WithPaginationKey(k.Name, key, configtest.PaginationKeyValues[key])
			schemaErr := s.Validate(asJSON(t, doc))
			if k.Reads(key) {
				if schemaErr != nil {
					t.Errorf("%s reads %s, the schema refuses it: %v", k.Name, key, schemaErr)
				}
				continue
			}
			if _, err := config.Parse(doc); err == nil || !strings.Contains(err.Error(), "does not read "+key) {
				t.Errorf("%s.%s: airlock check says %v", k.Name, key, err)
			}
			if schemaErr == nil {
				t.Errorf("%s.%s: airlock check refuses it, the schema allows it", k.Name, key)
			}
			refused++
		}
	}
	if refused < 100 {
		t.Errorf("only %d keys refused: the table or the test values shrank", refused)
	}
}

func TestSchemaJSON_IsStable(t *testing.T) {
	if !bytes.Equal(JSON(), JSON()) {
		t.Error("two schemas of the same types differ")
	}
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
