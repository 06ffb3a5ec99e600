package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServe_ToolOptionsThatServeLessAreAWrongCommandLine: a misspelled tool
// name, a write tool named with --read-only and a tool both offered and
// excluded exit 2 (a wrong command line) with the reason, and create no
// store: nothing was done.
func TestServe_ToolOptionsThatServeLessAreAWrongCommandLine(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"misspelled", []string{"--tools", "search_al"}, `no tool named "search_al"`},
		{"read_only_with_a_write_tool", []string{"--read-only", "--tools", "search_all,preview_selection"}, "preview_selection is on the write path, which --read-only never offers"},
		{"offered_and_excluded", []string{"--tools", "search_all", "--exclude-tools", "search_all"}, "search_all is both offered (--tools) and excluded (--exclude-tools)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "airlock.db")
			code, _, errOut := cli(append([]string{"serve", "--demo", "--store", store}, c.args...)...)
			if code != exitUsage || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, exitUsage, c.want, errOut)
			}
			if _, err := os.Stat(store); !os.IsNotExist(err) {
				t.Errorf("the refused command created the store %s (%v)", store, err)
			}
		})
	}
}

// TestCheck_ReportsEveryErrorOfADraftAtOnce: a draft's TODOs and its other
// errors (a key written twice, a misspelled key) are reported together,
// each with its line, so that fixing the TODOs reveals nothing new.
func TestCheck_ReportsEveryErrorOfADraftAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.yaml")
	draft := `environment: test
upstreams:
  api:
    base_url: "TODO(the API's base URL)"
resources:
  issues:
    upstream: api
    list: {path: /issues, items: .}
    pagination: {dialect: "TODO(one of cursor, link, offset, page, continue)"}
    id_field: id
    fields:
      id: {type: integer}
      reactions_1: {type: integer}
      reactions_1: {type: integer}
    filters:
      id: {parm: id}
`
	if err := os.WriteFile(path, []byte(draft), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := cli("check", "--config", path)
	if code != exitFailure {
		t.Fatalf("exit %d, want 1:\n%s", code, errOut)
	}
	for _, want := range []string{
		"4 error(s)",
		"line 4: upstreams.api.base_url: unresolved TODO",
		"line 9: resources.issues.pagination.dialect: unresolved TODO",
		`line 14: resources.issues.fields.reactions_1: duplicate key: "reactions_1" is already defined at line 13`,
		`line 16: resources.issues.filters.id.parm: unknown key; did you mean "param"?`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("check does not say %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "unknown dialect") || strings.Contains(errOut, "absolute http") {
		t.Errorf("check reports what a TODO stands in for as a second error:\n%s", errOut)
	}
	// serve and probe refuse the draft with the same list.
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, args := range [][]string{{"serve", "--config", path}, {"probe", "--config", path}} {
		code, _, again := cli(args...)
		if code != exitFailure || again != errOut {
			t.Errorf("%s: exit %d, and not the list check gives:\n%s", args[0], code, again)
		}
	}
}
