package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
)

// TestInitDraft_IsRefusedByCheckUntilEachTODOIsResolved: init writes what
// it could not decide as TODO, check refuses the file naming the line, and
// the file runs once a person has decided.
func TestInitDraft_IsRefusedByCheckUntilEachTODOIsResolved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "airlock.yaml")
	spec := filepath.Join("..", "..", "draft", "testdata", "json-server.openapi.yaml")
	var out, errb bytes.Buffer
	if code := run([]string{"init", "--openapi", spec, "-o", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "2 decision(s) left as TODO") {
		t.Errorf("init does not list what is left to decide: %s", errb.String())
	}
	if code := run([]string{"init", "--openapi", spec, "-o", path}, nil, &out, &errb); code == 0 {
		t.Error("init overwrote an existing file")
	}
	errb.Reset()
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "unresolved TODO") || !strings.Contains(errb.String(), "line ") {
		t.Fatalf("check of a draft with TODOs: exit %d: %s", code, errb.String())
	}
	b, _ := os.ReadFile(path)
	resolved := strings.NewReplacer(`"TODO(name this deployment, e.g. prod or staging)"`, "test",
		`"TODO(the API's base URL; the document names no server)"`, "http://127.0.0.1:1").Replace(string(b))
	if err := os.WriteFile(path, []byte(resolved), 0o600); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("check of the resolved draft: exit %d: %s", code, errb.String())
	}
}

// TestProbe_ExitsNonZeroOnlyWhenAnAssumptionIsWrong runs probe against the
// demo API with the demo configuration (ok) and with a wrong items path.
func TestProbe_ExitsNonZeroOnlyWhenAnAssumptionIsWrong(t *testing.T) {
	api := httptest.NewServer(&fixtures.Server{})
	t.Cleanup(api.Close)
	t.Setenv(fixtures.DemoTokenEnv, fixtures.DefaultToken)
	path := filepath.Join(t.TempDir(), "demo.yaml")
	cfg := string(fixtures.DemoConfig(api.URL))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"probe", "--config", path, "--resource", "subscriptions"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("probe of the demo configuration: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "pagination.end") {
		t.Errorf("probe does not report the end check:\n%s", out.String())
	}
	broken := strings.Replace(cfg, "/v1/subscriptions, items: items", "/v1/subscriptions, items: records", 1)
	if broken == cfg {
		t.Fatal("the demo configuration has no subscriptions items path to break")
	}
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"probe", "--config", path, "--resource", "subscriptions"}, nil, &out, &errb); code != 1 || !strings.Contains(out.String(), "WRONG") || !strings.Contains(out.String(), "list.items") {
		t.Fatalf("probe of a wrong items path: exit %d\n%s", code, out.String())
	}
}
