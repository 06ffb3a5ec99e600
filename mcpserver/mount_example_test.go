package mcpserver_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/mcpserver"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/tools"
)

// An agent runtime that already serves its own tools mounts airlock's
// beside them, from a configuration, here read-only: the write path is not
// offered.
func ExampleMount() {
	ctx := context.Background()
	api := httptest.NewServer(&fixtures.Server{Token: "demo-token"})
	defer api.Close()
	cfg, err := config.Parse(fixtures.DemoConfig(api.URL))
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "airlock-example")
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "airlock.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()

	srv := server.NewMCPServer("my-runtime", "1.0", server.WithInstructions(tools.Instructions))
	srv.AddTool(mcp.NewTool("hello", mcp.WithDescription("The runtime's own tool.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("hi"), nil
		})
	if _, err := mcpserver.Mount(ctx, srv, cfg, mcpserver.MountOptions{
		Options: tools.Options{ReadOnly: true},
		Store:   store,
		Getenv:  func(string) string { return "demo-token" },
	}); err != nil {
		panic(err)
	}

	c, err := client.NewInProcessClient(srv)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		panic(err)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		panic(err)
	}
	for _, t := range list.Tools {
		fmt.Println(t.Name)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "search_all",
		Arguments: map[string]any{"resource": "projects", "filter": map[string]any{"owner": "no-such-team"}}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text[:16])
	// Output:
	// describe_resources
	// get_operation
	// get_selection
	// hello
	// search_all
	// {"complete":true
}
