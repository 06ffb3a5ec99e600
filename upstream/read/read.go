package read

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Request builds the request that reads one item by id: a GET of
// get.path, or a POST of get.graphql with the id as $id.
func Request(r *upstream.Resource, id, requestID string) (transport.Request, error) {
	req, err := request(r, id, requestID)
	if err == nil && r.Config.Get != nil {
		req.Header = dialect.OwnHeaders(r.Config.Get.Headers)
	}
	return req, err
}

// request is Request without get.headers.
func request(r *upstream.Resource, id, requestID string) (transport.Request, error) {
	g := r.Config.Get
	if g == nil {
		return transport.Request{}, fmt.Errorf("resource %q has no get endpoint", r.Name)
	}
	if config.PostGet(g) {
		return postRequest(r, id, requestID)
	}
	if g.GraphQL != "" {
		if id == "" {
			return transport.Request{}, fmt.Errorf("%w: it is empty", ErrUnsafeID)
		}
		body, _ := jsonvalue.Encode(map[string]any{"query": g.GraphQL, "variables": map[string]any{"id": r.TypedID(id)}})
		return transport.Request{Method: http.MethodPost, URL: r.Upstream.ResolveURL(nil, g.Path, nil), Body: body, RequestID: requestID, Idempotent: true}, nil
	}
	if err := CheckPathID(id); err != nil {
		return transport.Request{}, err
	}
	u, err := getURL(r, id)
	if err != nil {
		return transport.Request{}, err
	}
	return transport.Request{Method: http.MethodGet, URL: u, RequestID: requestID, Idempotent: true}, nil
}

// Item fetches one item through the resource's get endpoint. found is false
// on 404 (and, for a GraphQL get, on a null item without errors). Errors
// are *HTTPError or bad-response errors.
func Item(ctx context.Context, r *upstream.Resource, id, requestID string) (doc map[string]any, version string, found bool, err error) {
	doc, _, version, found, err = Raw(ctx, r, id, requestID)
	return doc, version, found, err
}

// Raw is Read that also returns the item as the upstream sent it:
// before the fields it encodes are decoded and before any normalization,
// the shape a write that replaces the whole record sends back.
func Raw(ctx context.Context, r *upstream.Resource, id, requestID string) (doc, raw map[string]any, version string, found bool, err error) {
	doc, raw, version, found, err = get(ctx, r, id, requestID)
	return
}

func get(ctx context.Context, r *upstream.Resource, id, requestID string) (doc, raw map[string]any, version string, found bool, err error) {
	g := r.Config.Get
	req, err := Request(r, id, requestID)
	if err != nil {
		return nil, nil, "", false, err
	}
	resp, err := r.Upstream.Do(ctx, req)
	if err != nil {
		if he, ok := err.(*transport.HTTPError); ok && he.Kind == transport.FailStatus && he.Status == http.StatusNotFound {
			return nil, nil, "", false, nil
		}
		return nil, nil, "", false, err
	}
	body, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		return nil, nil, "", false, err
	}
	item, _ := jsonvalue.Get(body, g.Item)
	if config.PostGet(g) {
		m, found, err := postItem(r, body)
		if !found || err != nil {
			return nil, nil, "", false, err
		}
		item = m
	}
	if g.GraphQL != "" && item == nil {
		if msgs := dialect.GraphQLMessages(body); msgs != "" {
			return nil, nil, "", false, &transport.BodyError{Kind: transport.BodyGraphQLErrors, Detail: "the GraphQL answer carries errors and no item", Message: msgs}
		}
		return nil, nil, "", false, nil
	}
	m, ok := item.(map[string]any)
	if !ok {
		return nil, nil, "", false, transport.BadResponse("the item is not a JSON object")
	}
	if missingItem(g, m) {
		return nil, nil, "", false, nil
	}
	raw = upstream.CopyDoc(m)
	if err := r.DecodeFields(m); err != nil {
		return nil, nil, "", false, err
	}
	got, ok := jsonvalue.GetID(m, r.FieldPath(r.Config.IDField))
	if !ok {
		// An envelope ({data: {...}}) read as the item: without its id it
		// would look like a record that moved, and the target be skipped
		// for a reason that is not true.
		return nil, nil, "", false, transport.BadResponse("the answer to GET by id holds no %s at get.item %q: set get.item to where the item is", r.Config.IDField, config.DisplayPath(g.Item))
	}
	if config.PostGet(g) && got != id {
		// A read by POST names its key in a body the configuration
		// writes (a stray range_end makes it a range): the answer's key
		// is the evidence, and another key is not this target.
		return nil, nil, "", false, transport.BadResponse("the read by id answered %s %q for %q", r.Config.IDField, got, id)
	}
	if r.Config.VersionField != "" {
		version, _ = jsonvalue.GetID(m, r.FieldPath(r.Config.VersionField))
	}
	if version == "" {
		version = resp.Header.Get("ETag")
	}
	r.Normalize(m)
	return m, raw, version, true, nil
}

// CheckPathID refuses an id that cannot be written into a URL path as one
// segment: empty, a dot segment (which a server resolves to another path),
// or holding control characters.
func CheckPathID(id string) error {
	switch id {
	case "":
		return fmt.Errorf("%w: it is empty", ErrUnsafeID)
	case ".", "..":
		return fmt.Errorf("%w: %q is a dot segment, which would address another path", ErrUnsafeID, id)
	}
	for _, c := range id {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: it holds a control character", ErrUnsafeID)
		}
	}
	return nil
}

// ErrUnsafeID is wrapped by CheckPathID's errors.
var ErrUnsafeID = errors.New("the id cannot be one URL path segment")

// ItemOf is the item a read by id answered (at get.item; for a read
// by POST, a list of at most one), decoded; nil when the answer holds
// none.
func ItemOf(r *upstream.Resource, body any) map[string]any {
	g := r.Config.Get
	if g == nil {
		return nil
	}
	var m map[string]any
	if config.PostGet(g) {
		m, _, _ = postItem(r, body)
	} else {
		got, _ := jsonvalue.Get(body, g.Item)
		m, _ = got.(map[string]any)
	}
	if m == nil {
		return nil
	}
	d, err := r.DecodeItem(m)
	if err != nil {
		return nil
	}
	return d
}
