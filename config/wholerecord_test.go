package config

import (
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

// A per-target request whose body is the whole record ({{after}}: the
// record read right before the write, the effect applied) is what an API
// that replaces a document on PUT needs (CouchDB): the configuration that
// says so parses, and a bulk template or a resource without a get endpoint
// still cannot name it.
func TestParseConfig_WholeRecordAfterIsAPerTargetTemplate(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines,
		"      _rev: {type: string}",
		"      status: {type: string}",
		"    version_field: _rev",
		"    get: {path: \"/items/{{id}}\"}",
		"actions:",
		"  archive:",
		"    resource: items",
		"    request: {method: PUT, path: \"/items/{{id}}\", body: \"{{after}}\"}",
		"    conditional: version",
		"    effect: [{field: status, to: archived}]",
		"  archive_nested:",
		"    resource: items",
		"    request: {method: PUT, path: \"/items/{{id}}\", body: {doc: \"{{after}}\"}}",
		"    conditional: version",
		"    effect: [{field: status, to: archived}]",
	)
	if _, err := Parse(configtest.Lines(lines...)); err != nil {
		t.Fatalf("a body of {{after}} is refused: %v", err)
	}
}
