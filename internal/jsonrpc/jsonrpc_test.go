package jsonrpc

import (
	"errors"
	"testing"
)

// TestRead_OneMessageOrABatchInOnePass: a message (after whitespace) and a
// batch decode into the members the middlewares read; a body that is no
// JSON-RPC is ErrNotJSONRPC, never a guess.
func TestRead_OneMessageOrABatchInOnePass(t *testing.T) {
	t.Parallel()
	one, err := Parse([]byte(" \n\t" + `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_all","arguments":{"resource":"x"},` +
		`"task":{"ttl":90000},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` +
		`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`))
	if err != nil || len(one) != 1 {
		t.Fatalf("one message: %v %d", err, len(one))
	}
	m := one[0]
	caps := m.Params.Meta.ClientCapabilities
	if !m.HasID() || m.IsResponse() || m.Method != "tools/call" || m.Params.Name != "search_all" || string(m.Params.Arguments) != `{"resource":"x"}` ||
		m.Params.Task == nil || *m.Params.Task.TTL != 90000 || m.Params.Meta.ProtocolVersion != "2026-07-28" || caps == nil || caps.Elicitation == nil ||
		caps.Extensions["io.modelcontextprotocol/tasks"] == nil || m.Params.Meta.ClientInfo.Name != "c" {
		t.Fatalf("the message read: %+v", m)
	}
	batch, err := Parse([]byte(`[{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","method":"notifications/initialized"}]`))
	if err != nil || len(batch) != 2 || !batch[0].IsResponse() || batch[1].HasID() {
		t.Fatalf("a batch: %v %+v", err, batch)
	}
	for _, body := range []string{"", "   ", "name=value", `{"id":`, `[{"id":1},`} {
		if _, err := Parse([]byte(body)); !errors.Is(err, ErrNotJSONRPC) {
			t.Errorf("%q: %v, want ErrNotJSONRPC", body, err)
		}
	}
}
