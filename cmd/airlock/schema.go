package main

import (
	"io"

	"github.com/airlock-mcp/airlock/config/schema"
)

// schemaCmd prints the configuration's JSON Schema, for editors.
func schemaCmd(args []string, stdout io.Writer) error {
	f := newFlags("schema", "schema", "Print the JSON Schema (draft 2020-12) of the configuration file, generated from\nthe types airlock reads it into: an editor with a YAML language server checks\nand completes a configuration with it. Releases publish it as\n"+schema.URL+",\nwhich drafts from airlock init name on their first line. To use a local copy:\n  airlock schema > airlock.schema.json\nand begin the configuration with\n  # yaml-language-server: $schema=./airlock.schema.json")
	if _, err := f.parse(args, 0, stdout); err != nil {
		return err
	}
	_, err := stdout.Write(schema.JSON())
	return err
}
