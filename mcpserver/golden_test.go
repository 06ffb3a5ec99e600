package mcpserver

import (
	"os"
	"path/filepath"
	"testing"
)

// golden compares got with a file under testdata; UPDATE_GOLDEN=1 rewrites
// the file instead.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s missing (UPDATE_GOLDEN=1 writes it): %v", path, err)
	}
	if string(want) != string(got) {
		t.Fatalf("%s differs from the current output; if the change is intended, run UPDATE_GOLDEN=1 go test ./mcpserver and review the diff", path)
	}
}
