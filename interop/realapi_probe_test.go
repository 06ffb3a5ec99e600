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
	"strings"
	"testing"
	"time"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/probe"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// cli runs the airlock binary with env added to the environment and
// returns its exit code, standard output and standard error.
func cli(t *testing.T, bin string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run airlock %v: %v", args, err)
	return 0, "", ""
}

// probeResult is `airlock probe --json`.
type probeResult struct {
	Resources []struct {
		Resource string        `json:"resource"`
		Requests int           `json:"requests"`
		Checks   []probe.Check `json:"checks"`
	} `json:"resources"`
	Requests     int `json:"requests"`
	OK           int `json:"ok"`
	Wrong        int `json:"wrong"`
	Unverifiable int `json:"unverifiable"`
}

func (p probeResult) wrong() []string {
	var out []string
	for _, r := range p.Resources {
		for _, c := range r.Checks {
			if c.Status == probe.Wrong {
				out = append(out, c.Check+": "+c.Evidence)
			}
		}
	}
	return out
}

// probeConfig writes config to a file and runs `airlock probe --json` on
// it.
func probeConfig(t *testing.T, bin, config string, env map[string]string) (int, probeResult) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "airlock.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	code, out, errOut := cli(t, bin, env, "probe", "--config", path, "--json")
	var res probeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("probe --json: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
	}
	t.Logf("probe: exit %d, %d ok, %d wrong, %d unverifiable, %d requests, %.1fs; wrong: %v", code, res.OK, res.Wrong, res.Unverifiable, res.Requests, time.Since(started).Seconds(), res.wrong())
	return code, res
}

// initDraft runs `airlock init` and returns the draft, failing on any TODO
// left in it.
func initDraft(t *testing.T, bin string, env map[string]string, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "draft.yaml")
	code, _, errOut := cli(t, bin, env, append([]string{"init", "--environment", "interop", "-o", out}, args...)...)
	if code != 0 {
		t.Fatalf("airlock init %v: exit %d: %s", args, code, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), configpkg.TodoPrefix) {
		t.Fatalf("the draft leaves decisions to a person:\n%s", b)
	}
	if code, _, errOut := cli(t, bin, env, "check", "--config", out); code != 0 {
		t.Fatalf("airlock check refuses the draft: %s\n%s", errOut, b)
	}
	return string(b)
}

// airlockFrom serves a configuration in process, as startAirlock does.
func airlockFrom(t *testing.T, config string, env map[string]string) *airlock {
	t.Helper()
	cfg, err := configpkg.Parse([]byte(config))
	if err != nil {
		t.Fatalf("parse the draft: %v", err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatalf("initialize the draft: %v", err)
	}
	a := &airlock{specs: map[string]tools.Spec{}, schemas: map[string]*envelope.Validator{}}
	for _, s := range mustDeps(t, tools.Config{Runtime: rt}).Specs() {
		v, err := envelope.CompileSchema(s.Name, s.OutputSchema())
		if err != nil {
			t.Fatal(err)
		}
		a.specs[s.Name], a.schemas[s.Name] = s, v
	}
	return a
}

// wantWrong asserts that probe exited non-zero naming check as wrong.
func wantWrong(t *testing.T, code int, res probeResult, check string) {
	t.Helper()
	if code == 0 {
		t.Errorf("probe exited 0 on a misconfiguration; want %s named wrong", check)
	}
	for _, w := range res.wrong() {
		if strings.HasPrefix(w, check+":") {
			return
		}
	}
	t.Errorf("probe did not name %s wrong; wrong: %v", check, res.wrong())
}

// wantClean asserts that probe found nothing wrong.
func wantClean(t *testing.T, code int, res probeResult) {
	t.Helper()
	if code != 0 || res.Wrong != 0 {
		t.Errorf("probe of a fitting configuration: exit %d, wrong %v", code, res.wrong())
	}
}

func replace(t *testing.T, config, pattern, with string) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	if !re.MatchString(config) {
		t.Fatalf("the draft has no %q to change:\n%s", pattern, config)
	}
	return re.ReplaceAllString(config, with)
}

// TestInitProbe_JSONServer: a draft from a document written for json-server
// and one from a live sample both pass probe and deliver exactly
// json-server's records; each misconfiguration makes probe exit non-zero
// naming it.
func TestInitProbe_JSONServer(t *testing.T) {
	js := upstreams.StartJSONServer(t)
	bin := buildAirlock(t)
	truth := js.Accounts(t)
	all := upstreamCase{name: "every_account", resource: "accounts", correct: true}

	fromDoc := initDraft(t, bin, nil, "--openapi", filepath.Join("testdata", "openapi", "json-server.yaml"), "--base-url", js.URL)
	t.Run("from_document", func(t *testing.T) {
		code, res := probeConfig(t, bin, fromDoc, nil)
		wantClean(t, code, res)
		runCase(t, airlockFrom(t, fromDoc, nil), all, truth, "id", "status")
	})
	t.Run("from_sample", func(t *testing.T) {
		cfg := initDraft(t, bin, nil, "--sample", js.URL+"/accounts?_page=1&_limit=50")
		code, res := probeConfig(t, bin, cfg, nil)
		wantClean(t, code, res)
		runCase(t, airlockFrom(t, cfg, nil), all, truth, "id", "status")
	})
	t.Run("without_page_param", func(t *testing.T) {
		code, res := probeConfig(t, bin, replace(t, fromDoc, `(?m)^ *params: \{_page: "1"\}.*\n`, ""), nil)
		wantWrong(t, code, res, "pagination.end")
	})
	t.Run("comma_list_on_an_exact_match_api", func(t *testing.T) {
		code, res := probeConfig(t, bin, replace(t, fromDoc, `multi: repeat`, `multi: comma`), nil)
		wantWrong(t, code, res, "filters.status.multi")
	})
	t.Run("if_match_without_a_version_on_items", func(t *testing.T) {
		cfg := replace(t, fromDoc, `version_field: version`, `version_field: etag`)
		cfg = replace(t, cfg, `(?m)^( *)version: \{type: integer\}`, "${1}version: {type: integer}\n${1}etag: {type: string}")
		cfg = replace(t, cfg, `conditional: reread`, `conditional: if_match`)
		code, res := probeConfig(t, bin, cfg, nil)
		wantWrong(t, code, res, "actions.delete_account.conditional")
	})
	plantedJSONServer(t, bin, fromDoc)
}

// TestInitProbe_PocketBase: drafts from a document and from a sample pass
// probe and deliver exactly PocketBase's records; skipTotal and an owner
// whose "" is not declared as null are caught and named.
func TestInitProbe_PocketBase(t *testing.T) {
	pb := upstreams.StartPocketBase(t)
	bin := buildAirlock(t)
	truth := pb.Accounts(t)
	all := upstreamCase{name: "every_account", resource: "accounts", correct: true}

	docEnv := map[string]string{"POCKET_BASE_ACCOUNTS_TOKEN": pb.Token}
	fromDoc := initDraft(t, bin, docEnv, "--openapi", filepath.Join("testdata", "openapi", "pocketbase.yaml"), "--base-url", pb.URL)
	t.Run("from_document", func(t *testing.T) {
		code, res := probeConfig(t, bin, fromDoc, docEnv)
		wantClean(t, code, res)
		runCase(t, airlockFrom(t, fromDoc, docEnv), all, truth, "id", "status")
	})
	sampleEnv := map[string]string{"PB_TOKEN": pb.Token}
	fromSample := initDraft(t, bin, sampleEnv, "--sample", pb.URL+"/api/collections/accounts/records?perPage=50",
		"--credential-env", "PB_TOKEN", "--credential-scheme", "")
	t.Run("from_sample", func(t *testing.T) {
		code, res := probeConfig(t, bin, fromSample, sampleEnv)
		wantClean(t, code, res)
		al := airlockFrom(t, fromSample, sampleEnv)
		runCase(t, al, all, truth, "id", "status")
		ownerless := upstreamCase{name: "null_owner", resource: "accounts", filter: map[string]any{"owner": nil}, correct: true,
			keep: func(r upstreams.Record) bool { o, _ := r["owner"].(string); return o == "" }}
		// The sample draft reads "" as null: a null filter finds them all.
		cfg := replace(t, fromSample, `(?m)^    # a sample shows no filter`, "    filters: {owner: {}}\n    # a sample shows no filter")
		runCase(t, airlockFrom(t, cfg, sampleEnv), ownerless, truth, "id", "")
	})
	t.Run("skip_total", func(t *testing.T) {
		cfg := replace(t, fromDoc, `(?m)^( *)items: items`, "${1}params: {skipTotal: \"1\"}\n${1}items: items")
		code, res := probeConfig(t, bin, cfg, docEnv)
		wantWrong(t, code, res, "pagination.total")
	})
	t.Run("empty_string_for_null_undeclared", func(t *testing.T) {
		cfg := replace(t, fromSample, `(?m)^( *)owner: \{[^}]*\}.*$`, "${1}owner: {type: string, nullable: true}")
		code, res := probeConfig(t, bin, cfg, sampleEnv)
		wantWrong(t, code, res, "fields.owner.null_values")
	})
	plantedPocketBase(t, bin, fromDoc, docEnv)
}

// TestInitProbe_Registry: drafts of the catalog (plain strings behind a
// Link header) pass probe and deliver exactly the pushed repositories.
func TestInitProbe_Registry(t *testing.T) {
	reg := upstreams.StartRegistry(t)
	bin := buildAirlock(t)
	var truth []upstreams.Record
	for _, name := range reg.Pushed {
		truth = append(truth, upstreams.Record{"id": name})
	}
	all := upstreamCase{name: "every_repository", resource: "repositories", correct: true}
	for _, c := range []struct{ name string }{{"from_document"}, {"from_sample"}} {
		t.Run(c.name, func(t *testing.T) {
			var cfg string
			if c.name == "from_document" {
				cfg = initDraft(t, bin, nil, "--openapi", filepath.Join("testdata", "openapi", "registry.yaml"), "--base-url", reg.URL)
			} else {
				cfg = initDraft(t, bin, nil, "--sample", reg.URL+"/v2/_catalog?n=50", "--resource", "repositories")
			}
			code, res := probeConfig(t, bin, cfg, nil)
			wantClean(t, code, res)
			runCase(t, airlockFrom(t, cfg, nil), all, truth, "name", "")
			if c.name == "from_document" {
				plantedRegistry(t, bin, cfg)
			}
		})
	}
}
