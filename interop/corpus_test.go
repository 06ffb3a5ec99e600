package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/airlock-mcp/airlock/interop/upstreams"
)

// corpusDocument is a public OpenAPI document from an npm package pinned in
// package.json.
type corpusDocument struct {
	name string
	file string // under node_modules
	// split writes the document as many files joined by external $refs
	// (as `redocly split` lays one out) and drafts from its root.
	split bool
}

var corpus = []corpusDocument{
	{name: "github", file: "@octokit/openapi/generated/api.github.com.json"},                           // 3.0.3, 811 paths
	{name: "directus", file: "@directus/specs/dist/openapi.json"},                                      // 3.0.1, every answer {data: ...}
	{name: "scalar-galaxy", file: "@scalar/galaxy/dist/3.1.json"},                                      // 3.1.1
	{name: "train-travel", file: "@readme/oas-examples/3.1/json/train-travel.json"},                    // 3.1.0
	{name: "netlify", file: "@netlify/open-api/dist/swagger.json"},                                     // Swagger 2.0
	{name: "train-travel-split", file: "@readme/oas-examples/3.1/json/train-travel.json", split: true}, // external $refs
}

// TestCorpus_InitDraftsEveryPublicDocument_CheckRefusesOnlyForTODOs: for
// each public document of the corpus, airlock init writes a draft (exit
// 0), and airlock check refuses it only for its TODOs, each with its line:
// no other error is left for after the TODOs are resolved. The time and
// peak memory of each init are logged (docs/probe.md reports them).
func TestCorpus_InitDraftsEveryPublicDocument_CheckRefusesOnlyForTODOs(t *testing.T) {
	upstreams.Enabled(t)
	for _, doc := range corpus {
		if _, err := os.Stat(filepath.Join("node_modules", filepath.FromSlash(doc.file))); err != nil {
			unavailable(t, requireEnv, "onboarding corpus", "interop/node_modules/"+doc.file+" is missing; run `npm ci` in interop/")
		}
	}
	bin := buildAirlock(t)
	for _, doc := range corpus {
		t.Run(doc.name, func(t *testing.T) {
			src := filepath.Join("node_modules", filepath.FromSlash(doc.file))
			if doc.split {
				src = splitDocument(t, src)
			}
			out := filepath.Join(t.TempDir(), "airlock.yaml")
			code, stderr, elapsed, peak := measured(t, bin, "init", "--openapi", src, "--environment", "corpus", "-o", out)
			if code != 0 {
				t.Fatalf("airlock init: exit %d\n%s", code, stderr)
			}
			draft, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			todos := countTodos(stderr)
			code, _, checkErr := cli(t, bin, nil, "check", "--config", out)
			errs := configErrorLines(checkErr)
			switch {
			case todos == 0 && code != 0:
				t.Fatalf("check refuses a draft without TODOs:\n%s", checkErr)
			case todos > 0 && code != 1:
				t.Fatalf("check accepts a draft with %d TODOs: exit %d", todos, code)
			}
			for _, e := range errs {
				if !strings.Contains(e, "unresolved TODO") || !lineNumbered.MatchString(e) {
					t.Errorf("check refuses the draft for another reason than a TODO: %s", e)
				}
			}
			if len(errs) != todos {
				t.Errorf("check names %d errors, init left %d TODOs", len(errs), todos)
			}
			resources, actions := countEntries(t, draft)
			if resources == 0 {
				t.Errorf("the draft has no resource:\n%s", draft)
			}
			t.Logf("corpus %s: %d resources, %d actions, %d TODOs, %d warnings; init %.2fs, peak RSS %.0f MiB",
				doc.name, resources, actions, todos, countWarnings(stderr), elapsed.Seconds(), float64(peak)/(1<<20))
		})
	}
}

var lineNumbered = regexp.MustCompile(`^line \d+: `)

// measured runs the binary and returns its exit code, standard error, the
// wall time and the peak resident memory (bytes) the kernel reported.
func measured(t *testing.T, bin string, args ...string) (int, string, time.Duration, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run airlock %v: %v", args, err)
	}
	var peak int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return cmd.ProcessState.ExitCode(), stderr.String(), elapsed, peak
}

var todoCount = regexp.MustCompile(`(\d+) decision\(s\) left as TODO`)

func countTodos(stderr string) int {
	m := todoCount.FindStringSubmatch(stderr)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var warningCount = regexp.MustCompile(`(\d+) warning\(s\) about the document`)

func countWarnings(stderr string) int {
	m := warningCount.FindStringSubmatch(stderr)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// configErrorLines are the errors `airlock check` listed.
func configErrorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "  ") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// countEntries counts the draft's resources and actions.
func countEntries(t *testing.T, draft []byte) (resources, actions int) {
	t.Helper()
	var doc struct {
		Resources map[string]yaml.Node `yaml:"resources"`
		Actions   map[string]yaml.Node `yaml:"actions"`
	}
	if err := yaml.Unmarshal(draft, &doc); err != nil {
		t.Fatalf("the draft is not YAML: %v", err)
	}
	return len(doc.Resources), len(doc.Actions)
}

// splitDocument writes a JSON document as many files, the way `redocly
// split` lays one out: each path item in paths/, each component schema in
// components/schemas/, joined by external $refs (schemas refer to each
// other by file, path items to the root's other components through the
// root file). It returns the root file.
func splitDocument(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(rel string, v any) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, out, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const schemas = "#/components/schemas/"
	components, _ := root["components"].(map[string]any)
	defs, _ := components["schemas"].(map[string]any)
	for name, s := range defs {
		write("components/schemas/"+name+".json", rewriteRefs(s, func(ref string) string {
			if rest, ok := strings.CutPrefix(ref, schemas); ok {
				return rest + ".json"
			}
			return "../../openapi.json" + ref
		}))
	}
	delete(components, "schemas")
	paths, _ := root["paths"].(map[string]any)
	for p, item := range paths {
		file := "paths/" + strings.NewReplacer("/", "_", "{", "", "}", "").Replace(strings.TrimPrefix(p, "/")) + ".json"
		write(file, rewriteRefs(item, func(ref string) string {
			if rest, ok := strings.CutPrefix(ref, schemas); ok {
				return "../components/schemas/" + rest + ".json"
			}
			return "../openapi.json" + ref
		}))
		paths[p] = map[string]any{"$ref": file}
	}
	write("openapi.json", rewriteRefs(root, func(ref string) string {
		if rest, ok := strings.CutPrefix(ref, schemas); ok {
			return "components/schemas/" + rest + ".json"
		}
		return ref
	}))
	if len(defs) == 0 || len(paths) == 0 {
		t.Fatalf("%s has nothing to split", src)
	}
	return filepath.Join(dir, "openapi.json")
}

// rewriteRefs returns v with every local $ref (#/...) rewritten by to.
func rewriteRefs(v any, to func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" && strings.HasPrefix(s, "#/") {
				out[k] = to(s)
				continue
			}
			out[k] = rewriteRefs(e, to)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rewriteRefs(e, to)
		}
		return out
	}
	return v
}
