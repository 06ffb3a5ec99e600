package draft

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkFromOpenAPI drafts public documents of the onboarding corpus
// (interop/node_modules, after npm ci in interop/): GitHub's 811 paths
// against Directus's 70 in the same run, for a ratio.
//
//	go test -run '^$' -bench FromOpenAPI -benchmem ./draft
func BenchmarkFromOpenAPI(b *testing.B) {
	for _, doc := range []struct{ name, file string }{
		{"directus_70_paths", "@directus/specs/dist/openapi.json"},
		{"github_811_paths", "@octokit/openapi/generated/api.github.com.json"},
	} {
		path := filepath.Join("..", "interop", "node_modules", filepath.FromSlash(doc.file))
		body, err := os.ReadFile(path)
		if err != nil {
			b.Skipf("%s is missing: run npm ci in interop/", path)
		}
		b.Run(doc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := FromOpenAPI(body, Options{Environment: "bench", Location: path}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
