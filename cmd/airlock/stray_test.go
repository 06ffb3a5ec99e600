package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// nonSticky is a client of protocol 2025-06-18 behind a balancer that does
// not route by Mcp-Session-Id: the test sends each request where such a
// balancer might.
type nonSticky struct {
	t       *testing.T
	session string
}

func (c *nonSticky) post(ctx context.Context, url, body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// TestReplicas_AnApprovalAnswerThatReachesAnotherReplicaEndsTheCallAtOnce:
// two replicas on one store; a client of protocol 2025-06-18 whose session
// lives on the first commits there, which asks for approval; the client's
// answer goes to the second (a round-robin balancer without sticky
// sessions). The call on the first ends within moments (well before the
// client's 30 s timeout) with ELICITATION_ANSWER_MISROUTED, which names
// sticky routing by Mcp-Session-Id; nothing is written.
func TestReplicas_AnApprovalAnswerThatReachesAnotherReplicaEndsTheCallAtOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes; skipped with -short")
	}
	eachStore(t, func(t *testing.T, kind storeKind) {
		s := newReplicaSetup(t, kind, nil)
		a, b := s.server(t), s.server(t)
		modern := connect(t, a.url)
		defer modern.Close()
		p := callData(t, modern, "preview_selection", pausePastDueEU)

		c := &nonSticky{t: t}
		init := c.post(context.Background(), a.url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"non-sticky","version":"1"}}}`)
		_, _ = io.Copy(io.Discard, init.Body)
		init.Body.Close()
		if c.session = init.Header.Get("Mcp-Session-Id"); c.session == "" {
			t.Fatalf("initialize: %d, no session", init.StatusCode)
		}
		c.post(context.Background(), a.url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()

		args, _ := json.Marshal(map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": pausePastDueEU["action"], "mode": "execute"})
		// The client's own timeout: a call that hangs fails here.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		call := c.post(ctx, a.url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"commit_bulk_action","arguments":`+string(args)+`}}`)
		defer call.Body.Close()
		sc := bufio.NewScanner(call.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		next := func() map[string]any {
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					var m map[string]any
					if json.Unmarshal([]byte(data), &m) == nil {
						return m
					}
				}
			}
			t.Fatalf("the call's stream ended without an answer (%v): it waited for an approval that reached another replica", sc.Err())
			return nil
		}
		ask := next()
		if ask["method"] != "elicitation/create" {
			t.Fatalf("the commit did not ask for approval: %v", ask)
		}
		id, _ := json.Marshal(ask["id"])
		answer := c.post(context.Background(), b.url, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"approve":true,"acknowledge":true}}}`)
		said, _ := io.ReadAll(answer.Body)
		answer.Body.Close()
		if !strings.Contains(string(said), "Mcp-Session-Id") {
			t.Errorf("the replica that did not ask answered %d %q", answer.StatusCode, said)
		}
		res := next()
		raw, _ := json.Marshal(res["result"])
		if !strings.Contains(string(raw), "ELICITATION_ANSWER_MISROUTED") || !strings.Contains(string(raw), "sticky") {
			t.Fatalf("the call ended with %s", raw)
		}
		if n := len(s.api.Writes()); n != 0 {
			t.Fatalf("%d writes after an approval that never arrived", n)
		}
	})
}
