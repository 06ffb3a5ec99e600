package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/tools"
)

func listedNames(t *testing.T, h *harness) []string {
	t.Helper()
	list, err := h.client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestModes_ReadOnlyToolListsAndNoActions_OfferWhatTheUserChose: read-only
// lists no tool of the write path, --tools and --exclude-tools choose by
// name, a configuration without an action offers no write tool, and an
// unknown name is refused at start-up.
func TestModes_ReadOnlyToolListsAndNoActions_OfferWhatTheUserChose(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts tools.Options
		want []string
	}{
		{"default", tools.Options{}, []string{"commit_bulk_action", "describe_resources", "get_operation", "get_selection", "preview_selection", "search_all"}},
		{"read_only", tools.Options{ReadOnly: true}, []string{"describe_resources", "get_operation", "get_selection", "search_all"}},
		{"tools", tools.Options{Tools: []string{"search_all", "describe_resources"}}, []string{"describe_resources", "search_all"}},
		{"exclude", tools.Options{ExcludeTools: []string{"describe_resources"}}, []string{"commit_bulk_action", "get_operation", "get_selection", "preview_selection", "search_all"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, withTools(c.opts))
			if got := listedNames(t, h); !slices.Equal(got, c.want) {
				t.Fatalf("listed %v, want %v", got, c.want)
			}
		})
	}
	t.Run("no_actions", func(t *testing.T) {
		h := newHarness(t, withResources(fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectCursor}))
		if got, want := listedNames(t, h), []string{"describe_resources", "get_operation", "get_selection", "search_all"}; !slices.Equal(got, want) {
			t.Fatalf("listed %v, want %v", got, want)
		}
	})
	t.Run("unknown_name", func(t *testing.T) {
		h := newHarness(t)
		if _, err := tools.New(context.Background(), tools.Config{Runtime: h.deps.Runtime, Tools: tools.Options{Tools: []string{"search_everything"}}}); err == nil {
			t.Fatal("an unknown tool name was accepted")
		}
	})
}

// TestModes_ContradictoryOptionsAreRefused: options that would serve less
// than they name are refused with the reason, never applied silently.
func TestModes_ContradictoryOptionsAreRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts tools.Options
		want string
	}{
		{"read_only_names_a_write_tool", tools.Options{ReadOnly: true, Tools: []string{"search_all", "preview_selection"}}, "preview_selection is on the write path"},
		{"offered_and_excluded", tools.Options{Tools: []string{"search_all"}, ExcludeTools: []string{"search_all"}}, "search_all is both offered"},
		{"misspelled", tools.Options{Tools: []string{"search_al"}}, `no tool named "search_al"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.opts.Check()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check() = %v, want an error containing %q", err, c.want)
			}
			h := newHarness(t)
			if _, err := tools.New(context.Background(), tools.Config{Runtime: h.deps.Runtime, Tools: c.opts}); err == nil {
				t.Fatal("the server started")
			}
		})
	}
	t.Run("write_tool_without_actions", func(t *testing.T) {
		h := newHarness(t, withResources(fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectCursor}))
		if err := (tools.Options{Tools: []string{"commit_bulk_action"}}).CheckFor(h.deps.Runtime); err == nil || !strings.Contains(err.Error(), "no action") {
			t.Fatalf("CheckFor() = %v, want a refusal naming the missing actions", err)
		}
	})
}
