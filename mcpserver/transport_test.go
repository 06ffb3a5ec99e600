package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
)

// transportMatrix is every way a client reaches airlock: each transport at
// the protocol versions its clients speak ("" is the client's newest:
// 2026-07-28 where the transport carries it).
var transportMatrix = []struct{ transport, protocol string }{
	{"http", ""}, {"http", mcp.ProtocolVersion20251125}, {"http", mcp.ProtocolVersion20250618},
	{"stdio", ""}, {"stdio", mcp.ProtocolVersion20251125}, {"stdio", mcp.ProtocolVersion20250618},
	{"sse", mcp.ProtocolVersion20251125}, {"sse", mcp.ProtocolVersion20250618},
}

func matrixName(transport, protocol string) string {
	if protocol == "" {
		protocol = "newest"
	}
	return transport + "/" + protocol
}

// TestClientApproval_EveryTransportAndProtocol_AsksTheUserOrAnswersAProblem:
// on every transport and protocol version, a commit that needs the user's
// approval asks the user when the client declared elicitation (through the
// input request of 2026-07-28, or the elicitation/create of the protocol in
// use) and runs once approved; a client that did not declare it gets
// CLIENT_APPROVAL_UNAVAILABLE as a problem result, never a JSON-RPC error,
// with nothing written. The server never claims elicitation, a client
// capability, as its own.
func TestClientApproval_EveryTransportAndProtocol_AsksTheUserOrAnswersAProblem(t *testing.T) {
	t.Parallel()
	for _, m := range transportMatrix {
		t.Run(matrixName(m.transport, m.protocol), func(t *testing.T) {
			t.Parallel() // stdio's cases take turns (stdioInUse)
			t.Run("declared", func(t *testing.T) {
				if m.transport == "sse" {
					// mcp-go's SSE client answers no request from the
					// server: see TestSSE_DeclaredElicitation_AsksTheUser.
					t.Skip("covered by TestSSE_DeclaredElicitation_AsksTheUser")
				}
				h := newHarness(t, withTransport(m.transport, m.protocol))
				if m.protocol != "" && h.initialized.ProtocolVersion != m.protocol {
					t.Fatalf("negotiated %q, want %q", h.initialized.ProtocolVersion, m.protocol)
				}
				if h.initialized.Capabilities.Elicitation != nil {
					t.Fatal("the server lists elicitation among its own capabilities")
				}
				p := h.call("preview_selection", seedPreview(nil))
				c := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
				if c.env.Problem != nil {
					t.Fatalf("approved commit: %s", c.raw)
				}
				if n := len(h.answer.asked()); n != 1 {
					t.Fatalf("the user was asked %d times, want once", n)
				}
				op := h.operation(c.data["operation_id"])
				if got, want := counts(op)["succeeded"], int(p.data["counts"].(map[string]any)["members"].(float64)); got != want || h.writesTo() != want {
					t.Fatalf("%d succeeded and %d writes, want %d", got, h.writesTo(), want)
				}
			})
			t.Run("not_declared", func(t *testing.T) {
				h := newHarness(t, withTransport(m.transport, m.protocol), withoutElicitation())
				p := h.call("preview_selection", seedPreview(nil))
				c := h.call("commit_bulk_action", commitArgsFor(p, "execute", nil))
				if problemCode(c) != envelope.ProblemClientApprovalMissing || !c.res.IsError || c.env.Problem.StateChanged != envelope.StateNone {
					t.Fatalf("want CLIENT_APPROVAL_UNAVAILABLE with nothing changed: %s", c.raw)
				}
				if h.writesTo() != 0 || len(h.answer.asked()) != 0 {
					t.Fatalf("%d writes, asked %d times", h.writesTo(), len(h.answer.asked()))
				}
			})
		})
	}
}

// TestSSE_DeclaredElicitation_AsksTheUser: on the SSE transport, at both
// protocol versions that begin with initialize, a client that declared
// elicitation is asked through elicitation/create on its event stream;
// its answer decides the commit: an error answer gets
// CLIENT_APPROVAL_UNAVAILABLE (a result, nothing written), a decline
// APPROVAL_DECLINED, an approval runs the action.
func TestSSE_DeclaredElicitation_AsksTheUser(t *testing.T) {
	t.Parallel()
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618} {
		t.Run(version, func(t *testing.T) {
			h := newHarness(t)
			c := dialSSE(t, h, version)
			p := h.call("preview_selection", seedPreview(nil))
			args := commitArgsFor(p, "execute", nil)

			c.answer = func(map[string]any) (any, *rpcError) { return nil, &rpcError{Code: -32601, Message: "no forms here"} }
			if env := c.callTool("commit_bulk_action", args); env.Problem == nil || env.Problem.Code != envelope.ProblemClientApprovalMissing || env.Problem.StateChanged != envelope.StateNone {
				t.Fatalf("error answer: %+v", env)
			}
			c.answer = func(map[string]any) (any, *rpcError) { return map[string]any{"action": "decline"}, nil }
			if env := c.callTool("commit_bulk_action", args); env.Problem == nil || env.Problem.Code != envelope.ProblemApprovalDeclined {
				t.Fatalf("decline: %+v", env)
			}
			if h.writesTo() != 0 {
				t.Fatalf("%d writes before an approval", h.writesTo())
			}
			var message string
			c.answer = func(params map[string]any) (any, *rpcError) {
				message, _ = params["message"].(string)
				return map[string]any{"action": "accept", "content": map[string]any{"approve": true, "acknowledge": true}}, nil
			}
			env := c.callTool("commit_bulk_action", args)
			if env.Problem != nil || !strings.Contains(message, p.data["digest"].(string)) {
				t.Fatalf("approved: %+v (asked %q)", env, message)
			}
			op := h.operation(env.Data.(map[string]any)["operation_id"])
			if got, want := counts(op)["succeeded"], int(p.data["counts"].(map[string]any)["members"].(float64)); got != want {
				t.Fatalf("%d succeeded, want %d", got, want)
			}
		})
	}
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// sseClient is a client of the SSE transport that, unlike mcp-go's,
// answers the server's requests (elicitation/create) on its stream.
type sseClient struct {
	t      *testing.T
	base   string
	post   string
	events chan map[string]any
	nextID int
	// answer plays the user: the result or error sent back for an
	// elicitation/create with these params.
	answer func(params map[string]any) (any, *rpcError)
}

func dialSSE(t *testing.T, h *harness, version string) *sseClient {
	t.Helper()
	srv, err := NewServer(h.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(NewHTTPHandler(srv, HTTPOptions{}))
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	c := &sseClient{t: t, base: hs.URL, events: make(chan map[string]any, 16)}
	endpoint := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		defer close(c.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if e, ok := strings.CutPrefix(line, "event:"); ok {
				event = strings.TrimSpace(e)
			}
			data, ok := strings.CutPrefix(line, "data:")
			if !ok {
				continue
			}
			if event == "endpoint" {
				endpoint <- strings.TrimSpace(data)
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) == nil {
				c.events <- m
			}
		}
	}()
	select {
	case c.post = <-endpoint:
	case <-time.After(10 * time.Second):
		t.Fatal("no endpoint event")
	}
	init := c.request("initialize", map[string]any{"protocolVersion": version, "clientInfo": map[string]any{"name": "sse-test", "version": "1"},
		"capabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}})
	if got := init["protocolVersion"]; got != version {
		t.Fatalf("negotiated %v, want %s", got, version)
	}
	if caps, _ := init["capabilities"].(map[string]any); caps["elicitation"] != nil {
		t.Fatal("the server lists elicitation among its own capabilities")
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c
}

func (c *sseClient) send(msg map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(msg)
	resp, err := http.Post(c.base+c.post, "application/json", strings.NewReader(string(b)))
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("POST %v: %d", msg["method"], resp.StatusCode)
	}
}

// request sends a request and returns its result, answering the server's
// requests while it waits.
func (c *sseClient) request(method string, params map[string]any) map[string]any {
	c.t.Helper()
	c.nextID++
	id := float64(c.nextID)
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-c.events:
			if !ok {
				c.t.Fatal("the event stream ended")
			}
			if m["method"] == "elicitation/create" {
				p, _ := m["params"].(map[string]any)
				res, rerr := c.answer(p)
				if rerr != nil {
					c.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": rerr})
				} else {
					c.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": res})
				}
				continue
			}
			if m["id"] != id || m["method"] != nil {
				continue // a ping or a notification
			}
			if m["error"] != nil {
				c.t.Fatalf("%s: JSON-RPC error %v", method, m["error"])
			}
			res, _ := m["result"].(map[string]any)
			return res
		case <-timeout:
			c.t.Fatalf("%s: no answer", method)
		}
	}
}

func (c *sseClient) callTool(name string, args map[string]any) *envelope.Envelope {
	c.t.Helper()
	res := c.request("tools/call", map[string]any{"name": name, "arguments": args})
	b, _ := json.Marshal(res["structuredContent"])
	var env envelope.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		c.t.Fatal(err)
	}
	return &env
}

// TestSSE_ProtocolOf2026_DeclinedWithTheVersionsItServes: the SSE transport
// serves the protocols that begin with initialize; a request of the
// stateless protocol gets UnsupportedProtocolVersion listing them (a
// client that can fall back initializes instead), never a header error.
func TestSSE_ProtocolOf2026_DeclinedWithTheVersionsItServes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv, err := NewServer(h.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(NewHTTPHandler(srv, HTTPOptions{}))
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	next := func() string {
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data:"); ok {
				return strings.TrimSpace(data)
			}
		}
		t.Fatalf("the event stream ended: %v", events.Err())
		return ""
	}
	endpoint := next()
	body := `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"probe","version":"1"}}}}`
	post, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+endpoint, strings.NewReader(body))
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	pr, err := http.DefaultClient.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	pr.Body.Close()
	if pr.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %d", pr.StatusCode)
	}
	var got struct {
		ID    int `json:"id"`
		Error struct {
			Code int `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
				Requested string   `json:"requested"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(next()), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != 7 || got.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION || got.Error.Data.Requested != mcp.ProtocolVersion20260728 ||
		!contains(got.Error.Data.Supported, mcp.ProtocolVersion20251125) || contains(got.Error.Data.Supported, mcp.ProtocolVersion20260728) {
		t.Fatalf("answer: %+v", got)
	}
}
