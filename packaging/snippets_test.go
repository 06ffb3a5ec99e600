package packaging

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The README's placeholders, which a user replaces and the tests too.
const (
	binPlaceholder    = "/path/to/airlock"
	configPlaceholder = "/path/to/airlock.yaml"
)

// snippetHosts are the hosts the README must give a snippet for.
var snippetHosts = []string{"claude-code", "claude-desktop", "cursor", "vscode"}

// TestReadmeSnippets_EveryHostsCommandStartsAndListsTheTools reads the
// registration snippets from the README (each fenced block after a
// "<!-- host: NAME -->" line), turns each into the command, arguments and
// environment its host would start, with the placeholders replaced, and
// starts it with the official TypeScript SDK client: the demo serves the
// demo, a configuration serves that API with the token from the
// environment the snippet sets, and both list airlock's tools.
func TestReadmeSnippets_EveryHostsCommandStartsAndListsTheTools(t *testing.T) {
	t.Parallel()
	node := requireNode(t)
	blocks := readmeBlocks(t, "host")
	var hosts []string
	for h := range blocks {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	if !slices.Equal(hosts, snippetHosts) {
		t.Fatalf("the README has snippets for %v, want %v", hosts, snippetHosts)
	}
	bin := buildAirlock(t)
	const token = "snippet-token-51c2"

	for _, host := range hosts {
		servers, err := parseSnippet(host, blocks[host])
		if err != nil {
			t.Fatalf("the README's %s snippet: %v", host, err)
		}
		for _, s := range servers {
			t.Run(host+"/"+s.name, func(t *testing.T) {
				t.Parallel()
				l := s.launch
				if l.Command != binPlaceholder {
					t.Fatalf("the snippet starts %q, want the placeholder %q", l.Command, binPlaceholder)
				}
				l.Command = bin
				want := "demo"
				if i := slices.Index(l.Args, configPlaceholder); i >= 0 {
					if len(l.Env) != 1 {
						t.Fatalf("a snippet with a configuration sets %v, want the one variable its token is read from", l.Env)
					}
					for name := range l.Env {
						l.Args[i] = writeAPIConfig(t, name, token)
						l.Env[name] = token
					}
					want = "billing-prod"
				}
				l.Call = searchSubscriptions
				r := runClient(t, node, l, nil)
				if got := r.environment(); got != want {
					t.Errorf("%s %v serves environment %q, want %q", host, s.launch.Args, got, want)
				}
				if !slices.Equal(r.Tools, allTools) {
					t.Errorf("%s %v lists %v, want %v", host, s.launch.Args, r.Tools, allTools)
				}
			})
		}
	}
}

type namedLaunch struct {
	name   string
	launch launch
}

// parseSnippet reads the servers a host's snippet registers, as the host
// would start them.
func parseSnippet(host, block string) ([]namedLaunch, error) {
	if host == "claude-code" {
		var out []namedLaunch
		for line := range strings.SplitSeq(strings.TrimSpace(block), "\n") {
			n, err := parseClaudeMCPAdd(line)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
			out = append(out, n)
		}
		return out, nil
	}
	key := "mcpServers"
	if host == "vscode" {
		key = "servers"
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(block), &doc); err != nil {
		return nil, err
	}
	var servers map[string]struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	if err := json.Unmarshal(doc[key], &servers); err != nil || len(servers) == 0 {
		return nil, fmt.Errorf("no servers under %q (%v)", key, err)
	}
	// VS Code's ${input:ID} must name an input it asks for, as a password.
	var inputs []struct {
		ID       string `json:"id"`
		Password bool   `json:"password"`
	}
	if raw, ok := doc["inputs"]; ok {
		if err := json.Unmarshal(raw, &inputs); err != nil {
			return nil, fmt.Errorf("inputs: %w", err)
		}
	}
	var out []namedLaunch
	for name, s := range servers {
		if host == "vscode" && s.Type != "stdio" {
			return nil, fmt.Errorf("server %s: type %q, want stdio", name, s.Type)
		}
		for k, v := range s.Env {
			if id, ok := strings.CutPrefix(v, "${input:"); ok {
				id = strings.TrimSuffix(id, "}")
				if !slices.ContainsFunc(inputs, func(in struct {
					ID       string `json:"id"`
					Password bool   `json:"password"`
				}) bool {
					return in.ID == id && in.Password
				}) {
					return nil, fmt.Errorf("env %s reads the input %q, which the file does not declare as a password", k, id)
				}
			}
		}
		out = append(out, namedLaunch{name, launch{Command: s.Command, Args: s.Args, Env: s.Env}})
	}
	return out, nil
}

var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// parseClaudeMCPAdd reads "claude mcp add NAME [-e K=V]... -- COMMAND
// ARGS...": the name first, so that -e (which takes several values) cannot
// swallow it.
func parseClaudeMCPAdd(line string) (namedLaunch, error) {
	w := strings.Fields(line)
	if len(w) < 6 || w[0] != "claude" || w[1] != "mcp" || w[2] != "add" || strings.HasPrefix(w[3], "-") {
		return namedLaunch{}, fmt.Errorf("want claude mcp add NAME [-e K=V]... -- COMMAND ARGS")
	}
	n := namedLaunch{name: w[3]}
	rest := w[4:]
	for len(rest) > 1 && rest[0] == "-e" {
		if !envAssignment.MatchString(rest[1]) {
			return n, fmt.Errorf("-e %q is not NAME=VALUE", rest[1])
		}
		if n.launch.Env == nil {
			n.launch.Env = map[string]string{}
		}
		k, v, _ := strings.Cut(rest[1], "=")
		n.launch.Env[k] = v
		rest = rest[2:]
	}
	if len(rest) < 2 || rest[0] != "--" {
		return n, fmt.Errorf("want -- before the command")
	}
	n.launch.Command, n.launch.Args = rest[1], rest[2:]
	return n, nil
}

// readmeBlocks returns the fenced blocks of README.md that follow a line
// "<!-- KIND: NAME -->", by NAME.
func readmeBlocks(t testing.TB, kind string) map[string]string {
	t.Helper()
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	marker := regexp.MustCompile(`^<!-- ` + regexp.QuoteMeta(kind) + `: ([a-z0-9-]+) -->$`)
	blocks := map[string]string{}
	sc := bufio.NewScanner(f)
	name, in := "", false
	var body strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case in && line == "```":
			blocks[name], in, name = body.String(), false, ""
			body.Reset()
		case in:
			body.WriteString(line + "\n")
		case name != "" && strings.HasPrefix(line, "```"):
			in = true
		case name != "":
			t.Fatalf("README: %q must be followed by a fenced block, not %q", "<!-- "+kind+": "+name+" -->", line)
		default:
			if m := marker.FindStringSubmatch(line); m != nil {
				if _, dup := blocks[m[1]]; dup {
					t.Fatalf("README: two blocks for %s %q", kind, m[1])
				}
				name = m[1]
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if name != "" || in {
		t.Fatalf("README: the block for %s %q does not end", kind, name)
	}
	return blocks
}
