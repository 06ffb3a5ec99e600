package config

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxPackageLines is the most non-test lines a package holds (issue 38):
// past it, a part of the package is a trade of its own.
const maxPackageLines = 6000

// nonTestGoFiles are the Go files of the package in dir, tests left out.
func nonTestGoFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}

// TestPackageSize_ConfigStaysOneTrade: config holds fewer than 6,000
// non-test lines, and the parts that left it (the strict YAML reading,
// the template language of actions) stay below it: none imports config,
// so config can keep importing them.
func TestPackageSize_ConfigStaysOneTrade(t *testing.T) {
	lines := 0
	for _, f := range nonTestGoFiles(t, ".") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines >= maxPackageLines {
		t.Errorf("config has %d non-test lines, %d at most: move a self-contained part into a package of its own", lines, maxPackageLines-1)
	}
	const self = "github.com/airlock-mcp/airlock/config"
	for _, dir := range []string{"strictyaml", "template"} {
		for _, f := range nonTestGoFiles(t, dir) {
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path == self {
					t.Errorf("%s imports config: a package config uses must not depend on it", f)
				}
			}
		}
	}
}
