package tools

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goList runs go list with args in the package's directory.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(build.Default.GOROOT, "bin", "go")
	}
	out, err := exec.Command(goCmd, append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// TestImports_TheCoreNeitherServesNorObserves: a program that embeds the
// tools links no MCP SDK, no metrics, tracing or token library, and none
// of airlock's serving packages; the core itself imports no HTTP server.
func TestImports_TheCoreNeitherServesNorObserves(t *testing.T) {
	t.Parallel()
	for _, dep := range goList(t, "-deps", ".") {
		for _, banned := range []string{"github.com/mark3labs/mcp-go", "github.com/prometheus/", "go.opentelemetry.io/", "github.com/coreos/go-oidc",
			"github.com/go-jose/", "github.com/airlock-mcp/airlock/mcpserver", "github.com/airlock-mcp/airlock/httpserve",
			"github.com/airlock-mcp/airlock/oauth", "github.com/airlock-mcp/airlock/telemetry"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("tools links %s", dep)
			}
		}
	}
	for _, imp := range goList(t, "-f", `{{join .Imports " "}}`, ".") {
		if imp == "net/http" || strings.HasPrefix(imp, "net/http/") {
			t.Errorf("tools imports %s", imp)
		}
	}
}
