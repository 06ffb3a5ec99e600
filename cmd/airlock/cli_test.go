package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
)

// commands is every command of airlock.
var commands = []string{"serve", "demo", "init", "probe", "check", "schema", "contract", "approve", "review", "audit", "version"}

// TestExitCodes_WrongCommandLinesAreTwoFailuresOneDoneZero: a command line
// airlock cannot run exits 2 and says why and where the help is, before
// anything is done; a command that ran and failed exits 1; help exits 0.
func TestExitCodes_WrongCommandLinesAreTwoFailuresOneDoneZero(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv(envStore, "")
	t.Setenv("AIRLOCK_HTTP_TOKEN", "")
	cfg := filepath.Join(dir, "airlock.yaml")
	if err := os.WriteFile(cfg, fixtures.DemoConfig("https://api.example.com"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	for _, c := range []struct {
		args   []string
		code   int
		stderr string // a part of stderr; for code 0, of stdout
	}{
		{nil, exitUsage, "Usage: airlock COMMAND"},
		{[]string{"nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"help"}, exitOK, "Usage: airlock COMMAND"},
		{[]string{"--help"}, exitOK, "Usage: airlock COMMAND"},
		{[]string{"help", "audit"}, exitOK, "Usage: airlock audit OPERATION"},
		{[]string{"serve", "--demo", "extra"}, exitUsage, `airlock serve: unexpected argument "extra"`},
		{[]string{"serve", "extra", "--demo"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"serve"}, exitUsage, "needs --config FILE or --demo"},
		{[]string{"serve", "--demo", "--config", cfg}, exitUsage, "use --config or --demo, not both"},
		{[]string{"serve", "--bogus"}, exitUsage, "flag provided but not defined: --bogus"},
		{[]string{"serve", "--demo", "--max-body", "0"}, exitUsage, "must be positive"},
		{[]string{"serve", "--demo", "--scan-memory", "0"}, exitUsage, "--scan-memory must be positive"},
		{[]string{"serve", "--demo", "--max-body", "lots"}, exitUsage, `invalid value "lots" for flag --max-body`},
		{[]string{"serve", "--demo", "--review"}, exitUsage, "--review needs --http"},
		{[]string{"serve", "--demo", "--http", "8765"}, exitUsage, `--http "8765"`},
		{[]string{"serve", "--demo", "--log-level", "loud"}, exitUsage, `--log-level "loud"`},
		{[]string{"serve", "--demo", "--log-format", "xml"}, exitUsage, `--log-format "xml"`},
		{[]string{"serve", "--demo", "--shutdown-grace", "soon"}, exitUsage, `--shutdown-grace "soon"`},
		{[]string{"serve", "--demo", "--shutdown-grace", "-1s"}, exitUsage, `--shutdown-grace "-1s"`},
		{[]string{"serve", "--config", missing}, exitFailure, "read config"},
		{[]string{"serve", "--demo", "--http", "0.0.0.0:0"}, exitFailure, "set AIRLOCK_HTTP_TOKEN"},
		{[]string{"check"}, exitUsage, "needs --config FILE"},
		{[]string{"check", "--config", cfg, "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"check", "--config", missing}, exitFailure, "read config"},
		{[]string{"demo", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"init"}, exitUsage, "needs exactly one of --openapi SPEC or --sample URL"},
		{[]string{"init", "--openapi", missing, "--sample", "http://127.0.0.1:1/x"}, exitUsage, "needs exactly one"},
		{[]string{"init", "--openapi", missing, "--sample-header", "X-Amz-Target: Scan"}, exitUsage, "--sample-header goes with --sample URL"},
		{[]string{"init", "--sample", "http://127.0.0.1:1/x", "--sample-header", "X-Amz-Target"}, exitUsage, `--sample-header "X-Amz-Target": write it NAME: VALUE`},
		{[]string{"init", "--sample", "http://127.0.0.1:1/x", "--credential-sigv4", "dynamodb"}, exitUsage, "--credential-sigv4 is REGION/SERVICE"},
		{[]string{"probe"}, exitUsage, "needs --config FILE"},
		{[]string{"probe", "--config", cfg, "subscriptions"}, exitUsage, `unexpected argument "subscriptions"`},
		{[]string{"contract"}, exitUsage, "needs --config FILE or --demo"},
		{[]string{"contract", "--demo", "--config", cfg}, exitUsage, "not both"},
		{[]string{"approve"}, exitUsage, "needs the id of the selection"},
		{[]string{"approve", "sel_a", "sel_b"}, exitUsage, `unexpected argument "sel_b"`},
		{[]string{"approve", "sel_a", "--export", "xml", "m.xml"}, exitUsage, "the format is csv or json"},
		{[]string{"approve", "sel_a", "--export=csv"}, exitUsage, "--export csv FILE"},
		{[]string{"approve", "sel_a", "--demo", "--config", cfg}, exitUsage, "not both"},
		{[]string{"audit"}, exitUsage, "needs an operation id"},
		{[]string{"audit", "op_a", "--json", "op_b"}, exitUsage, `unexpected argument "op_b"`},
		{[]string{"review", "--listen", "8766"}, exitUsage, `--listen "8766"`},
		{[]string{"review", "--listen", "0.0.0.0:0"}, exitFailure, "AIRLOCK_REVIEW_TOKEN"},
		{[]string{"version", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"audit", "op_a"}, exitFailure, "no airlock store at"},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, strings.NewReader(""), &out, &errb)
		where := errb.String()
		if c.code == exitOK {
			where = out.String()
		}
		if code != c.code || !strings.Contains(where, c.stderr) {
			t.Errorf("airlock %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, c.stderr, out.String(), errb.String())
			continue
		}
		if c.code == exitUsage && len(c.args) > 0 && c.args[0] != "nope" && !strings.Contains(errb.String(), "Run 'airlock "+c.args[0]+" --help' for usage.") {
			t.Errorf("airlock %s: a usage error must say where the help is:\n%s", strings.Join(c.args, " "), errb.String())
		}
	}
	// Nothing was created by any of these command lines: no store, no
	// state directory.
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the command lines left %d entries in %s, want only the configuration", len(entries), dir)
	}
}

// TestHelp_EveryCommandSpellsItsFlagsOneWay: every command has help on
// request (exit 0, standard output), and every flag in every help is
// spelled --name.
func TestHelp_EveryCommandSpellsItsFlagsOneWay(t *testing.T) {
	var overview bytes.Buffer
	if code := run([]string{"help"}, nil, &overview, &overview); code != exitOK {
		t.Fatalf("help: exit %d", code)
	}
	singleDash := regexp.MustCompile(`(^|[\s(\[|])-[a-z][a-z-]+`)
	for _, name := range commands {
		if !strings.Contains(overview.String(), "\n  "+name+" ") {
			t.Errorf("the overview does not list %s", name)
		}
		for _, h := range []string{"--help", "-h"} {
			var out, errb bytes.Buffer
			if code := run([]string{name, h}, nil, &out, &errb); code != exitOK || errb.Len() != 0 {
				t.Errorf("airlock %s %s: exit %d, stderr %q", name, h, code, errb.String())
				continue
			}
			text := out.String()
			if !strings.HasPrefix(text, "Usage: airlock "+name) {
				t.Errorf("airlock %s %s does not start with its usage:\n%s", name, h, text)
			}
			if m := singleDash.FindString(text); m != "" {
				t.Errorf("airlock %s --help spells a flag %q:\n%s", name, strings.TrimSpace(m), text)
			}
			_, flagsPart, _ := strings.Cut(text, "\nFlags:\n")
			for _, line := range strings.Split(strings.TrimRight(flagsPart, "\n"), "\n") {
				if line != "" && !strings.HasPrefix(line, "  --") && !strings.HasPrefix(line, "  -o, --output ") {
					t.Errorf("airlock %s: the flag line %q is not --name", name, line)
				}
			}
		}
	}
	for _, line := range strings.Split(overview.String(), "\n") {
		if m := singleDash.FindString(line); m != "" {
			t.Errorf("the overview spells a flag %q: %s", strings.TrimSpace(m), line)
		}
	}
}

// TestOperatorCommands_NeverCreateAStore: approve, review and audit read
// or decide on the store a server created; pointed at a mistyped path, or
// at the default when no server ever ran, they fail and create nothing.
func TestOperatorCommands_NeverCreateAStore(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv(envStore, "")
	typo := filepath.Join(t.TempDir(), "sub", "airlock.dbb")
	for _, args := range [][]string{
		{"audit", "op_x", "--store", typo},
		{"audit", "op_x"},
		{"approve", "sel_x", "--yes", "sha256:00", "--store", typo},
		{"approve", "sel_x", "--yes", "sha256:00", "--demo"},
		{"review", "--listen", "127.0.0.1:0", "--store", typo},
		{"review", "--listen", "127.0.0.1:0", "--demo"},
	} {
		code, _, errOut := cli(args...)
		if code != exitFailure || !strings.Contains(errOut, "no airlock store at") || !strings.Contains(errOut, "give the --store the server uses") {
			t.Errorf("airlock %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Dir(typo)); !os.IsNotExist(err) {
		t.Errorf("a mistyped --store created %s", filepath.Dir(typo))
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("the default store was created under %s", state)
	}
}

// TestVersion_SaysWhatWasBuiltAndWithWhat: version and --version print the
// same: airlock's version (the one MCP clients are told) and the Go that
// built the binary; --json the same facts.
func TestVersion_SaysWhatWasBuiltAndWithWhat(t *testing.T) {
	code, out, errOut := cli("version")
	if code != exitOK || errOut != "" {
		t.Fatalf("version: exit %d %s", code, errOut)
	}
	if !strings.HasPrefix(out, "airlock "+version+"\n") || !strings.Contains(out, "go:      "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("version:\n%s", out)
	}
	if _, again, _ := cli("--version"); again != out {
		t.Errorf("--version differs from version:\n%s\n%s", again, out)
	}
	_, js, _ := cli("version", "--json")
	var bi buildInfo
	if err := json.Unmarshal([]byte(js), &bi); err != nil || bi.Version != version || bi.Go != runtime.Version() {
		t.Errorf("version --json: %v\n%s", err, js)
	}
}

// TestVersion_NamesTheCommitTheGoCommandStamped: a binary built in a git
// clone carries its commit, its time and whether the tree had uncommitted
// changes; one built elsewhere says the commit is unknown, and how to get
// it.
func TestVersion_NamesTheCommitTheGoCommandStamped(t *testing.T) {
	stamped := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "f703f3d8c1e25b2a"}, {Key: "vcs.time", Value: "2026-12-02T19:18:00Z"}, {Key: "vcs.modified", Value: "true"},
	}})
	if got := stamped.String(); !strings.Contains(got, "commit:  f703f3d8c1e25b2a (2026-12-02T19:18:00Z), with uncommitted changes\n") ||
		!strings.Contains(got, "module:  (devel)\n") || !strings.Contains(got, "go:      go1.26.8 ") {
		t.Errorf("stamped:\n%s", got)
	}
	// Without a commit, the advice must work where the go env itself turns
	// stamping off (GOFLAGS=-buildvcs=false): only -buildvcs=true on the
	// command line overrides it.
	bare := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}})
	if got := bare.String(); !strings.Contains(got, "commit:  unknown") || !strings.Contains(got, "go build -buildvcs=true") || !strings.Contains(got, "GOFLAGS") {
		t.Errorf("without vcs:\n%s", got)
	}
	release := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"}})
	if got := release.String(); !strings.Contains(got, "commit:  not recorded (a build of the module's release v0.1.0") {
		t.Errorf("a module release:\n%s", got)
	}
}

// TestLogFlags_LevelFormatAndFile: serve logs at the level asked, as JSON
// when asked, to the file asked and then not to stderr.
func TestLogFlags_LevelFormatAndFile(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "airlock.log")
	srv := serveProcess(t, nil, "--demo", "--store", filepath.Join(dir, "airlock.db"),
		"--log-level", "debug", "--log-format", "json", "--log-file", logFile)
	addr, stderr := srv.addr(), srv.log
	c := connect(t, "http://"+addr+"/mcp")
	callTool(t, c, "search_all", map[string]any{"resource": "projects", "max_items": 1})
	c.Close()
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	levels := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			Level, Msg string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		levels[rec.Level]++
	}
	if levels["DEBUG"] == 0 || levels["INFO"] == 0 {
		t.Errorf("levels logged: %v", levels)
	}
	if e := string(stderr.Bytes()); strings.Contains(e, "level=") || strings.Contains(e, `"level"`) {
		t.Errorf("with --log-file, records still reach stderr:\n%s", e)
	}
}
