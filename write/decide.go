package write

import (
	"fmt"

	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Decide judges a write answer of the action as the commit engine would.
func Decide(a *upstream.Action, resp *transport.Response) upstream.Decision {
	if resp.Status < 200 || resp.Status > 299 {
		return upstream.Decision{Decision: upstream.DecideStop, Details: []string{fmt.Sprintf("the upstream answered %d", resp.Status)}}
	}
	if err := CheckBody(resp); err != nil {
		return upstream.Decision{Decision: upstream.DecideStop, Details: []string{err.Error()}}
	}
	if vs := CheckContract(a, resp); len(vs) > 0 {
		var details []string
		for _, v := range vs {
			details = append(details, v.Describe()+": "+a.Name+" would stop")
		}
		return upstream.Decision{Decision: upstream.DecideStop, Details: details}
	}
	return upstream.Decision{Decision: upstream.DecideAccept}
}

// DecideFixture judges a recorded answer of a resource operation: list,
// get, or an action's name.
func DecideFixture(rt *upstream.Runtime, resource, operation string, resp *transport.Response) (upstream.Decision, error) {
	r, ok := rt.Resources[resource]
	if !ok {
		return upstream.Decision{}, fmt.Errorf("no resource named %q", resource)
	}
	switch operation {
	case "list":
		return r.DecideList(resp), nil
	case "get":
		return r.DecideItem(resp), nil
	}
	a, ok := rt.Actions[operation]
	if !ok || a.Resource != r {
		return upstream.Decision{}, fmt.Errorf("resource %q has no action %q", resource, operation)
	}
	return Decide(a, resp), nil
}
