package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/internal/tooltest"
)

// legacyClient is a client of protocol 2025-06-18 speaking streamable HTTP
// by hand, so that a test chooses where each of its requests goes: the
// replica its session lives on, or another (a balancer that does not route
// by Mcp-Session-Id).
type legacyClient struct {
	t       testing.TB
	session string
}

const legacyVersion = "2025-06-18"

// post sends one JSON-RPC message to url; the caller reads and closes the
// answer.
func (c *legacyClient) post(ctx context.Context, url, body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, legacyVersion)
	if c.session != "" {
		req.Header.Set(server.HeaderKeySessionID, c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// initialize opens a session on url, declaring the elicitation capability.
func (c *legacyClient) initialize(url string) {
	c.t.Helper()
	resp := c.post(context.Background(), url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+legacyVersion+
		`","capabilities":{"elicitation":{}},"clientInfo":{"name":"non-sticky","version":"1"}}}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if c.session = resp.Header.Get(server.HeaderKeySessionID); resp.StatusCode != http.StatusOK || c.session == "" {
		c.t.Fatalf("initialize: %d, session %q", resp.StatusCode, c.session)
	}
	resp = c.post(context.Background(), url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
}

// events reads the JSON-RPC messages of an event stream as they come.
func events(body io.Reader) <-chan map[string]any {
	out := make(chan map[string]any)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					out <- m
				}
			}
		}
	}()
	return out
}

// TestStrayAnswer_AnApprovalAnswerOnAnotherReplicaEndsTheCallAtOnce: a
// client of an earlier protocol, behind a balancer that does not route by
// Mcp-Session-Id, commits on the replica that holds its session, which
// asks for approval with elicitation/create; the client's answer reaches
// the other replica. That replica records it in the store the two share
// and says why it cannot take it; the replica that asked notices at its
// next look and ends the call with ELICITATION_ANSWER_MISROUTED, naming
// sticky routing, instead of waiting ten minutes for an answer that cannot
// come. Nothing is written.
func TestStrayAnswer_AnApprovalAnswerOnAnotherReplicaEndsTheCallAtOnce(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := newHarness(t, withClock(clock))
	p := h.call("preview_selection", seedPreview(nil))
	replica := func() string {
		srv, err := NewServer(h.deps, Options{})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(NewHTTPHandler(srv, HTTPOptions{Options: httpserve.Options{Logger: h.deps.Logger}, Store: h.deps.Store, Clock: clock}))
		t.Cleanup(hs.Close)
		return hs.URL + "/mcp"
	}
	asker, other := replica(), replica()
	c := &legacyClient{t: t}
	c.initialize(asker)
	args, _ := json.Marshal(commitArgsFor(p, "execute", nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard, not a measure
	defer cancel()
	resp := c.post(ctx, asker, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"commit_bulk_action","arguments":`+string(args)+`}}`)
	defer resp.Body.Close()
	stream := events(resp.Body)
	ask := <-stream
	if ask["method"] != string(mcp.MethodElicitationCreate) {
		t.Fatalf("the commit did not ask for approval: %v", ask)
	}
	id, _ := json.Marshal(ask["id"])
	answer := c.post(context.Background(), other, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"approve":true,"acknowledge":true}}}`)
	said, _ := io.ReadAll(answer.Body)
	answer.Body.Close()
	if answer.StatusCode != http.StatusNotFound || !strings.Contains(string(said), "Mcp-Session-Id") {
		t.Fatalf("the replica that did not ask answered %d %q", answer.StatusCode, said)
	}
	// The asker looks in the store at its next poll.
	clock.Advance(DefaultStrayPoll)
	var res map[string]any
	select {
	case res = <-stream:
	case <-ctx.Done():
		t.Fatal("the call still waits for an answer that reached another replica")
	}
	raw, _ := json.Marshal(res["result"].(map[string]any)["structuredContent"])
	tooltest.RecordCodes(raw)
	var env envelope.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	pr := env.Problem
	if pr == nil || pr.Code != envelope.ProblemElicitationMisrouted || pr.StateChanged != envelope.StateNone ||
		!strings.Contains(pr.NextAction, "sticky") || !strings.Contains(pr.NextAction, "Mcp-Session-Id") {
		t.Fatalf("the call ended with %s", raw)
	}
	if n := len(h.api.Writes()); n != 0 {
		t.Fatalf("%d writes after an approval that never arrived", n)
	}
}
