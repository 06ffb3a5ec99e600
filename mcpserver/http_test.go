package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/httpserve"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func httpServer(t *testing.T, opts HTTPOptions) *httptest.Server {
	t.Helper()
	h := newHarness(t)
	srv, err := NewServer(h.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(NewHTTPHandler(srv, opts))
	t.Cleanup(hs.Close)
	return hs
}

func initBody() *strings.Reader {
	return strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
}

func post(t *testing.T, url string, hdr map[string]string, host string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, initBody())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestHTTP_RefusesForeignOriginAndRebindingHost(t *testing.T) {
	t.Parallel()
	hs := httpServer(t, HTTPOptions{Options: httpserve.Options{AllowedOrigins: []string{"https://console.example.com"}}})
	cases := []struct {
		name   string
		hdr    map[string]string
		host   string
		status int
	}{
		{"no origin", nil, "", http.StatusOK},
		{"loopback origin", map[string]string{"Origin": "http://localhost:5173"}, "", http.StatusOK},
		{"allowed origin", map[string]string{"Origin": "https://console.example.com"}, "", http.StatusOK},
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"rebinding host", nil, "evil.example:80", http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := post(t, hs.URL+"/mcp", tc.hdr, tc.host); got != tc.status {
				t.Fatalf("status %d, want %d", got, tc.status)
			}
		})
	}
}

func TestHTTP_RequiresBearerTokenWhenConfigured(t *testing.T) {
	t.Parallel()
	hs := httpServer(t, HTTPOptions{Options: httpserve.Options{Token: "s3cret-token"}})
	if got := post(t, hs.URL+"/mcp", nil, ""); got != http.StatusUnauthorized {
		t.Fatalf("without token: %d", got)
	}
	if got := post(t, hs.URL+"/mcp", map[string]string{"Authorization": "Bearer wrong"}, ""); got != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", got)
	}
	if got := post(t, hs.URL+"/mcp", map[string]string{"Authorization": "Bearer s3cret-token"}, ""); got != http.StatusOK {
		t.Fatalf("right token: %d", got)
	}
	// A real client with the token works end to end.
	c, err := client.NewStreamableHttpClient(hs.URL+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer s3cret-token"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callOnce(t, c)
}

func TestSSE_ServesTheSameTools(t *testing.T) {
	t.Parallel()
	hs := httpServer(t, HTTPOptions{})
	c, err := client.NewSSEMCPClient(hs.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callOnce(t, c)
}

func callOnce(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "search_all"
	req.Params.Arguments = map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "max_items": 0}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("unexpected error result: %+v", res.Content)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["complete"] != true {
		t.Fatalf("want a complete count, got %v", sc)
	}
}
