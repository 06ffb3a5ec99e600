package probe

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// apiSaid quotes what the upstream said about a failure, marked as the
// API's own words ("" when it said nothing airlock can find).
func apiSaid(err error) string {
	var he *transport.HTTPError
	if !errors.As(err, &he) || he.Local {
		return ""
	}
	if msg := transport.UpstreamMessage(he.Header, he.Body); msg != "" {
		return fmt.Sprintf("; the API said: %q", msg)
	}
	return ""
}

// itemRead is what one GET by id showed.
type itemRead struct {
	resp *transport.Response
	err  error
	// budget says the read was never sent: the request budget ran out.
	budget bool
	// item is true when the answer holds, at get.item, an object that
	// carries the id that was asked for.
	item bool
}

// itemCheck reads the item id through get.path and proves that the answer
// holds it: an object at get.item carrying the id. A status alone proves
// nothing: an answer that wraps the item ({data: {...}}) read without
// get.item is the envelope, whose missing id makes every re-read before a
// write look like a record that moved.
func (p *prober) itemCheck(ctx context.Context, id string) itemRead {
	r := p.r
	g := r.Config.Get
	req, err := read.Request(r, id, p.opts.RequestID)
	if err != nil {
		p.add("get.path", Wrong, "reading "+id+" by id: "+err.Error(), "")
		return itemRead{err: err}
	}
	resp, err := p.do(ctx, req)
	what := req.Method + " " + req.URL.Path
	if g.GraphQL != "" {
		what += " (get.graphql)"
	}
	if errors.Is(err, errBudget) {
		p.add("get.path", Unverifiable, what+": the probe's request budget ran out first", "raise --max-requests")
		return itemRead{err: err, budget: true}
	}
	if err != nil {
		p.add("get.path", Wrong, what+": "+describeErr(err), "check get.path: it reads one item by its id")
		return itemRead{err: err}
	}
	if resp.Status != http.StatusOK {
		p.add("get.path", Wrong, fmt.Sprintf("%s answered %d", what, resp.Status), "check get.path: it reads one item by its id")
		return itemRead{resp: resp}
	}
	doc, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		p.add("get.path", Wrong, what+": "+err.Error(), "")
		return itemRead{resp: resp, err: err}
	}
	idPath := r.FieldPath(r.Config.IDField)
	if m := read.ItemOf(r, doc); m != nil {
		if v, ok := jsonvalue.GetID(m, idPath); ok && v == id {
			p.add("get.item", OK, fmt.Sprintf("%s holds the item at %q, with %s %s", what, config.DisplayPath(g.Item), r.Config.IDField, id), "")
			return itemRead{resp: resp, item: true}
		}
	}
	ev := fmt.Sprintf("%s answered 200, but %q holds no item with %s %s; the body's top level holds %s", what, config.DisplayPath(g.Item), r.Config.IDField, id, topKeys(doc))
	hint := "set get.item to where the answer holds the item"
	if v, ok := jsonvalue.GetID(doc, idPath); ok && v == id && g.Item != "" {
		hint = "remove get.item: the body itself is the item"
	} else if at := findItem(doc, idPath, id); at != "" {
		hint = fmt.Sprintf("set get.item: %s (the item with %s %s is there); without it, a re-read before a write reads the envelope, and every target looks moved", at, r.Config.IDField, id)
	}
	p.add("get.item", Wrong, ev, hint)
	return itemRead{resp: resp}
}

// findItem is the path, at most two members deep, of the object that
// carries id at idPath ("" when none does).
func findItem(doc any, idPath, id string) string {
	m, ok := doc.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		inner, ok := m[k].(map[string]any)
		if !ok {
			continue
		}
		if v, ok := jsonvalue.GetID(inner, idPath); ok && v == id {
			return k
		}
		for _, k2 := range slices.Sorted(maps.Keys(inner)) {
			if deeper, ok := inner[k2].(map[string]any); ok {
				if v, ok := jsonvalue.GetID(deeper, idPath); ok && v == id {
					return k + "." + k2
				}
			}
		}
	}
	return ""
}
