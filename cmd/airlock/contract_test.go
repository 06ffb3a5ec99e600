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

func TestContract_DemoFixturesDecideAsRecorded(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"contract", "--demo"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "projects list v2") || !strings.Contains(out.String(), "no drift") {
		t.Fatalf("output:\n%s", out.String())
	}
}

// TestContract_LoosenedContractIsCaughtOffline: an operator relaxes the
// owner field; the recorded answer where owner was renamed would now be
// accepted, and the release gate fails.
func TestContract_LoosenedContractIsCaughtOffline(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(string(fixtures.DemoConfig("https://projects.example.com")),
		"owner: {type: string, nullable: true, required: true, decision: true, description: owning team; a project without one is nobody's}",
		"owner: {type: string, nullable: true}", 1)
	if err := os.WriteFile(filepath.Join(dir, "airlock.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "contracts"), fixtures.ContractFixtureFS()); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"contract", "--config", filepath.Join(dir, "airlock.yaml")}, nil, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "DRIFT    projects list v2") {
		t.Fatalf("want exit 1 naming the drift, got %d:\n%s%s", code, out.String(), errb.String())
	}
}

// TestContract_FixtureTheConfigCannotJudgeFailsTheGate: a recorded answer
// for an action the configuration no longer has is not a pass.
func TestContract_FixtureTheConfigCannotJudgeFailsTheGate(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(string(fixtures.DemoConfig("https://projects.example.com")), "  assign_owner:\n", "  assign_team:\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "airlock.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "contracts"), fixtures.ContractFixtureFS()); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"contract", "--config", filepath.Join(dir, "airlock.yaml")}, nil, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "UNCHECKED service_accounts assign_owner v1") || !strings.Contains(out.String(), "could not be checked") ||
		strings.Contains(out.String(), "DRIFT") {
		t.Fatalf("want exit 1 naming the unchecked fixture, got %d:\n%s%s", code, out.String(), errb.String())
	}
}

// TestContract_LiveDriftIsReportedInOperationalLanguage: the upstream has
// renamed owner; --live reads one page and says what it means.
func TestContract_LiveDriftIsReportedInOperationalLanguage(t *testing.T) {
	api := &fixtures.Server{}
	c := api.Collection(fixtures.DatasetProjects)
	for _, id := range c.IDs() {
		c.Update(id, func(r fixtures.Record) { r["owner_id"] = r["owner"]; delete(r, "owner") })
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "airlock.yaml"), fixtures.DemoConfig(srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(fixtures.DemoTokenEnv, fixtures.DefaultToken)
	var out, errb bytes.Buffer
	code := run([]string{"contract", "--config", filepath.Join(dir, "airlock.yaml"), "--live"}, nil, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "projects") || !strings.Contains(out.String(), "field owner missing in 20 of 20 items") {
		t.Fatalf("want the live drift reported, got %d:\n%s%s", code, out.String(), errb.String())
	}
	if strings.Contains(out.String(), "DRIFT   subscriptions") {
		t.Fatal("only the drifted resource is reported")
	}
}

func TestCheck_WarnsAboutAliasesPastTheirEnd(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(string(fixtures.DemoConfig("https://projects.example.com")),
		"owner: {type: string, nullable: true, required: true, decision: true, description: owning team; a project without one is nobody's}",
		"owner: {type: string, nullable: true, required: true, decision: true, aliases: [{name: owner_id, until: 2020-01-31}]}", 1)
	path := filepath.Join(dir, "airlock.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "warning: resource projects: field owner still accepts alias owner_id, which was to end on 2020-01-31") {
		t.Fatalf("output:\n%s", out.String())
	}
}
