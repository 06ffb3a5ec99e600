package write

import (
	"fmt"

	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Decide judges a write answer of the action as the commit engine would.
func Decide(a *upstream.Action, resp *transport.Response) read.Decision {
	if resp.Status < 200 || resp.Status > 299 {
		return read.Decision{Decision: read.DecideStop, Details: []string{fmt.Sprintf("the upstream answered %d", resp.Status)}}
	}
	if err := CheckBody(resp); err != nil {
		return read.Decision{Decision: read.DecideStop, Details: []string{err.Error()}}
	}
	if vs := CheckContract(a, resp); len(vs) > 0 {
		var details []string
		for _, v := range vs {
			details = append(details, v.Describe()+": "+a.Name+" would stop")
		}
		return read.Decision{Decision: read.DecideStop, Details: details}
	}
	return read.Decision{Decision: read.DecideAccept}
}

// DecideFixture judges a recorded answer of a resource operation: list,
// get, or an action's name.
func DecideFixture(rt *upstream.Runtime, resource, operation string, resp *transport.Response) (read.Decision, error) {
	r, ok := rt.Resources[resource]
	if !ok {
		return read.Decision{}, fmt.Errorf("no resource named %q", resource)
	}
	switch operation {
	case "list":
		return read.DecideList(r, resp), nil
	case "get":
		return read.DecideItem(r, resp), nil
	}
	a, ok := rt.Actions[operation]
	if !ok || a.Resource != r {
		return read.Decision{}, fmt.Errorf("resource %q has no action %q", resource, operation)
	}
	return Decide(a, resp), nil
}
