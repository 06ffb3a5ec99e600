package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config/schema"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// TestSchema_PrintsTheConfigurationsSchema: airlock schema prints the
// schema generated from the configuration's types, one a 2020-12
// validator compiles, and nothing else.
func TestSchema_PrintsTheConfigurationsSchema(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"schema"}, nil, &out, &errb); code != exitOK || errb.Len() != 0 {
		t.Fatalf("airlock schema: exit %d: %s", code, errb.String())
	}
	if !bytes.Equal(out.Bytes(), schema.JSON()) {
		t.Error("airlock schema prints something else than the configuration's schema")
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("airlock.schema.json", bytes.NewReader(out.Bytes())); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("airlock.schema.json"); err != nil {
		t.Errorf("the printed schema does not compile: %v", err)
	}
	if code := run([]string{"schema", "extra"}, nil, &out, &errb); code != exitUsage {
		t.Errorf("airlock schema extra: exit %d, want %d", code, exitUsage)
	}
}

// TestInitDraft_NamesTheSchemaOnItsFirstLine: an editor opening a draft
// finds the schema without being told.
func TestInitDraft_NamesTheSchemaOnItsFirstLine(t *testing.T) {
	spec := filepath.Join("..", "..", "draft", "testdata", "json-server.openapi.yaml")
	var out, errb bytes.Buffer
	if code := run([]string{"init", "--openapi", spec}, nil, &out, &errb); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errb.String())
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if first != schema.Comment {
		t.Errorf("the draft's first line is %q, want %q", first, schema.Comment)
	}
}
