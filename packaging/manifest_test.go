package packaging

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
)

// bundleManifest is the part of an MCPB manifest the tests read.
type bundleManifest struct {
	ManifestVersion string `json:"manifest_version"`
	Name            string `json:"name"`
	Version         string `json:"version"`
	Server          struct {
		Type       string `json:"type"`
		EntryPoint string `json:"entry_point"`
		MCPConfig  struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcp_config"`
	} `json:"server"`
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
	Compatibility struct {
		Platforms []string `json:"platforms"`
	} `json:"compatibility"`
	UserConfig map[string]struct {
		Type      string `json:"type"`
		Sensitive bool   `json:"sensitive"`
		Required  bool   `json:"required"`
		Default   any    `json:"default"`
	} `json:"user_config"`
}

func readManifest(t testing.TB, path string) bundleManifest {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m bundleManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestBundleManifest_SecretsTravelInTheEnvironmentOnly: what the bundle
// asks at install time is the configuration file, read-only, and secrets;
// every secret is sensitive (the host keeps it in the keychain) and reaches
// airlock only through its environment, never its command line, which other
// users of the machine can read.
func TestBundleManifest_SecretsTravelInTheEnvironmentOnly(t *testing.T) {
	t.Parallel()
	m := readManifest(t, "mcpb-manifest.json")
	if m.ManifestVersion != "0.4" || m.Server.Type != "binary" {
		t.Errorf("manifest_version %q, server.type %q: want 0.4 and binary", m.ManifestVersion, m.Server.Type)
	}
	if c := m.UserConfig["config"]; c.Type != "file" || c.Required {
		t.Errorf("user_config.config: %+v, want an optional file (blank: the demo)", c)
	}
	if c := m.UserConfig["read_only"]; c.Type != "boolean" || c.Default != false {
		t.Errorf("user_config.read_only: %+v, want a boolean, false by default", c)
	}
	line := m.Server.MCPConfig.Command + " " + strings.Join(m.Server.MCPConfig.Args, " ")
	secrets := 0
	for key, c := range m.UserConfig {
		ref := "${user_config." + key + "}"
		if !c.Sensitive {
			continue
		}
		secrets++
		if c.Type != "string" || c.Default != "" {
			t.Errorf("user_config.%s: %+v, want a string that defaults to empty (an unset secret must not arrive as %q)", key, c, ref)
		}
		if strings.Contains(line, ref) {
			t.Errorf("the secret %s is on the command line: %s", key, line)
		}
		var in []string
		for name, v := range m.Server.MCPConfig.Env {
			if v == ref {
				in = append(in, name)
			}
		}
		if len(in) != 1 {
			t.Errorf("the secret %s reaches airlock in %v, want exactly one environment variable", key, in)
		}
	}
	if secrets == 0 {
		t.Error("the bundle asks for no secret: a configuration of one's own API could not be given its credentials")
	}
}

// TestBundleManifest_TheHostStartsTheDemoOrYourAPI starts the manifest's
// server the way a host of MCP Bundles does: the launch configuration comes
// from getMcpConfigForManifest, the official package's function for hosts,
// given what the user entered. A blank configuration serves the demo; a
// configuration serves that API with the secret it reads from
// AIRLOCK_CREDENTIAL_1, which is in the environment and not in the
// arguments; read-only offers no write tool.
func TestBundleManifest_TheHostStartsTheDemoOrYourAPI(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	requireMCPB(t)
	bundle := t.TempDir()
	if err := os.Mkdir(filepath.Join(bundle, "server"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(buildAirlock(t), filepath.Join(bundle, "server", "airlock")); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile("mcpb-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "manifest.json"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "bundle-secret-7f3a"
	cfg := writeAPIConfig(t, "AIRLOCK_CREDENTIAL_1", token)

	for _, c := range []struct {
		name        string
		settings    map[string]any
		environment string
		tools       []string
	}{
		{"blank", map[string]any{}, "demo", allTools},
		{"configured", map[string]any{"config": cfg, "credential_1": token}, "billing-prod", allTools},
		{"read-only", map[string]any{"config": cfg, "credential_1": token, "read_only": true}, "billing-prod", readTools},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := hostLaunch(t, node, bundle, c.settings)
			if slices.ContainsFunc(l.Args, func(a string) bool { return strings.Contains(a, token) }) {
				t.Errorf("the secret is on the command line: %v", l.Args)
			}
			if _, ok := c.settings["credential_1"]; ok && l.Env["AIRLOCK_CREDENTIAL_1"] != token {
				t.Errorf("the secret is not in AIRLOCK_CREDENTIAL_1: %v", l.Env)
			}
			l.Call = searchSubscriptions
			r := runClient(t, node, l, nil)
			if got := r.environment(); got != c.environment {
				t.Errorf("the bundle serves environment %q, want %q", got, c.environment)
			}
			if !slices.Equal(r.Tools, c.tools) {
				t.Errorf("tools %v, want %v", r.Tools, c.tools)
			}
		})
	}
}

// hostLaunch is the launch configuration a host derives from the unpacked
// bundle in dir and the user's settings (hostconfig.mjs).
func hostLaunch(t testing.TB, node, dir string, settings map[string]any) launch {
	t.Helper()
	js, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "hostconfig.mjs", dir, string(js))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hostconfig.mjs %s %s: %v\n%s", dir, js, err, stderr.Bytes())
	}
	var l launch
	if err := json.Unmarshal(stdout.Bytes(), &l); err != nil {
		t.Fatalf("hostconfig.mjs printed %q: %v", stdout.Bytes(), err)
	}
	return l
}

// writeAPIConfig starts the demo API under a test server that wants token,
// and writes a configuration of it (environment billing-prod) that reads
// the token from the environment variable env.
func writeAPIConfig(t testing.TB, env, token string) string {
	t.Helper()
	api := httptest.NewServer(&fixtures.Server{Token: token})
	t.Cleanup(api.Close)
	yaml := string(fixtures.DemoConfig(api.URL))
	for old, new := range map[string]string{"environment: demo": "environment: billing-prod", "env: " + fixtures.DemoTokenEnv: "env: " + env} {
		if !strings.Contains(yaml, old) {
			t.Fatalf("the demo configuration no longer holds %q: the test cannot tell it from the demo", old)
		}
		yaml = strings.Replace(yaml, old, new, 1)
	}
	path := filepath.Join(t.TempDir(), "airlock.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
