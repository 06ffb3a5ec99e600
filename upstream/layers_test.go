package upstream

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

// layers are the trades of reading an upstream, lowest first: each package
// may import the ones before it, never one after it.
var layers = []struct{ dir, path string }{
	{"transport", "github.com/airlock-mcp/airlock/upstream/transport"},
	{"dialect", "github.com/airlock-mcp/airlock/upstream/dialect"},
	{"contract", "github.com/airlock-mcp/airlock/upstream/contract"},
	{".", "github.com/airlock-mcp/airlock/upstream"},
	{"read", "github.com/airlock-mcp/airlock/upstream/read"},
}

// maxLines bounds each package's non-test lines, so that no trade grows
// back into a package that holds everything.
const maxLines = 6000

// TestLayers_ImportOneWayAndStaySmall: transport ← dialect ← contract ←
// upstream (the scan) ← read. A package that imports one above it, or one that outgrows
// maxLines non-test lines, fails; a new package under upstream must be
// given its place here.
func TestLayers_ImportOneWayAndStaySmall(t *testing.T) {
	rank := map[string]int{}
	for i, l := range layers {
		rank[l.path] = i
	}
	known := map[string]bool{".": true}
	for _, l := range layers {
		known[l.dir] = true
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" && !known[e.Name()] {
			if files, _ := filepath.Glob(filepath.Join(e.Name(), "*.go")); len(files) > 0 {
				t.Errorf("package upstream/%s has no place in the layers", e.Name())
			}
		}
	}
	for i, l := range layers {
		files, err := filepath.Glob(filepath.Join(l.dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", l.dir, err)
		}
		lines := 0
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(f, "_test.go") {
				lines += bytes.Count(src, []byte("\n"))
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if r, ok := rank[p]; ok && r > i {
					t.Errorf("%s imports %s: %s is below it", f, p, l.path)
				}
			}
		}
		if lines > maxLines {
			t.Errorf("%s holds %d non-test lines, more than %d: split it by trade", l.path, lines, maxLines)
		}
	}
}
