package mcpserver

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImports_TheMCPServerLinksNoTelemetryOrTokenLibrary: a program that
// serves the tools over MCP (stdio included) links neither Prometheus,
// OpenTelemetry nor go-oidc: observers and the resource server are given
// to the server, never imported by it.
func TestImports_TheMCPServerLinksNoTelemetryOrTokenLibrary(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(build.Default.GOROOT, "bin", "go")
	}
	out, err := exec.Command(goCmd, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/prometheus/", "go.opentelemetry.io/", "github.com/coreos/go-oidc", "github.com/go-jose/",
			"github.com/airlock-mcp/airlock/oauth", "github.com/airlock-mcp/airlock/telemetry"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("mcpserver links %s", dep)
			}
		}
	}
}
