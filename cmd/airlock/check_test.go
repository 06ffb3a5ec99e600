package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkConfig is an upstream whose records carry a name the archive does
// not change, and an action whose body is given.
func checkConfig(body string) string {
	return `environment: test
upstreams:
  api: {base_url: "http://127.0.0.1:1"}
resources:
  items:
    upstream: api
    list: {path: /items}
    pagination: {dialect: link}
    get: {path: "/items/{{id}}"}
    id_field: id
    fields:
      id: {type: string}
      name: {type: string}
      status: {type: string}
actions:
  archive:
    resource: items
    request:
      method: PUT
      path: "/items/{{id}}"
      body: ` + body + `
    conditional: reread
    effect: [{field: status, to: archived}]
`
}

// TestCheck_RefusesABodyTheCommitCouldNotBuild: a PUT body naming
// {{before.name}}, a declared field the effect does not change, used to
// pass check, preview as committable, and stop the commit with
// INTERNAL_ERROR and nothing sent: the commit's before holds only the
// effect's fields. check now refuses it, naming its line and what the
// commit has; the body the commit can build passes.
func TestCheck_RefusesABodyTheCommitCouldNotBuild(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "airlock.yaml")
	if err := os.WriteFile(path, []byte(checkConfig(`{name: "{{before.name}}", status: "{{after.status}}"}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"check", "--config", path}, nil, &out, &errb)
	if code != exitFailure || !strings.Contains(errb.String(), "line 21") ||
		!strings.Contains(errb.String(), "{{before.name}}: before holds only the fields the effect changes: status") {
		t.Fatalf("check: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if err := os.WriteFile(path, []byte(checkConfig(`{status: "{{after.status}}", was: "{{before.status}}"}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != exitOK {
		t.Fatalf("check of a body the commit can build: exit %d\n%s", code, errb.String())
	}
}
