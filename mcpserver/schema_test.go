package mcpserver

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/tools"
)

// dataSchemas are the tools' data schemas as airlock holds its answers to
// them: exact, and closed where the data is airlock's own.
var dataSchemas = sync.OnceValue(func() map[string]*envelope.Validator {
	out := map[string]*envelope.Validator{}
	d := bareDeps()
	for _, s := range append(d.Specs(), tools.DecideSelection(d)) {
		b, err := json.Marshal(s.Data)
		if err != nil {
			panic(err)
		}
		v, err := envelope.CompileSchema(s.Name+"-data", b)
		if err != nil {
			panic(fmt.Sprintf("%s: data schema does not compile: %v", s.Name, err))
		}
		out[s.Name] = v
	}
	return out
})

// checkData validates the data of a tool's result (an envelope as JSON)
// against the tool's data schema; a result without data passes.
func checkData(tool string, raw []byte) error {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return err
	}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return nil
	}
	v := dataSchemas()[tool]
	if v == nil {
		return fmt.Errorf("no data schema for %q", tool)
	}
	return v.Validate(env.Data)
}
