// Package jsonrpc reads the JSON-RPC messages of the MCP transports once,
// into the few members that what stands in front of the MCP server reads:
// the HTTP guards (which tools a request calls), the SSE bridge and the
// stray-answer watch (responses to airlock's own requests), and the task
// service (task methods, and calls that may become tasks). It never
// answers a message.
package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Message is one JSON-RPC message: a request, a notification or a response.
type Message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params Params          `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// Params are the members of a request's params that airlock reads.
type Params struct {
	// Name is the tool a tools/call calls.
	Name string `json:"name"`
	// Arguments are a tools/call's arguments.
	Arguments json.RawMessage `json:"arguments"`
	// TaskID names the task of a tasks/ method.
	TaskID string `json:"taskId"`
	// Task is the task a tools/call asks for (its TTL).
	Task *TaskParams `json:"task"`
	// InputResponses are a client's answers to input requests (a
	// tasks/update, a retried tools/call).
	InputResponses json.RawMessage `json:"inputResponses"`
	// RequestState is the state a retried tools/call echoes.
	RequestState string `json:"requestState"`
	Meta         Meta   `json:"_meta"`
}

// TaskParams are what a client asks of a task.
type TaskParams struct {
	// TTL is the time to keep the task, in milliseconds.
	TTL *int64 `json:"ttl"`
}

// Meta is a request's _meta: from protocol 2026-07-28, what the client
// declares with every request.
type Meta struct {
	ProtocolVersion    string        `json:"io.modelcontextprotocol/protocolVersion"`
	ClientInfo         *ClientInfo   `json:"io.modelcontextprotocol/clientInfo"`
	ClientCapabilities *Capabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	// ProgressToken asks for progress notifications.
	ProgressToken json.RawMessage `json:"progressToken"`
}

// ClientInfo is how a client introduces itself.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Capabilities are what a client declares it can do.
type Capabilities struct {
	Elicitation json.RawMessage            `json:"elicitation"`
	Extensions  map[string]json.RawMessage `json:"extensions"`
}

// HasID reports whether the message carries an id: a request or a
// response, not a notification.
func (m *Message) HasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// IsResponse reports whether the message answers a request (of airlock's).
func (m *Message) IsResponse() bool {
	return m.Method == "" && m.HasID() && (m.Result != nil || m.Error != nil)
}

// ErrNotJSONRPC means a body is not a JSON-RPC message or batch.
var ErrNotJSONRPC = errors.New("not a JSON-RPC message")

// Read decodes one message or a batch from r, in one pass: a body that is
// not one is ErrNotJSONRPC (whatever reads it next says why).
func Read(r io.Reader) ([]Message, error) {
	br := bufio.NewReader(r)
	for {
		b, err := br.Peek(1)
		if err != nil {
			return nil, ErrNotJSONRPC
		}
		if !bytes.ContainsAny(b, " \t\r\n") {
			break
		}
		_, _ = br.ReadByte()
	}
	dec := json.NewDecoder(br)
	if b, _ := br.Peek(1); b[0] == '[' {
		var batch []Message
		if dec.Decode(&batch) != nil {
			return nil, ErrNotJSONRPC
		}
		return batch, nil
	}
	var m Message
	if dec.Decode(&m) != nil {
		return nil, ErrNotJSONRPC
	}
	return []Message{m}, nil
}

// Parse is Read of a message's bytes (a line of the stdio transport).
func Parse(b []byte) ([]Message, error) { return Read(bytes.NewReader(b)) }
